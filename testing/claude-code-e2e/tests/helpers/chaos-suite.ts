/**
 * The chaos suite (issue 28): a real Claude Code run (aimock, four tool
 * steps that each write a file) driven by server processes
 * (`src/run-server.ts`) over shared stores, and a host that dies or freezes
 * at the moments the random takeover trials do not reach. One call per
 * setting (`chaos.e2e.test.ts`: local-process + SQLite,
 * `chaos.docker.e2e.test.ts`: Docker + PostgreSQL). Each case checks the
 * client's transcript against a control run chunk for chunk (0 lost, 0
 * duplicated, 0 false terminals), the record, one CLI (five model requests),
 * and that no sandbox (and on local-process no process) of the run is left.
 *
 * - boundary kills, each at an exact point: `bootstrap` (the client's first
 *   event), `mid-tool` (the host dies as it would store the first tool
 *   result), `first-file-changed` (as it would store the first
 *   `file.changed`), `result-line` (as it would store `RUN_FINISHED`, the
 *   CLI exited), `after-run-finished` (the client saw the end);
 * - `pause`: SIGSTOP past the lease, a successor takes over, SIGCONT;
 * - `double-kill`: two processes attach at once and the one that drives is
 *   killed too;
 * - `orphan`: the host dies and no client comes back; sweeps find the run
 *   orphaned, finalize it from the journal and reclaim its sandbox;
 * - `CHAOS_TRIALS` kills at seeded random points (CI 1, `pnpm soak` 20),
 *   `CHAOS_SEED` replays a printed run; `CHAOS_REPEAT` runs every case that
 *   many times (CI 1, `pnpm soak` 10).
 *
 * Every server runs with the documented defaults (lease 10 s, quiet window
 * 5 s, cancel poll 1 s), so the suite also measures the takeover latency a
 * user gets: from the moment the killed host is dead to the first event the
 * client receives that the successor stored. It prints median / p95 / max
 * per setting and, with `CHAOS_LATENCY_FILE`, writes them there as JSON
 * (`pnpm soak` tabulates them).
 */
import { randomInt, randomUUID } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { chat, EventType, type RunRecord, type StreamChunk } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { DEFAULT_CANCEL_POLL_MS, DEFAULT_FENCE_QUIET_MS, defineSandbox, probeRunExit, reapDetachedRuns, sandboxReclaimer, withSandbox, type ReapResult, type RunExitProbe } from '@tanstack/ai-sandbox'
import { DEFAULT_LEASE_MS } from '@tanstack/ai-sandbox-sqlite'
import { writeFileSync } from 'node:fs'
import { isRunAcceptedMarker, transcriptOf, type SseEvent } from '@testing/support/sse-client'
import { fileURLToPath } from 'node:url'
import { startFakeModel, type FakeModel } from '../../src/aimock.js'
import { providerFor, type ProviderConfig } from '../../src/durable-host.js'
import type { ChunkMatch, RunServerConfig } from '../../src/run-server.js'
import { openServerStores, type ServerStores, type StoresConfig } from '../../src/server-stores.js'
import { attachRun, killAndTakeOver, normalizedFingerprints, postRun, startRunServer, stopRunServer, tallyTranscript, type RunServer } from '../../src/takeover-trial.js'
import { waitFor } from './run-claude.js'

const FIXTURE = fileURLToPath(new URL('../../fixtures/durable-chaos.json', import.meta.url))
const PROMPT = 'Run the durable job in four steps.'
/** Kills at seeded random points per setting (CI 1; `pnpm soak` 10). */
export const CHAOS_TRIALS = Number(process.env.CHAOS_TRIALS ?? 1)
/** How many times each named case runs per setting (CI 1; `pnpm soak` 8). */
export const CHAOS_REPEAT = Number(process.env.CHAOS_REPEAT ?? 1)
const BASE_SEED = Number(process.env.CHAOS_SEED ?? randomInt(2 ** 30))
console.info(`[chaos] base seed ${BASE_SEED}: CHAOS_SEED=${BASE_SEED} replays these kill points (CHAOS_TRIALS=${CHAOS_TRIALS}, CHAOS_REPEAT=${CHAOS_REPEAT})`)

