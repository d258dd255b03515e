/**
 * Recorder: runs the installed native `codex` binary directly (no sandbox, no
 * shell) against aimock with this folder's fixtures, with the argv the
 * adapter builds, and saves its stdout to
 * `packages/ai-codex/tests/fixtures/codex/<cli-version>/<scenario>.ndjson`
 * (and, for a run that fails before its turn, its stderr as `<scenario>.stderr`).
 * A new CLI version adds a folder; an existing recording is never overwritten
 * unless `--force` is given.
 *
 * Usage: `pnpm --filter @testing/codex-e2e record [--force] [scenario ...]`
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildCodexArgs, codexToolBridgeFlags } from '@tanstack/ai-codex'
import { createToolBridgeCore, startHostToolBridge, type BridgeableTool } from '@tanstack/ai-sandbox'
import { codexBinary, codexVersion, FAKE_MODEL, makeCodexHome, startFakeModel } from './aimock.js'

interface Scenario {
  /** Fixture file in `testing/codex-e2e/fixtures/`. */
  fixture: string
  /** One prompt per CLI run; runs after the first resume the first run's thread. */
  prompts: string[]
  /** Recording file name (without `.ndjson`) for each run. */
  outputs: string[]
  /** Files written into the workspace before the run (relative path → content). */
  files?: Record<string, string>
  /** Pass `--trust` (the workspace's `.codex/` is loaded). */
  trust?: boolean
  /** Serve {@link WEATHER_TOOL} over a host tool bridge, as the adapter does with chat() tools. */
  bridge?: boolean
  /** Resume this thread id in the first run (one the CODEX_HOME does not have). */
  resumeId?: string
  /** Extra environment for the CLI. */
  env?: Record<string, string>
  /** The CLI fails before any turn: record its stderr too, as `<output>.stderr`. */
  failsBeforeTurn?: boolean
  /** `--output-schema`: the JSON Schema of a structured-output run (written to a file next to the workspace). */
  outputSchema?: object
}

/** The schema of the structured-output scenarios, as chat() converts it (every property required, no extras). */
const CITY_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, population: { type: 'number' }, landmarks: { type: 'array', items: { type: 'string' } } }, required: ['city', 'population', 'landmarks'], additionalProperties: false }

/** The chat() tool of the `mcp` scenario. */
export const WEATHER_TOOL: BridgeableTool = {
  name: 'get_weather',
  description: 'The weather in a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: ({ city }: { city: string }) => `Sunny in ${city}, 21 °C.`,
}

const SCENARIOS: Record<string, Scenario> = {
  text: { fixture: 'text.json', prompts: ['Say hello'], outputs: ['text'] },
  thinking: { fixture: 'thinking.json', prompts: ['Which option is better?'], outputs: ['thinking'] },
  tools: { fixture: 'tools.json', prompts: ['Create notes.txt with a first draft, then change it to the final draft.'], outputs: ['tools'] },
  resume: { fixture: 'resume.json', prompts: ['Remember the word pelican.', 'What did I ask first?'], outputs: ['resume-first-turn', 'resume'] },
  'api-error': { fixture: 'api-error.json', prompts: ['Trigger a server error'], outputs: ['api-error'] },
  'policy-denied': {
    fixture: 'policy.json',
    prompts: ['Push the branch'],
    outputs: ['policy-denied'],
    files: { '.codex/rules/tanstack-policy.rules': 'prefix_rule(pattern=["git", "push"], decision="forbidden", justification="sandbox policy: commands.deny \\"git push *\\"")\n' },
    trust: true,
  },
  mcp: { fixture: 'mcp.json', prompts: ['Weather in Paris?'], outputs: ['mcp'], bridge: true },
  // RUST_BACKTRACE=1 (common in developer shells, inherited by local-process sandboxes) adds a backtrace to the error.
  'structured-output': { fixture: 'structured-output.json', prompts: ['Describe Lisbon'], outputs: ['structured-output'], outputSchema: CITY_SCHEMA },
  'structured-output-prose': { fixture: 'structured-output.json', prompts: ['Describe Atlantis'], outputs: ['structured-output-prose'], outputSchema: CITY_SCHEMA },
  'resume-unknown': { fixture: 'resume.json', prompts: ['What did I ask first?'], outputs: ['resume-unknown'], resumeId: randomUUID(), env: { RUST_BACKTRACE: '1' }, failsBeforeTurn: true },
}

