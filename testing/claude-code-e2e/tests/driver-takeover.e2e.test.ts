/**
 * Takeover across OS processes with the real Claude Code CLI against aimock
 * (spec 000 "Takeover: detached runs and single-writer safety"). Each server
 * is its own Node process (`src/run-server.ts`) over one SQLite database
 * (`@tanstack/ai-sandbox-sqlite`): runs, leased locks, sandbox instances and
 * the event log. A trial POSTs a run to a fresh server, SIGKILLs that server
 * once the client has read K events (K drawn from a printed seed, from the
 * first event on, so a kill before the agent launched is covered too), and
 * reconnects the client to another server from its last event id; that
 * server's `sandboxRunDriver` takes the run over (`attach: true`). The
 * transcript the client assembled must equal a control run of the same turn
 * chunk for chunk (normalized fingerprints): 0 lost, 0 duplicated, 0 false
 * terminals; one CLI ran (five model requests); the record is `completed`
 * with `driverEpoch` 1; journal, processes and sandbox are gone.
 *
 * `TAKEOVER_TRIALS` (default 10 per provider: 20 kills in CI) and
 * `TAKEOVER_SEED` (replays a printed run) tune it; the 200-kill soak is
 * `pnpm bench` (`testing/bench/src/takeover-soak.ts`).
 */
import { randomInt, randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventType } from '@tanstack/ai'
import type { ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { journalPaths } from '@tanstack/ai-sandbox'
import { pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { createSqliteStores, type SqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { transcriptOf } from '@testing/support/sse-client'
import { claudeBinary, makeClaudeHome, startFakeModel, type FakeModel } from '../src/aimock.js'
import type { ProviderConfig } from '../src/durable-host.js'
import type { RunServerConfig } from '../src/run-server.js'
import { attachRun, cancelThread, killAndTakeOver, normalizedFingerprints, postRun, seededRandom, startRunServer, stopRunServer, tallyTranscript, type RunServer } from '../src/takeover-trial.js'
import { processesMatching, processesWithHome, waitFor } from './helpers/run-claude.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/durable-takeover.json', import.meta.url))
const PROMPT = 'Run the durable job in four steps.'
const TRIALS = Number(process.env.TAKEOVER_TRIALS ?? 10)
const CANCELS = Number(process.env.TAKEOVER_CANCELS ?? 25)
/** The most servers attaching to one run at once. */
const MAX_ATTACHERS = 8
const BASE_SEED = Number(process.env.TAKEOVER_SEED ?? randomInt(2 ** 30))
console.info(`[driver-takeover] base seed ${BASE_SEED}: TAKEOVER_SEED=${BASE_SEED} replays these kill points`)

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const CONTAINER_CLI = '/opt/claude/claude'
const dockerReason = await dockerMissing([IMAGE])

/** Where the runs happen, as every server builds it. */
interface Setting {
  name: string
  provider: ProviderConfig
  /** The model's bind address (Docker reaches the host's bridge address). */
  modelHost: () => Promise<string>
  claude: (model: FakeModel) => { options: ClaudeCodeOptions; home: string; cleanup?: () => void }
  /** Sandboxes of the setting still present. */
  sandboxesLeft: () => Promise<string[]>
  seedOffset: number
  /** Trials where 2 to 8 processes attach to one detached run at once. */
  concurrentTrials: number
  /** Runs cancelled from another process. */
  cancels: number
  /** Trials where the client leaves a live server and reconnects to another. */
  refreshTrials: number
}

function takeoverSuite(setting: Setting): void {
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

  // Trial 0 kills at the first event, RUN_STARTED, which the harness emits before it launches the CLI: the agent may not exist yet.
  // Trial -1 kills right after the last event, RUN_FINISHED: the run's end is in the log, its record probably not settled.
  for (let i = -1; i <= TRIALS; i++) {
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
      const journal = journalPaths(runId).journal
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
      expect(await waitFor(() => processesMatching(journalPaths(runId).journal).length === 0 && processesWithHome(home).length === 0, 15_000), `run #${i} left no process`).toBe(true)
    }
    const sorted = [...stops].sort((a, b) => a - b)
    console.info(`[${setting.name}] ${setting.cancels} cancels from another process: stream ended after the cancel in median ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted.at(-1)} ms (poll ${config.cancelPollMs} ms); 0 orphaned processes or sandboxes`)
  }, 900_000)
}

const localRoot = mkdtempSync(join(tmpdir(), 'driver-takeover-sandboxes-'))
afterAll(() => {
  const left = readdirSync(localRoot)
  rmSync(localRoot, { recursive: true, force: true })
  expect(left, 'every local-process sandbox folder is removed').toEqual([])
})

describe('takeover across processes with the real claude CLI on local-process', () => {
  takeoverSuite({
    name: 'local-process',
    provider: { kind: 'local-process', root: localRoot },
    modelHost: () => Promise.resolve('127.0.0.1'),
    claude: (model) => {
      const home = makeClaudeHome('driver-takeover-home')
      return { options: { executable: claudeBinary(), env: home.env(model.url) }, home: home.dir, cleanup: home.cleanup }
    },
    sandboxesLeft: () => Promise.resolve(readdirSync(localRoot)),
    seedOffset: 0,
    concurrentTrials: 3,
    cancels: CANCELS,
    refreshTrials: 3,
  })
})

const LABELS = { 'tanstack-test.run': `driver-takeover-${randomUUID().slice(0, 8)}` }
describeWithDocker('takeover across processes with the real claude CLI in Docker sandboxes', dockerReason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)
    await pruneDockerSandboxes({ labels: LABELS }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  takeoverSuite({
    name: 'docker',
    provider: { kind: 'docker', image: IMAGE, labels: LABELS, mounts: [{ source: claudeBinary(), target: CONTAINER_CLI, readOnly: true }] },
    modelHost: async () => (await bridgeHostAddress())!,
    claude: (model) => {
      const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
      const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
      return { options: { executable: CONTAINER_CLI, env }, home }
    },
    sandboxesLeft: async () => (await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)).containers,
    seedOffset: 100_000,
    concurrentTrials: 0,
    cancels: CANCELS,
    refreshTrials: 2,
  })
})