/** The named cases. */
export type ChaosCase = 'bootstrap' | 'mid-tool' | 'first-file-changed' | 'result-line' | 'after-run-finished' | 'pause' | 'double-kill' | 'orphan'
export const ALL_CASES: readonly ChaosCase[] = ['bootstrap', 'mid-tool', 'first-file-changed', 'result-line', 'after-run-finished', 'pause', 'double-kill', 'orphan']

/** Where the runs happen. */
export interface ChaosSetting {
  name: string
  stores: StoresConfig
  provider: ProviderConfig
  /** The model's bind address (Docker reaches the host's bridge address). */
  modelHost: () => Promise<string>
  claude: (model: FakeModel) => { options: ClaudeCodeOptions; cleanup?: () => void }
  /** Sandboxes of the setting still present. */
  sandboxesLeft: () => Promise<string[]>
  /** Host processes of a run still running (local-process: its CLI, tools, tail); Docker: none on the host. */
  processesLeft: (runId: string) => number
  /** The named cases this setting runs (CI may run a subset; `pnpm soak` sets `CHAOS_CASES=all`). */
  cases: readonly ChaosCase[]
  /** Seeded random kills in CI, when fewer than `CHAOS_TRIALS` (which `pnpm soak` sets for every setting). */
  randomTrials?: number
  seedOffset: number
}

/** Where a boundary kill happens: the server dies as it would store a matching chunk, or the client kills it after the event it names. */
const BOUNDARIES: Partial<Record<ChaosCase, { dieBeforeAppend: ChunkMatch } | { clientKill: (events: readonly SseEvent[]) => boolean }>> = {
  bootstrap: { clientKill: (events) => transcriptOf(events).length >= 1 },
  'mid-tool': { dieBeforeAppend: { type: EventType.TOOL_CALL_RESULT } },
  'first-file-changed': { dieBeforeAppend: { type: EventType.CUSTOM, name: 'file.changed' } },
  'result-line': { dieBeforeAppend: { type: EventType.RUN_FINISHED } },
  'after-run-finished': { clientKill: (events) => transcriptOf(events).some((chunk) => chunk.type === EventType.RUN_FINISHED && (chunk as { finishReason?: string }).finishReason !== 'tool_calls') },
}

/**
 * The fingerprints a chaos transcript is compared by: `normalizedFingerprints`
 * (the run's own ids numbered), with each live `sandbox.file` event's
 * `timestamp` left out and those events moved to the end, sorted. They come
 * from the sandbox's watcher beside the CLI's stream, so where they fall
 * among its chunks depends on timing, not on the takeover; they still count
 * as a multiset (one lost or doubled is a difference), and the CLI's own
 * chunks keep their order. One more timing effect is folded away: a `change`
 * of a path right after its `create` (a polling watcher that saw the file
 * created empty, then written) counts as the `create` alone; a doubled
 * `create`, or a `change` after a `change`, still shows.
 */
function chaosFingerprints(chunks: readonly StreamChunk[], ids: { runId: string; threadId: string }): string[] {
  const prints = normalizedFingerprints(chunks, ids)
  const isFileEvent = (chunk: StreamChunk): boolean => chunk.type === EventType.CUSTOM && chunk.name === 'sandbox.file'
  const lastType = new Map<string, string>()
  const files = chunks
    .flatMap((chunk, i) => {
      if (!isFileEvent(chunk)) return []
      const { path, type } = (chunk as { value: { path: string; type: string } }).value
      const previous = lastType.get(path)
      lastType.set(path, type === 'change' && previous === 'create' ? 'create-seen' : type)
      return type === 'change' && previous === 'create' ? [] : [prints[i]!.replace(/"timestamp":\d+,?/g, '')]
    })
    .sort()
  return [...prints.filter((_, i) => !isFileEvent(chunks[i]!)), ...files]
}

