/**
 * Recorder: runs the installed `opencode` CLI directly (no sandbox, no shell)
 * against aimock with this folder's fixtures, with the argv and environment
 * the adapter builds, and saves its stdout to
 * `packages/ai-opencode/tests/fixtures/opencode/<cli-version>/<scenario>.ndjson`.
 * A new CLI version adds a folder; an existing recording is never overwritten
 * unless `--force` is given. Needs `@tanstack/ai-opencode` built (dist).
 *
 * Usage: `pnpm --filter @testing/opencode-e2e record [--force] [scenario ...]`
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineSandboxPolicy } from '@tanstack/ai-sandbox'
import { buildOpencodeArgs, opencodePermission } from '@tanstack/ai-opencode'
import { FAKE_MODEL, makeOpencodeHome, opencodeBinary, opencodeVersion, providerConfig, startFakeModel } from './aimock.js'

interface Scenario {
  /** Fixture file in `testing/opencode-e2e/fixtures/`. */
  fixture: string
  /** One prompt per CLI run; runs after the first resume the first run's session. */
  prompts: string[]
  /** Recording file name (without `.ndjson`) for each run. */
  outputs: string[]
  /** Deny patterns for `bash` (the policy scenario). */
  deny?: string[]
}

const SCENARIOS: Record<string, Scenario> = {
  text: { fixture: 'text.json', prompts: ['Say hello'], outputs: ['text'] },
  tools: { fixture: 'tools.json', prompts: ['Create notes.txt with a first draft, then read it back.'], outputs: ['tools'] },
  resume: { fixture: 'resume.json', prompts: ['Remember the word pelican.', 'What did I ask first?'], outputs: ['resume-first-turn', 'resume'] },
  'api-error': { fixture: 'api-error.json', prompts: ['Trigger a server error'], outputs: ['api-error'] },
  thinking: { fixture: 'thinking.json', prompts: ['Which option is better?'], outputs: ['thinking'] },
  'policy-denied': { fixture: 'policy.json', prompts: ['Push the branch, then write the status.'], outputs: ['policy-denied'], deny: ['git push *'] },
}

const here = dirname(fileURLToPath(import.meta.url))
const fixturesDir = join(here, '..', 'fixtures')
const recordingsRoot = join(here, '..', '..', '..', 'packages', 'ai-opencode', 'tests', 'fixtures', 'opencode')
/** A fixed workspace path, so paths inside recordings stay the same from one recording to the next. */
const workspace = join(tmpdir(), 'opencode-record', 'workspace')
const RUN_TIMEOUT_MS = 120_000
const QUIET_ENV = { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_SHARE: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' }

/** Run the CLI once with `prompt` on stdin; resolves with its output and exit code. */
function runCli(args: string[], prompt: string, env: Record<string, string>): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
  return new Promise((resolve, reject) => {
    // OpenCode takes its project directory from $PWD (before process.cwd()); a shell would set it, a direct spawn must.
    const child = spawn(args[0]!, args.slice(1), { cwd: workspace, env: { ...process.env, ...env, PWD: workspace }, stdio: ['pipe', 'pipe', 'pipe'] })
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
  const home = makeOpencodeHome('opencode-record-home')
  const model = await startFakeModel(join(fixturesDir, scenario.fixture))
  try {
    let sessionId: string | undefined
    for (const [i, prompt] of scenario.prompts.entries()) {
      const args = buildOpencodeArgs({ executable: opencodeBinary(), model: FAKE_MODEL, title: 'tanstack record', thinking: true, ...(sessionId ? { sessionId } : {}) })
      const permission = opencodePermission(defineSandboxPolicy({ commands: { deny: scenario.deny ?? [] } }))
      const env = { ...home.env(), ...QUIET_ENV, OPENCODE_PERMISSION: JSON.stringify(permission), OPENCODE_CONFIG_CONTENT: JSON.stringify(providerConfig(model.url)) }
      const run = await runCli(args, prompt, env)
      if (!run.stdout.includes('"sessionID"')) throw new Error(`${name}: run ${i + 1} wrote no event (exit ${run.exitCode}).\n${run.stderr}`)
      sessionId ??= (JSON.parse(run.stdout.split('\n')[0]!) as { sessionID: string }).sessionID
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
  const outDir = join(recordingsRoot, opencodeVersion())
  mkdirSync(outDir, { recursive: true })
  for (const name of names.length > 0 ? names : Object.keys(SCENARIOS)) await record(name, SCENARIOS[name]!, outDir, force)
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
})
