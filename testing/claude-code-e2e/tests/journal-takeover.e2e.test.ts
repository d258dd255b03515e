/**
 * A real Claude Code run survives the SIGKILL of the host that started it
 * (spec 000 "Durable runs"). Host A, a separate Node process, starts a
 * journaled run of the real `claude` CLI against aimock and appends every
 * chunk it delivers to a file-backed event log; the test SIGKILLs it once K
 * chunks are in the log (K drawn at random per repetition, printed). Host B
 * (this process, a new handle on the same sandbox) runs `chat()` with
 * `attach: true`, the same runId, threadId and log: it replays the journal
 * from byte 0 and, through `alignToStoredLog`, must yield exactly the chunks
 * past the log's K, ending with `RUN_FINISHED`.
 *
 * The reference is the journal itself: an observer reader (`readJournalNdjson`
 * with `deleteOnExit: false`, started before B) collects the CLI's events, and
 * Claude Code's translator with the run-scoped id generator turns them into
 * the full run. The final log must equal that re-translation, chunk for chunk
 * by `chunkFingerprint` (timestamps excluded, nothing else), so neither a
 * duplicate nor a gap can pass. Afterwards: the journal files are deleted, the
 * CLI ran once (three model requests), and no process, sandbox folder or
 * container of the run is left. On local-process and on Docker (Debian image).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomInt, randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { chat, EventType, type StreamChunk } from '@tanstack/ai'
import { createClaudeCodeTranslator, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { chunkFingerprint, createRunScopedIdGen, journalExistsCommand, journalPaths, readJournalNdjson, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { bridgeHostAddress, containerExists, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { fileStreamLog, readLogFile } from '@testing/support/file-stream-log'
import { bundleScript, type ScriptBundle } from '@testing/support/script-bundle'
import { claudeBinary, makeClaudeHome, startFakeModel, type FakeModel } from '../src/aimock.js'
import { providerFor, runDurably, type ProviderConfig } from '../src/durable-host.js'
import { processesMatching, processesWithHome, waitFor } from './helpers/run-claude.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/journal-takeover.json', import.meta.url))
const HOST_SCRIPT = fileURLToPath(new URL('../src/journal-host.ts', import.meta.url))
const HOST_TSCONFIG = fileURLToPath(new URL('../src/journal-host.tsconfig.json', import.meta.url))
/** Host A's script bundled from the sources once for this file (`@testing/support/script-bundle`), removed in afterAll. */
let hostBundle: Promise<ScriptBundle> | undefined
const PROMPT = 'Run the journaled job in two steps.'
/** The three replies of the fixture, in order: what the whole run says once, and only once. */
const FULL_TEXT = [
  'Starting the journaled job now; this first reply streams in several small deltas.',
  'Step one is done; starting step two of the journaled job.',
  'Both steps finished. The journaled job is complete, and every part of this answer reached you exactly once.',
].join('')
/** Repetitions per provider, each with its own K. */
const REPEATS = 3
/**
 * K is drawn from this range: from the first chunk after RUN_STARTED (the CLI's
 * first event, so the agent is running) to the last reply, well before the
 * run's end (the full run has about 38 chunks: three streamed replies and two
 * tool calls). K = 1 is left out on purpose: RUN_STARTED is emitted before the
 * CLI is launched, so a host killed there may have started no agent at all,
 * and there is no journal to attach to (the attach then fails with
 * `journal-timeout`, which is right; starting such a run afresh is the run
 * driver's job).
 */
const K_RANGE = [2, 28] as const

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const LABELS = { 'tanstack-test.run': `cc-journal-${randomUUID().slice(0, 8)}` }
/** Where the host's CLI binary appears inside every container. */
const CONTAINER_CLI = '/opt/claude/claude'
const dockerReason = await dockerMissing([IMAGE])

const logDir = mkdtempSync(join(tmpdir(), 'journal-takeover-logs-'))
const localRoot = mkdtempSync(join(tmpdir(), 'journal-takeover-sandboxes-'))
/** Everything a test started, removed in afterEach (also when it failed). */
const started: { hosts: ChildProcess[]; sandboxes: { provider: SandboxProvider; id: string }[]; models: FakeModel[]; cleanups: (() => void)[]; aborts: AbortController[] } = {
  hosts: [],
  sandboxes: [],
  models: [],
  cleanups: [],
  aborts: [],
}
const allHomes: string[] = []