/** The value at percentile `p` (nearest rank) of `values`. */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/** Register the chaos cases of one setting in the current vitest file. */
export function chaosSuite(setting: ChaosSetting): void {
  let model: FakeModel
  let config: RunServerConfig
  let stores: ServerStores
  let successor: RunServer
  let control: string[]
  let controlIds: { runId: string; threadId: string }
  const servers: RunServer[] = []
  const cleanups: (() => void)[] = []
  const cases = process.env.CHAOS_CASES === 'all' ? ALL_CASES : setting.cases

  const startServer = async (extra: Partial<RunServerConfig> = {}): Promise<RunServer> => {
    const server = await startRunServer({ ...config, ...extra })
    servers.push(server)
    return server
  }

  beforeAll(async () => {
    model = await startFakeModel(FIXTURE, { host: await setting.modelHost(), vars: { stepSeconds: '1.5' } })
    const claude = setting.claude(model)
    if (claude.cleanup) cleanups.push(claude.cleanup)
    // The documented defaults, so the latency measured is what a user gets.
    config = { stores: setting.stores, provider: setting.provider, claude: claude.options, prompt: PROMPT, fenceQuietMs: DEFAULT_FENCE_QUIET_MS, leaseMs: DEFAULT_LEASE_MS, cancelPollMs: DEFAULT_CANCEL_POLL_MS }
    stores = await openServerStores(setting.stores, config.leaseMs)
    successor = await startServer()
    const runId = `control-${randomUUID()}`
    const threadId = `thread-${randomUUID()}`
    const chunks = transcriptOf(await postRun(successor, runId, threadId))
    expect(chunks.at(-1)?.type, `the control run finished:\n${successor.output()}`).toBe(EventType.RUN_FINISHED)
    expect(chunks.filter((chunk) => chunk.type === EventType.CUSTOM && chunk.name === 'file.changed').length, 'the control run reports its four files').toBe(4)
    control = chaosFingerprints(chunks, { runId, threadId })
    controlIds = { runId, threadId }
    console.info(`[chaos ${setting.name}] control run: ${control.length} chunks`)
  }, 180_000)

  afterAll(async () => {
    reportLatency()
    for (const server of servers) {
      server.child.kill('SIGCONT')
      await stopRunServer(server)
    }
    await stores?.close()
    await model?.stop()
    for (const cleanup of cleanups) cleanup()
  }, 60_000)

  /** A run's stored log, as normalized fingerprints (the run-accepted marker left out). */
  async function logOf(ids: { runId: string; threadId: string }): Promise<string[]> {
    const chunks = (await stores.stream({ runId: ids.runId }).snapshot()).map((entry) => entry.chunk).filter((chunk) => !isRunAcceptedMarker(chunk))
    return chaosFingerprints(chunks, ids)
  }

  /** What every case checks once the run is over: the record, one CLI, and nothing of the run left. */
  async function expectClosedOut(runId: string, requestsBefore: number): Promise<void> {
    const record = await stores.runs.get(runId)
    expect(record, 'the record is completed').toMatchObject({ status: 'completed' })
    expect(model.requests().length - requestsBefore, 'one CLI ran the turn (five model requests)').toBe(5)
    expect(await waitFor(() => setting.processesLeft(runId) === 0, 15_000), 'no CLI, tool or tail process of the run is left').toBe(true)
    expect(await waitFor(async () => (await setting.sandboxesLeft()).length === 0, 20_000), 'the sandbox (with its journal) is destroyed').toBe(true)
  }

  /** ms from a killed host's death to the first event its successor stored reaching the client, per kill. */
  const latencies: { kill: string; ms: number }[] = []
  /** When the host is dead: how much of the log it left, and a clock to time the client's first new event against. */
  async function deathOf(runId: string): Promise<{ at: number; stored: number }> {
    const at = performance.now()
    return { at, stored: (await stores.stream({ runId }).snapshot()).length }
  }
  /** Record the latency of one kill from the successor's events and their arrival times. */
  function timeTakeover(kill: string, death: { at: number; stored: number }, after: readonly SseEvent[], times: readonly number[]): void {
    const first = after.findIndex((event) => event.id !== undefined && Number(event.id) >= death.stored)
    if (first >= 0) latencies.push({ kill, ms: Math.round(times[first]! - death.at) })
  }
  function reportLatency(): void {
    if (latencies.length === 0) return
    const ms = latencies.map((entry) => entry.ms)
    const summary = { setting: setting.name, kills: ms.length, medianMs: percentile(ms, 50), p95Ms: percentile(ms, 95), maxMs: Math.max(...ms), latencies }
    console.info(`[chaos ${setting.name}] host death to the first event the successor stored, over ${ms.length} kills (defaults: lease ${DEFAULT_LEASE_MS} ms): median ${summary.medianMs} ms, p95 ${summary.p95Ms} ms, max ${summary.maxMs} ms`)
    if (process.env.CHAOS_LATENCY_FILE) writeFileSync(`${process.env.CHAOS_LATENCY_FILE}.${setting.name}.json`, JSON.stringify(summary) + '\n')
  }

  const clean = { equal: true, lost: 0, duplicated: 0, falseTerminal: 0 }
  const transcriptTally = (before: SseEvent[], after: SseEvent[], ids: { runId: string; threadId: string }) => tallyTranscript(chaosFingerprints(transcriptOf(before, after), ids), control)
  /** The chunks a transcript has that the control lacks, and the other way round (the first few, for a failure message). */
  const differences = (before: SseEvent[], after: SseEvent[], ids: { runId: string; threadId: string }): string => {
    const got = chaosFingerprints(transcriptOf(before, after), ids)
    const count = (list: string[]) => list.reduce((counts, f) => counts.set(f, (counts.get(f) ?? 0) + 1), new Map<string, number>())
    const [have, want] = [count(got), count(control)]
    const extra = [...have].filter(([f, n]) => n > (want.get(f) ?? 0)).map(([f, n]) => `${n - (want.get(f) ?? 0)}x ${f}`)
    const missing = [...want].filter(([f, n]) => n > (have.get(f) ?? 0)).map(([f, n]) => `${n - (have.get(f) ?? 0)}x ${f}`)
    return `extra: ${extra.slice(0, 3).join('\n')}\nmissing: ${missing.slice(0, 3).join('\n')}`
  }

  /** Kill the driving host at a boundary; the client reconnects to the successor. */
  async function boundaryKill(name: ChaosCase): Promise<void> {
    const boundary = BOUNDARIES[name]!
    const first = await startServer('dieBeforeAppend' in boundary ? { dieBeforeAppend: boundary.dieBeforeAppend } : {})
    const ids = { runId: `${name}-${randomUUID()}`, threadId: `thread-${randomUUID()}` }
    const requestsBefore = model.requests().length
    const before = await postRun(first, ids.runId, ids.threadId, (_event, events) => {
      if (!('clientKill' in boundary) || !boundary.clientKill(events)) return false
      first.child.kill('SIGKILL')
      return true
    })
    await first.exited
    const death = await deathOf(ids.runId)
    expect(first.child.signalCode, `the first server was killed at ${name}:\n${first.output()}`).toBe('SIGKILL')
    const times: number[] = []
    const after = await attachRun(successor, ids.runId, before.at(-1)!.id!, () => (times.push(performance.now()), false))
    timeTakeover(name, death, after, times)
    console.info(`[chaos ${setting.name} ${name}] killed after ${transcriptOf(before).length} of ${control.length} events; the successor delivered ${transcriptOf(after).length}`)
    expect(transcriptTally(before, after, ids), `the transcript equals the control (${name}):\n${differences(before, after, ids)}\n${successor.output().slice(-3000)}`).toEqual(clean)
    await expectClosedOut(ids.runId, requestsBefore)
  }

  /** POST a run to `first` and send it `signal` once the client saw the first tool call start (the agent at work); the events read. */
  function postUntilFirstTool(first: RunServer, ids: { runId: string; threadId: string }, signal: 'SIGKILL' | 'SIGSTOP'): Promise<SseEvent[]> {
    return postRun(first, ids.runId, ids.threadId, (_event, events) => {
      const seen = transcriptOf(events).some((chunk) => chunk.type === EventType.TOOL_CALL_START)
      if (seen) first.child.kill(signal)
      return seen
    })
  }

  async function pause(): Promise<void> {
    const first = await startServer()
    const ids = { runId: `pause-${randomUUID()}`, threadId: `thread-${randomUUID()}` }
    const requestsBefore = model.requests().length
    const before = await postUntilFirstTool(first, ids, 'SIGSTOP')
    const attached = attachRun(successor, ids.runId, before.at(-1)!.id!)
    // It wakes once the successor drives, with the CLI still working: it must find its claim gone and touch nothing.
    expect(await waitFor(() => successor.drives().includes(ids.runId), 30_000), `the successor claimed the run:\n${successor.output().slice(-3000)}`).toBe(true)
    first.child.kill('SIGCONT')
    const after = await attached
    expect(transcriptTally(before, after, ids), `the transcript equals the control:\n${successor.output().slice(-3000)}\n--- woken host:\n${first.output().slice(-3000)}`).toEqual(clean)
    await expectClosedOut(ids.runId, requestsBefore)
    expect((await stores.runs.get(ids.runId))?.detachedSince, 'the woken host wrote no detachedSince').toBeUndefined()
    expect(first.output(), 'the woken host stopped no process of the run').not.toMatch(/stopped the processes of run|stopped processes the run left behind/)
    await stopRunServer(first)
  }

  async function doubleKill(): Promise<void> {
    const first = await startServer()
    const pair = [await startServer(), await startServer()]
    const ids = { runId: `double-${randomUUID()}`, threadId: `thread-${randomUUID()}` }
    const requestsBefore = model.requests().length
    const before = await postUntilFirstTool(first, ids, 'SIGKILL')
    await first.exited
    const reads = pair.map((server) => attachRun(server, ids.runId, before.at(-1)!.id!))
    expect(await waitFor(() => pair.some((server) => server.drives().includes(ids.runId)), 30_000), 'one of the two drives').toBe(true)
    const driver = pair.find((server) => server.drives().includes(ids.runId))!
    const bystander = pair.find((server) => server !== driver)!
    driver.child.kill('SIGKILL')
    const after = await reads[pair.indexOf(bystander)]!
    expect(transcriptTally(before, after, ids), `the bystander's client got the whole run:\n${bystander.output().slice(-3000)}`).toEqual(clean)
    expect(bystander.drives(), 'the bystander took the run over').toContain(ids.runId)
    expect(await stores.runs.get(ids.runId)).toMatchObject({ driverEpoch: 2 })
    await expectClosedOut(ids.runId, requestsBefore)
    await stopRunServer(bystander)
  }

  /** The reaper, in the test process: the same sandbox definition, provider and stores as every server. */
  function sweeper() {
    const provider = providerFor(setting.provider)
    const sandbox = defineSandbox({ id: 'durable-e2e', provider, lifecycle: { reuse: 'thread', destroyOnComplete: true } })
    const logger = resolveDebugOption({ logger: { debug: () => {}, info: () => {}, warn: () => {}, error: (m: string) => console.error(`reaper: ${m}`) } })
    const hasFinished = async (record: RunRecord): Promise<RunExitProbe> => {
      const instance = record.sandboxKey === undefined ? null : await stores.instances.get(record.sandboxKey)
      const handle = instance === null ? null : await provider.resume({ id: instance.providerSandboxId })
      return handle === null ? { state: 'unknown' } : probeRunExit({ handle, runId: record.runId })
    }
    const sweep = (detachedRunTtlMs: number): Promise<ReapResult> =>
      reapDetachedRuns({
        runs: stores.runs,
        locks: stores.locks,
        durability: (runId) => stores.stream({ runId }),
        hasFinished,
        drive: ({ runId, threadId, signal }) => {
          const abortController = new AbortController()
          signal.addEventListener('abort', () => abortController.abort(signal.reason), { once: true })
          return chat({
            adapter: claudeCodeText('sonnet', config.claude),
            runId,
            threadId,
            messages: [{ role: 'user', content: PROMPT }],
            middleware: [withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability: { adapter: stores.stream({ runId }), attach: true } })],
            abortController,
          } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
        },
        now: Date.now(),
        detachedRunTtlMs,
        orphanGraceMs: 0,
        fenceQuietMs: config.fenceQuietMs,
        reclaim: sandboxReclaimer({ provider, instances: stores.instances }),
        logger,
      })
    return { sweep, hasFinished }
  }

  async function orphan(): Promise<void> {
    const first = await startServer()
    const ids = { runId: `orphan-${randomUUID()}`, threadId: `thread-${randomUUID()}` }
    const requestsBefore = model.requests().length
    await postUntilFirstTool(first, ids, 'SIGKILL')
    await first.exited
    const left = await stores.runs.get(ids.runId)
    expect(left, 'nobody detached the run').toMatchObject({ status: 'running', sandboxKey: expect.any(String) })
    expect(left?.detachedSince).toBeUndefined()
    const { sweep, hasFinished } = sweeper()
    expect(await waitFor(async () => !(await stores.locks.isHeld(`tanstack-ai-sandbox:run-driver:${ids.runId}`)), 10_000), "the dead host's lease lapsed").toBe(true)
    expect((await sweep(30 * 60_000)).orphans, 'a sweep found the orphan').toEqual([ids.runId])
    expect(await waitFor(async () => (await hasFinished((await stores.runs.get(ids.runId))!)).state === 'finished', 60_000), 'the agent finished on its own').toBe(true)
    const result = await sweep(30 * 60_000)
    expect(result.entries.find((entry) => entry.runId === ids.runId), JSON.stringify(result.entries)).toMatchObject({ outcome: 'finalized', status: 'completed' })
    // The log holds chunks as core stores them, so it is compared with the control run's log.
    expect(tallyTranscript(await logOf(ids), await logOf(controlIds)), 'the log holds the whole run').toEqual(clean)
    await expectClosedOut(ids.runId, requestsBefore)
    expect((await sweep(0)).entries.filter((entry) => entry.runId === ids.runId), 'nothing is left to sweep').toEqual([])
  }

  const runners: Record<ChaosCase, () => Promise<void>> = {
    bootstrap: () => boundaryKill('bootstrap'),
    'mid-tool': () => boundaryKill('mid-tool'),
    'first-file-changed': () => boundaryKill('first-file-changed'),
    'result-line': () => boundaryKill('result-line'),
    'after-run-finished': () => boundaryKill('after-run-finished'),
    pause,
    'double-kill': doubleKill,
    orphan,
  }
  for (let round = 1; round <= CHAOS_REPEAT; round++) {
    for (const name of cases) it(`${name}${CHAOS_REPEAT > 1 ? ` (round ${round})` : ''}`, runners[name], 150_000)
  }

  const randomTrials = process.env.CHAOS_TRIALS !== undefined ? CHAOS_TRIALS : (setting.randomTrials ?? CHAOS_TRIALS)
  for (let i = 1; i <= randomTrials; i++) {
    it(`random kill ${i}: the driving server is SIGKILLed at a seeded point; the successor finishes the run`, async () => {
      const seed = BASE_SEED + setting.seedOffset + i
      const first = await startServer()
      const ids = { runId: `random-${randomUUID()}`, threadId: `thread-${randomUUID()}` }
      const requestsBefore = model.requests().length
      let death = { at: 0, stored: 0 }
      const trial = await killAndTakeOver({ first, successor, ...ids, seed, minKill: 1, maxKill: control.length, control: [], onKilled: async () => void (death = await deathOf(ids.runId)) })
      timeTakeover('random', death, trial.after, trial.afterTimes)
      const tally = transcriptTally(trial.before, trial.after, ids)
      console.info(`[chaos ${setting.name} random ${i}] seed ${seed}: killed after ${trial.killAt} of ${control.length} events; lost ${tally.lost}, duplicated ${tally.duplicated}, false terminals ${tally.falseTerminal}`)
      expect(tally, `the transcript equals the control (CHAOS_SEED=${seed - setting.seedOffset - i} replays it):\n${differences(trial.before, trial.after, ids)}\n${successor.output().slice(-3000)}`).toEqual(clean)
      await expectClosedOut(ids.runId, requestsBefore)
    }, 150_000)
  }
}
