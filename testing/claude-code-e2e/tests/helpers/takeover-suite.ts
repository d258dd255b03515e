/**
 * The takeover trials of the driver-takeover suites, one call per setting
 * (`driver-takeover.e2e.test.ts` on local-process,
 * `driver-takeover.docker.e2e.test.ts` in Docker, two files so that they run
 * side by side). Each server is its own Node process (`src/run-server.ts`)
 * over one SQLite database; see the suites' headers for what a trial proves.
 * Counts come from the environment: `TAKEOVER_TRIALS` (CI 1, soak 10) kills
 * at a seeded point plus one at the first and one after the last event,
 * `TAKEOVER_CONCURRENT` (CI 1, soak 3) trials where 2 to 8 processes attach at
 * once, `TAKEOVER_REFRESHES` (CI 1, soak 3) clients leaving a live server,
 * `TAKEOVER_CANCELS` (CI 2, soak 25) cancels from another process;
 * `TAKEOVER_SEED` replays a printed run.
 */
import { randomInt, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { EventType } from '@tanstack/ai'
import type { ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { journalPaths } from '@tanstack/ai-sandbox'
import { createSqliteStores, type SqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { transcriptOf } from '@testing/support/sse-client'
import { startFakeModel, type FakeModel } from '../../src/aimock.js'
import type { ProviderConfig } from '../../src/durable-host.js'
import type { RunServerConfig } from '../../src/run-server.js'
import { attachRun, cancelThread, killAndTakeOver, normalizedFingerprints, postRun, seededRandom, startRunServer, stopRunServer, tallyTranscript, type RunServer } from '../../src/takeover-trial.js'
import { processesMatching, processesWithHome, waitFor } from './run-claude.js'

const FIXTURE = fileURLToPath(new URL('../../fixtures/durable-takeover.json', import.meta.url))
const PROMPT = 'Run the durable job in four steps.'
/** Seeded kill points per setting (CI 1; `pnpm soak` 10), besides the first-event and after-last-event kills (the chaos suite adds its own). */
const TRIALS = Number(process.env.TAKEOVER_TRIALS ?? 1)
/** Concurrent-attach trials per setting that runs them (CI 1; soak 3). */
export const CONCURRENT = Number(process.env.TAKEOVER_CONCURRENT ?? 1)
/** Refresh trials per setting (CI 1; soak 3). */
export const REFRESHES = Number(process.env.TAKEOVER_REFRESHES ?? 1)
/** Cancels from another process per setting (CI 2; soak 25). */
export const CANCELS = Number(process.env.TAKEOVER_CANCELS ?? 2)
/** The most servers attaching to one run at once. */
const MAX_ATTACHERS = 8
const BASE_SEED = Number(process.env.TAKEOVER_SEED ?? randomInt(2 ** 30))
console.info(`[driver-takeover] base seed ${BASE_SEED}: TAKEOVER_SEED=${BASE_SEED} replays these kill points (TAKEOVER_TRIALS=${TRIALS}, TAKEOVER_CONCURRENT=${CONCURRENT}, TAKEOVER_REFRESHES=${REFRESHES}, TAKEOVER_CANCELS=${CANCELS})`)

/** Where the runs happen, as every server builds it. */
export interface Setting {
  name: string
  provider: ProviderConfig
  /** The model's bind address (Docker reaches the host's bridge address). */
  modelHost: () => Promise<string>
  claude: (model: FakeModel) => { options: ClaudeCodeOptions; home: string; cleanup?: () => void }
  /** Sandboxes of the setting still present. */
  sandboxesLeft: () => Promise<string[]>
  seedOffset: number
  /** Seeded kill points (default `TAKEOVER_TRIALS`), besides the first-event and after-last-event kills. */
  trials?: number
  /** Trials where 2 to 8 processes attach to one detached run at once. */
  concurrentTrials: number
  /** Runs cancelled from another process. */
  cancels: number
  /** Trials where the client leaves a live server and reconnects to another. */
  refreshTrials: number
}

export function takeoverSuite(setting: Setting): void {
  let model: FakeModel
  let dir: string
  let stores: SqliteStores
  let config: RunServerConfig
  let successor: RunServer
  let control: string[]
  let home: string
  const servers: RunServer[] = []
  const cleanups: (() => void)[] = []

  beforeAll(async () => {
    model = await startFakeModel(FIXTURE, { host: await setting.modelHost(), vars: { stepSeconds: '1.5' } })
    dir = mkdtempSync(join(tmpdir(), 'driver-takeover-'))
    const claude = setting.claude(model)
    home = claude.home
    if (claude.cleanup) cleanups.push(claude.cleanup)
    config = { stores: { kind: 'sqlite', path: join(dir, 'runs.db') }, provider: setting.provider, claude: claude.options, prompt: PROMPT, fenceQuietMs: 1000, leaseMs: 3000, cancelPollMs: 500, attachWaitMs: 3000 }
    stores = createSqliteStores({ path: join(dir, 'runs.db') })
    successor = await startRunServer(config)
    servers.push(successor)
    // The control: the same turn, uninterrupted, on the successor.
    const runId = `control-${randomUUID()}`
    const threadId = `thread-${randomUUID()}`
    const events = await postRun(successor, runId, threadId)
    const chunks = transcriptOf(events)
    expect(chunks.at(-1)?.type, `the control run finished:\n${successor.output()}`).toBe(EventType.RUN_FINISHED)
    control = normalizedFingerprints(chunks, { runId, threadId })
    console.info(`[${setting.name}] control run: ${control.length} chunks`)
  }, 180_000)

  afterAll(async () => {
    for (const server of servers) await stopRunServer(server)
    stores?.close()
    await model?.stop()
    for (const cleanup of cleanups) cleanup()
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('answers an attach to a run it never started with 404, at once (second new-user run, L3)', async () => {
    const response = await fetch(`${successor.url}/api/run?runId=${encodeURIComponent(`never-${randomUUID()}`)}`)
    expect(response.status).toBe(404)
    expect(await response.json()).toMatchObject({ error: expect.stringMatching(/^no run never-/) })
  })

  // Trial 0 kills at the first event, RUN_STARTED, which the harness emits before it launches the CLI: the agent may not exist yet.
  // Trial -1 kills right after the last event, RUN_FINISHED: the run's end is in the log, its record probably not settled.
  for (let i = -1; i <= (setting.trials ?? TRIALS); i++) {
    it(`trial ${i}: the server driving the run is SIGKILLed${i === 0 ? ' at its first event' : i === -1 ? ' after its last event' : ''}; another process takes it over; the client transcript equals the control`, async () => {
      const seed = BASE_SEED + setting.seedOffset + i
      const first = await startRunServer(config)
      servers.push(first)
      const runId = `takeover-${randomUUID()}`
      const threadId = `thread-${randomUUID()}`
      const requestsBefore = model.requests().length
      const trial = await killAndTakeOver({ first, successor, runId, threadId, seed, minKill: i === -1 ? control.length : 1, maxKill: i === 0 ? 1 : i === -1 ? control.length : control.length - 4, control })
      console.info(`[${setting.name} #${i}] seed ${seed}: killed after ${trial.killAt} of ${control.length} events; the successor delivered ${trial.after.length} (drives: ${successor.drives().filter((id) => id === runId).length}); lost ${trial.tally.lost}, duplicated ${trial.tally.duplicated}, false terminals ${trial.tally.falseTerminal}`)

      expect(trial.killed, `the first server was killed:\n${first.output()}`).toBe(true)
      expect(trial.tally, `the transcript equals the control (seed ${seed}):\n${successor.output().slice(-4000)}`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
      // After the last event the starting server may have settled the record before it died: then nobody drives.
      expect(successor.drives().filter((id) => id === runId), 'the successor drove the run once').toHaveLength(i === -1 ? successor.drives().filter((id) => id === runId).length : 1)
      expect(await stores.runs.get(runId)).toMatchObject({ status: 'completed', ...(i === -1 ? {} : { driverEpoch: 1 }) })
      expect(model.requests().length - requestsBefore, 'one CLI ran the turn (five model requests)').toBe(5)
      // The journal's file name: its folder is the sandbox's own on local-process (handle.journalDir).
      const journal = `/${posix.basename(journalPaths(runId).journal)}`
      expect(await waitFor(() => processesMatching(journal).length === 0 && processesWithHome(home).length === 0, 15_000), 'no CLI, tool or tail process of the run is left').toBe(true)
      expect(await waitFor(async () => (await setting.sandboxesLeft()).length === 0, 15_000), 'the sandbox is destroyed (destroyOnComplete)').toBe(true)
    }, 180_000)
  }

  for (let i = 1; i <= setting.refreshTrials; i++) {
    it(`refresh trial ${i}: the client leaves a live server and reconnects to another; the live server keeps driving, nothing is doubled`, async () => {
      const seed = BASE_SEED + setting.seedOffset + 3000 + i
      const random = seededRandom(seed)
      const first = await startRunServer(config)
      servers.push(first)
      const runId = `refresh-${randomUUID()}`
      const threadId = `thread-${randomUUID()}`
      const leaveAt = 2 + Math.floor(random() * (control.length - 8))
      // The tab closes: the client hangs up; the server stays up.
      const before = await postRun(first, runId, threadId, (_e, events) => transcriptOf(events).length >= leaveAt)
      const after = await attachRun(successor, runId, before.at(-1)!.id!)
      const tally = tallyTranscript(normalizedFingerprints(transcriptOf(before, after), { runId, threadId }), control)
      console.info(`[${setting.name} refresh #${i}] seed ${seed}: left after ${leaveAt} events; the other server delivered ${after.length}; lost ${tally.lost}, duplicated ${tally.duplicated}, false terminals ${tally.falseTerminal}`)
      expect(tally, `the client sees the run once (seed ${seed}):\n${successor.output().slice(-3000)}`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
      expect(successor.drives().filter((id) => id === runId), 'the other server never drove the live run').toHaveLength(0)
      expect(await stores.runs.get(runId)).toMatchObject({ status: 'completed' })
      expect(await waitFor(async () => (await setting.sandboxesLeft()).length === 0, 15_000), 'the sandbox is destroyed').toBe(true)
      await stopRunServer(first)
    }, 180_000)
  }

  /** Servers beyond the successor, started on demand, for the concurrent attaches. */
  const pool: RunServer[] = []
  async function attachers(n: number): Promise<RunServer[]> {
    while (pool.length < n - 1) {
      const server = await startRunServer(config)
      servers.push(server)
      pool.push(server)
    }
    return [successor, ...pool.slice(0, n - 1)]
  }

  for (let i = 1; i <= setting.concurrentTrials; i++) {
    it(`concurrent trial ${i}: 2 to ${MAX_ATTACHERS} processes attach to one detached run at once; exactly one drives, the rest serve the log, nothing is doubled`, async () => {
      const seed = BASE_SEED + setting.seedOffset + 1000 + i
      const random = seededRandom(seed)
      const n = 2 + Math.floor(random() * (MAX_ATTACHERS - 1))
      const group = await attachers(n)
      const first = await startRunServer(config)
      servers.push(first)
      const runId = `concurrent-${randomUUID()}`
      const threadId = `thread-${randomUUID()}`
      const killAt = 2 + Math.floor(random() * (control.length - 8))
      const before = await postRun(first, runId, threadId, (_e, events) => {
        const seen = transcriptOf(events).length >= killAt
        if (seen) first.child.kill('SIGKILL')
        return seen
      })
      await first.exited
      const lastId = before.at(-1)!.id!
      const afters = await Promise.all(group.map((server) => attachRun(server, runId, lastId)))
      const drivers = group.filter((server) => server.drives().includes(runId)).length
      const tallies = afters.map((after) => tallyTranscript(normalizedFingerprints(transcriptOf(before, after), { runId, threadId }), control))
      console.info(`[${setting.name} concurrent #${i}] seed ${seed}: ${n} processes attached after ${killAt} events; ${drivers} drove; ${tallies.filter((t) => t.equal).length}/${n} transcripts equal the control`)
      expect(drivers, 'exactly one process drives').toBe(1)
      for (const tally of tallies) expect(tally, `every client sees the run once (seed ${seed})`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
      expect(await stores.runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
      expect(await waitFor(async () => (await setting.sandboxesLeft()).length === 0, 15_000), 'the sandbox is destroyed').toBe(true)
    }, 180_000)
  }

  it(`${setting.cancels} runs cancelled from another process stop within about one poll interval; 0 orphaned processes or sandboxes`, async () => {
    const driver = await startRunServer(config)
    servers.push(driver)
    const random = seededRandom(BASE_SEED + setting.seedOffset + 2000)
    const stops: number[] = []
    for (let i = 1; i <= setting.cancels; i++) {
      const runId = `cancel-${randomUUID()}`
      const threadId = `thread-${randomUUID()}`
      // Early in the run (the first reply or the first tool call): later points test nothing new and cost a whole run each.
      const cancelAt = 3 + Math.floor(random() * 18)
      let cancelledAt = 0
      let cancelled: Promise<string | null> | undefined
      const events = await postRun(driver, runId, threadId, (_e, seen) => {
        if (!cancelled && transcriptOf(seen).length >= cancelAt) {
          cancelledAt = Date.now()
          // The cancel lands on ANOTHER process: only the record (band 1) reaches the driver.
          cancelled = cancelThread(successor, threadId)
        }
        return false
      })
      const stoppedMs = Date.now() - cancelledAt
      stops.push(stoppedMs)
      expect(await cancelled, `the cancel route found the active run (#${i})`).toBe(runId)
      const transcript = transcriptOf(events)
      expect(transcript.filter((c) => c.type === EventType.RUN_FINISHED && (c as { finishReason?: string }).finishReason !== 'tool_calls'), `run #${i} did not finish`).toHaveLength(0)
      expect(await waitFor(async () => (await stores.runs.get(runId))?.status === 'aborted', 10_000), `run #${i}'s record is aborted by the process that drove it`).toBe(true)
      expect(await stores.runs.get(runId)).toMatchObject({ cancelRequested: true })
      expect(await waitFor(async () => (await setting.sandboxesLeft()).length === 0, 15_000), `run #${i}'s sandbox is destroyed`).toBe(true)
      expect(await waitFor(() => processesMatching(`/${posix.basename(journalPaths(runId).journal)}`).length === 0 && processesWithHome(home).length === 0, 15_000), `run #${i} left no process`).toBe(true)
    }
    const sorted = [...stops].sort((a, b) => a - b)
    console.info(`[${setting.name}] ${setting.cancels} cancels from another process: stream ended after the cancel in median ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted.at(-1)} ms (poll ${config.cancelPollMs} ms); 0 orphaned processes or sandboxes`)
  }, 900_000)
}