const here = dirname(fileURLToPath(import.meta.url))
const fixturesDir = join(here, '..', 'fixtures')
const recordingsRoot = join(here, '..', '..', '..', 'packages', 'ai-codex', 'tests', 'fixtures', 'codex')
/** A fixed workspace path, so paths inside recordings stay the same from one recording to the next. */
const workspace = join(tmpdir(), 'codex-record', 'workspace')
const RUN_TIMEOUT_MS = 60_000

/** Run the CLI once; resolves with its stdout and exit code. */
function runCli(args: string[], prompt: string, env: Record<string, string>): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(args[0]!, args.slice(1), { cwd: workspace, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS)
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (exitCode) => {
      clearTimeout(timer)
      resolve({ stdout, stderr, exitCode })
    })
    child.stdin.end(prompt)
  })
}

async function record(name: string, scenario: Scenario, outDir: string, force: boolean): Promise<void> {
  const targets = scenario.outputs.map((output) => join(outDir, `${output}.ndjson`))
  const existing = targets.filter((file) => existsSync(file))
  if (existing.length > 0 && !force) {
    console.log(`${name}: skipped, ${existing.join(', ')} exists (recordings of a version are never edited; pass --force to re-record)`)
    return
  }
  rmSync(dirname(workspace), { recursive: true, force: true })
  mkdirSync(workspace, { recursive: true })
  for (const [path, content] of Object.entries(scenario.files ?? {})) {
    mkdirSync(dirname(join(workspace, path)), { recursive: true })
    writeFileSync(join(workspace, path), content)
  }
  const model = await startFakeModel(join(fixturesDir, scenario.fixture))
  const home = makeCodexHome(model.url, 'codex-record-home')
  const bridge = scenario.bridge ? await startHostToolBridge({ core: createToolBridgeCore({ tools: [WEATHER_TOOL] }) }) : undefined
  const bridgeFlags = bridge ? codexToolBridgeFlags({ url: bridge.url, token: bridge.token }) : undefined
  const outputSchemaFile = scenario.outputSchema ? join(dirname(workspace), 'schema.json') : undefined
  if (outputSchemaFile) writeFileSync(outputSchemaFile, JSON.stringify(scenario.outputSchema))
  try {
    let sessionId: string | undefined = scenario.resumeId
    for (const [i, prompt] of scenario.prompts.entries()) {
      const args = buildCodexArgs({ executable: codexBinary(), model: FAKE_MODEL, bypassSandbox: true, trust: scenario.trust ?? false, config: bridgeFlags?.config ?? [], ...(sessionId ? { sessionId } : {}), ...(outputSchemaFile ? { outputSchemaFile } : {}) })
      const run = await runCli(args, prompt, { ...home.env(), ...bridgeFlags?.env, ...scenario.env })
      if (scenario.failsBeforeTurn) {
        if (run.exitCode === 0 || run.stderr === '') throw new Error(`${name}: run ${i + 1} was expected to fail with a message on stderr (exit ${run.exitCode}).`)
        writeFileSync(targets[i]!.replace(/\.ndjson$/, '.stderr'), run.stderr)
      } else {
        if (!/"type":"turn\.(completed|failed)"/.test(run.stdout)) throw new Error(`${name}: run ${i + 1} did not end its turn (exit ${run.exitCode}).\n${run.stderr}`)
        sessionId ??= (JSON.parse(run.stdout.split('\n')[0]!) as { thread_id: string }).thread_id
      }
      writeFileSync(targets[i]!, run.stdout)
      console.log(`${name}: ${targets[i]} (${run.stdout.split('\n').length - 1} lines, exit ${run.exitCode}, ${model.requests().length} model requests so far)`)
    }
  } finally {
    await bridge?.close()
    await model.stop()
    home.cleanup()
    rmSync(dirname(workspace), { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  const force = argv.includes('--force')
  const names = argv.filter((a) => a !== '--force')
  const unknown = names.filter((n) => !(n in SCENARIOS))
  if (unknown.length > 0) throw new Error(`Unknown scenario ${unknown.join(', ')}; known: ${Object.keys(SCENARIOS).join(', ')}`)
  const outDir = join(recordingsRoot, codexVersion())
  mkdirSync(outDir, { recursive: true })
  for (const name of names.length > 0 ? names : Object.keys(SCENARIOS)) await record(name, SCENARIOS[name]!, outDir, force)
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
})
