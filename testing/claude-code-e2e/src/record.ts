/**
 * Recorder: runs the installed `claude` CLI directly (no sandbox, no shell)
 * against aimock with this folder's fixtures, with the argv the adapter
 * builds, and saves its stdout to
 * `packages/ai-claude-code/tests/fixtures/claude-code/<cli-version>/<scenario>.ndjson`.
 * A new CLI version adds a folder; an existing recording is never overwritten
 * unless `--force` is given. Needs `@tanstack/ai-claude-code` built (dist).
 *
 * Usage: `pnpm exec tsx testing/claude-code-e2e/src/record.ts [--force] [scenario ...]`
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildClaudeArgs } from '@tanstack/ai-claude-code'
import { claudeBinary, claudeVersion, makeClaudeHome, startFakeModel } from './aimock.js'

interface Scenario {
  /** Fixture file in `testing/claude-code-e2e/fixtures/`. */
  fixture: string
  /** One prompt per CLI run; runs after the first resume the first run's session. */
  prompts: string[]
  /** Recording file name (without `.ndjson`) for each run. */
  outputs: string[]
  model?: string
  /** Resume this session id in the first run (one the CLI's HOME does not have). */
  resumeId?: string
  /** `--json-schema`: the JSON Schema of a structured-output run. */
  jsonSchema?: object
}

/** The schemas of the structured-output scenarios, as chat() converts them (every property required, no extras). */
const CITY_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, population: { type: 'number' }, landmarks: { type: 'array', items: { type: 'string' } } }, required: ['city', 'population', 'landmarks'], additionalProperties: false }
const MOONS_SCHEMA = { type: 'object', properties: { planet: { type: 'string' }, moons: { type: 'integer' } }, required: ['planet', 'moons'], additionalProperties: false }

const SCENARIOS: Record<string, Scenario> = {
  text: { fixture: 'text.json', prompts: ['Say hello'], outputs: ['text'] },
  tools: { fixture: 'tools.json', prompts: ['Create notes.txt with a first draft, then change it to the final draft.'], outputs: ['tools'] },
  resume: { fixture: 'resume.json', prompts: ['Remember the word pelican.', 'What did I ask first?'], outputs: ['resume-first-turn', 'resume'] },
  'api-error': { fixture: 'api-error.json', prompts: ['Trigger a server error'], outputs: ['api-error'] },
  thinking: { fixture: 'thinking.json', prompts: ['Which option is better?'], outputs: ['thinking'] },
  'model-rejected': { fixture: 'model-rejected.json', prompts: ['Hello?'], outputs: ['model-rejected'], model: 'claude-nope-1' },
  'resume-unknown': { fixture: 'resume.json', prompts: ['What did I ask first?'], outputs: ['resume-unknown'], resumeId: randomUUID() },
  'resume-unknown-title': { fixture: 'resume.json', prompts: ['What did I ask first?'], outputs: ['resume-unknown-title'], resumeId: 'no-such-session' },
  'structured-output': { fixture: 'structured-output.json', prompts: ['Describe Lisbon'], outputs: ['structured-output'], jsonSchema: CITY_SCHEMA },
  'structured-output-no-call': { fixture: 'structured-output.json', prompts: ['Describe Atlantis'], outputs: ['structured-output-no-call'], jsonSchema: CITY_SCHEMA },
  'structured-output-retries': { fixture: 'structured-output.json', prompts: ['Count the moons of Mars'], outputs: ['structured-output-retries'], jsonSchema: MOONS_SCHEMA },
}

const here = dirname(fileURLToPath(import.meta.url))
const fixturesDir = join(here, '..', 'fixtures')
const recordingsRoot = join(here, '..', '..', '..', 'packages', 'ai-claude-code', 'tests', 'fixtures', 'claude-code')
/** A fixed workspace path, so paths inside recordings stay the same from one recording to the next. */
const workspace = join(tmpdir(), 'claude-code-record', 'workspace')
const RUN_TIMEOUT_MS = 60_000

/** Run the CLI once; resolves with its stdout and exit code. */
function runCli(args: string[], prompt: string, env: Record<string, string>): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(args[0]!, args.slice(1), { cwd: workspace, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
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
  const home = makeClaudeHome('claude-code-record-home')
  const model = await startFakeModel(join(fixturesDir, scenario.fixture))
  try {
    let sessionId: string | undefined = scenario.resumeId
    for (const [i, prompt] of scenario.prompts.entries()) {
      const args = buildClaudeArgs({ executable: claudeBinary(), model: scenario.model ?? 'sonnet', permissionMode: 'bypassPermissions', ...(sessionId ? { sessionId } : {}), ...(scenario.jsonSchema ? { jsonSchema: scenario.jsonSchema } : {}) })
      const env = { ...home.env(model.url), IS_SANDBOX: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' }
      const run = await runCli(args, prompt, env)
      if (!run.stdout.includes('"type":"result"')) throw new Error(`${name}: run ${i + 1} wrote no result line (exit ${run.exitCode}).\n${run.stderr}`)
      sessionId ??= (JSON.parse(run.stdout.split('\n')[0]!) as { session_id: string }).session_id
      writeFileSync(targets[i]!, run.stdout)
      console.log(`${name}: ${targets[i]} (${run.stdout.split('\n').length - 1} lines, exit ${run.exitCode}, ${model.requests().length} model requests so far)`)
    }
  } finally {
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
  const outDir = join(recordingsRoot, claudeVersion())
  mkdirSync(outDir, { recursive: true })
  for (const name of names.length > 0 ? names : Object.keys(SCENARIOS)) await record(name, SCENARIOS[name]!, outDir, force)
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
})