afterEach(async () => {
  for (const host of started.hosts.splice(0)) if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL')
  for (const controller of started.aborts.splice(0)) controller.abort()
  for (const { provider, id } of started.sandboxes.splice(0)) await provider.destroy({ id })
  for (const model of started.models.splice(0)) await model.stop()
  for (const cleanup of started.cleanups.splice(0)) cleanup()
})

afterAll(async () => {
  await hostBundle?.then((bundle) => bundle.dispose())
  const leftLogs = readdirSync(logDir)
  const leftSandboxes = readdirSync(localRoot)
  rmSync(logDir, { recursive: true, force: true })
  rmSync(localRoot, { recursive: true, force: true })
  expect(leftLogs, 'every event log is removed').toEqual([])
  expect(leftSandboxes, 'every local-process sandbox folder is removed').toEqual([])
  const leftProcesses = allHomes.flatMap(processesWithHome)
  for (const pid of leftProcesses) {
    try {
      process.kill(pid, 'SIGKILL') // reported below; killed so that a failure leaks nothing
    } catch {
      // already gone
    }
  }
  expect(leftProcesses, 'no CLI process or tool process is left').toEqual([])
})

/** Where the run happens: the provider (as both hosts build it) and the CLI's options there. */
interface Setting {
  config: ProviderConfig
  claude: (model: FakeModel) => { options: ClaudeCodeOptions; home: string }
  /** Address the fake model listens on. */
  host: string
}

/**
 * Start host A: one separate Node process running `src/journal-host.ts`,
 * bundled with our packages' sources. It prints `<n> <type>`
 * once its n-th chunk is in the log; the line that reaches `killAt` gets it
 * SIGKILLed at once, so the kill lands right after that append.
 */
async function startHostA(input: Record<string, unknown>, killAt: number): Promise<{ child: ChildProcess; output: () => string; exited: Promise<void> }> {
  hostBundle ??= bundleScript(HOST_SCRIPT, HOST_TSCONFIG)
  const child = spawn(process.execPath, ['--enable-source-maps', (await hostBundle).file, JSON.stringify(input)], { stdio: ['ignore', 'pipe', 'pipe'] })
  started.hosts.push(child)
  let output = ''
  child.stdout!.on('data', (data: Buffer) => {
    output += data.toString()
    const counts = [...output.matchAll(/^(\d+) /gm)].map((match) => Number(match[1]))
    if (Math.max(0, ...counts) >= killAt) child.kill('SIGKILL')
  })
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return { child, output: () => output, exited }
}

/**
 * The run as the journal says it went, as chat() delivers it: the CLI's
 * events through Claude Code's translator with the run-scoped ids, up to its
 * terminal chunk, then through chat() itself (a replay adapter), because the
 * log holds chat()'s output (spec-normalized chunks), not the adapter's.
 */
async function retranslate(events: unknown[], runId: string, threadId: string): Promise<StreamChunk[]> {
  const translator = createClaudeCodeTranslator({ runId, threadId, genId: createRunScopedIdGen(runId), model: 'sonnet' })
  const translated: StreamChunk[] = [...translator.start()]
  done: for (const event of events) {
    for (const chunk of translator.push(event)) {
      translated.push(chunk)
      if (chunk.type === EventType.RUN_FINISHED || chunk.type === EventType.RUN_ERROR) break done
    }
  }
  const replay = { kind: 'text', name: 'journal-replay', model: 'sonnet', '~types': undefined, chatStream: async function* () { yield* translated }, structuredOutput: () => Promise.reject(new Error('not used')) }
  const out: StreamChunk[] = []
  for await (const chunk of chat({ adapter: replay, runId, threadId, messages: [{ role: 'user', content: PROMPT }] } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>) out.push(chunk)
  return out
}

const fingerprints = (chunks: readonly StreamChunk[]): string[] => chunks.map(chunkFingerprint)
const textOf = (chunks: readonly StreamChunk[]): string =>
  chunks
    .filter((c) => c.type === EventType.TEXT_MESSAGE_CONTENT)
    .map((c) => (c as { delta: string }).delta)
    .join('')

/** Whether `promise` settles within `ms` (a hang guard, not a timing claim). */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
  try {
    return await Promise.race([promise.then(() => true), late])
  } finally {
    clearTimeout(timer)
  }
}

/** A process as `ps` shows it, for a failure message. */
function describeProcess(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}`
  } catch {
    return `${pid} (gone)`
  }
}

/** Whether either journal file of the run still exists in the sandbox. */
async function journalLeft(handle: SandboxHandle, runId: string): Promise<boolean> {
  const paths = journalPaths(runId, handle.journalDir)
  const journal = await handle.process.exec(journalExistsCommand(paths))
  const stderr = await handle.process.exec(`test -e '${paths.stderr}'`)
  return journal.exitCode === 0 || stderr.exitCode === 0
}

/**
 * One takeover: A starts the run and is SIGKILLed after K chunks; B attaches
 * and finishes it. Returns what the caller checks per provider.
 */
async function takeover(setting: Setting, label: string): Promise<{ handle: SandboxHandle; runId: string; home: string }> {
  const model = await startFakeModel(FIXTURE, { host: setting.host })
  started.models.push(model)
  const { options: claude, home } = setting.claude(model)
  allHomes.push(home)
  const provider = providerFor(setting.config)
  const created = await provider.create({ labels: setting.config.kind === 'docker' ? setting.config.labels : {} })
  started.sandboxes.push({ provider, id: created.id })

  const runId = `journal-takeover-${randomUUID()}`
  const threadId = `thread-${randomUUID().slice(0, 8)}`
  const logFile = join(logDir, `${runId}.log`)
  started.cleanups.push(() => rmSync(logFile, { force: true }))
  const target = randomInt(K_RANGE[0], K_RANGE[1] + 1)

  // Host A: starts the run, delivers (appends) chunks, and dies without a word.
  const hostA = await startHostA({ provider: setting.config, sandboxId: created.id, logFile, runId, threadId, prompt: PROMPT, claude }, target)
  const exitedInTime = await within(hostA.exited, 45_000)
  expect(exitedInTime, `host A delivered ${target} chunks in time: ${hostA.output()}`).toBe(true)
  expect(hostA.child.signalCode, `host A was killed, it did not exit by itself: ${hostA.output()}`).toBe('SIGKILL')
  const stored = (await readLogFile(logFile)).chunks
  const k = stored.length
  console.info(`[${label}] K target ${target}, host A SIGKILLed with ${k} chunk(s) in the log (last: ${stored.at(-1)?.type})`)
  expect(
    stored.some((c) => c.type === EventType.RUN_FINISHED || c.type === EventType.RUN_ERROR),
    'A was killed mid-run',
  ).toBe(false)

  // Host B: a new handle on the same sandbox (found by id), and an observer that keeps its own copy of the journal's events.
  const handle = await provider.resume({ id: created.id })
  expect(handle, 'the sandbox outlives host A').not.toBeNull()
  const observer = new AbortController()
  started.aborts.push(observer)
  const events: unknown[] = []
  const observed = (async () => {
    for await (const event of readJournalNdjson(handle!, { journal: { runId }, deleteOnExit: false, signal: observer.signal })) events.push(event)
  })()
  // Awaited below; if an assertion fails first, its rejection must not surface as an unhandled one.
  observed.catch(() => undefined)
  // Its tail runs before B starts, so B's deletion of the journal cannot hide anything from it.
  expect(await waitFor(() => events.length > 0, 15_000), 'the observer reads the journal').toBe(true)

  const delivered = await runDurably({ handle: handle!, log: fileStreamLog(logFile), runId, threadId, prompt: PROMPT, claude, attach: true })
  expect(await within(observed, 15_000), 'the observer read up to the sentinel').toBe(true)
  observer.abort()
  await observed

  const reference = await retranslate(events, runId, threadId)
  const final = (await readLogFile(logFile)).chunks
  console.info(`[${label}] B delivered ${delivered.length} chunk(s); the full run has ${reference.length}`)
  expect(reference.at(-1)?.type, 'the journal holds a finished run').toBe(EventType.RUN_FINISHED)
  expect(reference.length, 'the run is longer than any K').toBeGreaterThan(K_RANGE[1] + 2)
  // The prefix the dead host delivered is exactly the start of the run ...
  expect(fingerprints(stored), 'the log prefix matches the re-translation').toEqual(fingerprints(reference.slice(0, k)))
  // ... and B delivered exactly the rest: no duplicate, no gap.
  expect(fingerprints(delivered), 'B yields exactly the chunks past K').toEqual(fingerprints(reference.slice(k)))
  expect(fingerprints(final), 'the final log is the whole run, once').toEqual(fingerprints(reference))
  expect(delivered.at(-1)?.type).toBe(EventType.RUN_FINISHED)
  expect(final.filter((c) => c.type === EventType.RUN_FINISHED)).toHaveLength(1)
  expect(final.filter((c) => c.type === EventType.RUN_STARTED)).toHaveLength(1)
  expect(textOf(final)).toBe(FULL_TEXT)
  expect(model.requests(), 'one CLI ran the run: B started no second agent').toHaveLength(3)

  // The run's own reader (B's) deleted the journal; the run left no process behind.
  expect(await waitFor(async () => !(await journalLeft(handle!, runId)), 10_000), 'both journal files are deleted').toBe(true)
  const journalFile = journalPaths(runId, handle!.journalDir).journal
  const runProcesses = () => [...processesWithHome(home), ...processesMatching(journalFile)]
  await waitFor(() => runProcesses().length === 0, 10_000)
  expect(runProcesses().map(describeProcess), 'no CLI, tool or tail process of the run is left').toEqual([])
  return { handle: handle!, runId, home }
}

describe('journal takeover with the real claude CLI on local-process', () => {
  const executable = claudeBinary()
  const setting: Setting = {
    config: { kind: 'local-process', root: localRoot },
    host: '127.0.0.1',
    claude: (model) => {
      const home = makeClaudeHome('journal-takeover-home')
      started.cleanups.push(home.cleanup)
      return { options: { executable, env: home.env(model.url) }, home: home.dir }
    },
  }

  for (let i = 1; i <= REPEATS; i++) {
    it(`host A is SIGKILLed mid-run; host B attaches and yields exactly the rest (repetition ${i})`, async () => {
      const { handle } = await takeover(setting, `local-process #${i}`)
      const folder = join(localRoot, handle.id)
      await started.sandboxes.splice(0).reduce((p, { provider, id }) => p.then(() => provider.destroy({ id })), Promise.resolve())
      expect(existsSync(folder), 'the sandbox folder is removed').toBe(false)
    })
  }
})

describeWithDocker('journal takeover with the real claude CLI in a Docker sandbox', dockerReason, () => {
  let bridgeHost = ''
  const setting: Setting = {
    config: { kind: 'docker', image: IMAGE, labels: LABELS, mounts: [{ source: claudeBinary(), target: CONTAINER_CLI, readOnly: true }] },
    get host() {
      return bridgeHost
    },
    claude: (model) => {
      const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
      const env = {
        HOME: home,
        CLAUDE_CONFIG_DIR: `${home}/.claude`,
        ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`,
        ANTHROPIC_API_KEY: 'test-key-not-a-secret',
        CLAUDE_CODE_MAX_RETRIES: '0',
      }
      return { options: { executable: CONTAINER_CLI, env }, home }
    },
  }

  afterAll(async () => {
    const label = `tanstack-test.run=${LABELS['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: LABELS }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  for (let i = 1; i <= REPEATS; i++) {
    it(`host A is SIGKILLed mid-run; the container keeps the agent; host B attaches and yields exactly the rest (repetition ${i})`, async () => {
      bridgeHost ||= (await bridgeHostAddress())!
      const { handle } = await takeover(setting, `docker #${i}`)
      await started.sandboxes.splice(0).reduce((p, { provider, id }) => p.then(() => provider.destroy({ id })), Promise.resolve())
      expect(await containerExists(handle.id), 'the container is removed').toBe(false)
    })
  }
})
