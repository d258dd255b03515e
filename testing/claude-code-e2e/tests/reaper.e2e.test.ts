/**
 * The reaper over abandoned runs of the real Claude Code CLI against aimock
 * (spec 000 "The reaper ships as a function, not a scheduler", "Cleanup").
 * Durable runs start through `withSandbox` over the SQLite stores and are
 * left at seeded points (printed; `REAPER_SEED` replays them): the client
 * hangs up and the host stops its run (a detach, as a serverless host whose
 * request ended does); nobody attaches again. Three groups: "stale" runs
 * (a long tool step, detached first), "finished" runs (a short turn that ends
 * in the sandbox while detached) and "producing" runs (the long step,
 * detached later). One sweep (`hasFinished` over `probeRunExit`,
 * `sandboxReclaimer`, a TTL that only the stale group has outlived) must
 * finalize every finished run with its complete transcript (the log equals
 * a control run of the same turn, chunk for chunk by normalized
 * fingerprints), expire the stale runs, leave the producing ones exactly as
 * they were, and reclaim what it closed; a second sweep has nothing to do; a
 * sweep with TTL 0 expires the rest; then no sandbox folder, container,
 * journal, CLI process or instance record is left, and one more sweep finds no
 * run. Local-process, and Docker (Debian image) when an engine is there.
 */
import { randomInt, randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FixtureFileEntry } from '@copilotkit/aimock'
import { chat, EventType, toServerSentEventsResponse, type RunRecord, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, probeRunExit, reapDetachedRuns, sandboxReclaimer, withSandbox, type ReapResult, type ReapRunOutcome, type RunExitProbe, type SandboxDefinition, type SandboxProvider } from '@tanstack/ai-sandbox'
import { pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { createSqliteStores, type SqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { isRunAcceptedMarker, readSseEvents, transcriptOf } from '@testing/support/sse-client'
import { claudeBinary, makeClaudeHome, startFakeModel, type FakeModel } from '../src/aimock.js'
import { providerFor, type ProviderConfig } from '../src/durable-host.js'
import { normalizedFingerprints, seededRandom, tallyTranscript } from '../src/takeover-trial.js'
import { processesMatching, processesWithHome, waitFor } from './helpers/run-claude.js'

const TAKEOVER_FIXTURE = fileURLToPath(new URL('../fixtures/durable-takeover.json', import.meta.url))
const FAST_PROMPT = 'Run the durable job in four steps.'
const SLOW_PROMPT = 'Run the slow job in one long step.'
/** The slow job: one Bash step far longer than the suite (with a tool timeout above it), then a closing reply. */
const SLOW_FIXTURES: FixtureFileEntry[] = [
  { match: { toolCallId: 'toolu_reaper_slow_1' }, response: { content: 'The slow job is complete.' } },
  {
    match: { userMessage: 'Run the slow job', hasToolResult: false },
    response: { content: 'Starting the slow job; its only step takes a long while, so nobody should wait for it.', toolCalls: [{ id: 'toolu_reaper_slow_1', name: 'Bash', arguments: { command: 'for i in $(seq 900); do sleep 1; done; echo slow step done', description: 'Slow step', timeout: 600000 } }] },
  },
] as FixtureFileEntry[]
/** The driver lease's key prefix (`runDriverLockKey`, internal to @tanstack/ai-sandbox). */
const DRIVER_LEASE_PREFIX = 'tanstack-ai-sandbox:run-driver:'
const GROUPS = { stale: 2, finished: 2, producing: 2 }
/** The sweeps' quiescence window: short, nothing else writes these logs. */
const FENCE_QUIET_MS = 300
const BASE_SEED = Number(process.env.REAPER_SEED ?? randomInt(2 ** 30))
console.info(`[reaper e2e] seed ${BASE_SEED}: REAPER_SEED=${BASE_SEED} replays these detach points`)

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const CONTAINER_CLI = '/opt/claude/claude'
const dockerReason = await dockerMissing([IMAGE])

/** Where the runs happen. */
interface Setting {
  name: string
  provider: ProviderConfig
  /** The journal folder inside the sandbox (on local-process a host folder every sandbox shares). */
  journalDir: string
  modelHost: () => Promise<string>
  /** Claude options for one run, with its private HOME (a path the host can find processes by). */
  claude: (model: FakeModel) => { options: ClaudeCodeOptions; home: string; cleanup?: () => void }
  /** The provider's sandboxes of this suite still present (folders, or containers). */
  sandboxesLeft: () => Promise<string[]>
  /** Journal files left, when the host can see them (local-process); `undefined` when they live only in containers. */
  journalsLeft: () => string[] | undefined
  seedOffset: number
}

type Group = keyof typeof GROUPS

/** One run the suite started. */
interface Run {
  runId: string
  threadId: string
  group: Group
  prompt: string
  home: string
  detachAt: number
  /** What the client read before it left. */
  delivered: number
  sandboxKey?: string
}

function reaperSuite(setting: Setting): void {
  let model: FakeModel
  let dir: string
  let stores: SqliteStores
  let provider: SandboxProvider
  let control: string[]
  /** The thread keeps its sandbox after a run (no keepAlive): only the reaper's reclaim removes it. */
  let sandbox: SandboxDefinition
  const runs: Run[] = []
  const homes = new Map<string, { options: ClaudeCodeOptions; home: string; cleanup?: () => void }>()
  const errors: string[] = []
  let drives = 0
  /** The sweeps' logger: their failures, kept for the assertions. */
  const logger = resolveDebugOption({ logger: { debug: () => {}, info: () => {}, warn: () => {}, error: (message: string, meta?: unknown) => void errors.push(`${message} ${JSON.stringify(meta ?? '').slice(0, 400)}`) } })

  /** The run's `chat()`: the real CLI in the thread's sandbox, durable over the shared stores (as the run server writes it). */
  function agentRun(input: { runId: string; threadId: string; prompt: string; claude: ClaudeCodeOptions; log: StreamDurability; attach: boolean; abortController: AbortController; sandbox?: SandboxDefinition }): AsyncIterable<StreamChunk> {
    return chat({
      adapter: claudeCodeText('sonnet', input.claude),
      runId: input.runId,
      threadId: input.threadId,
      messages: [{ role: 'user', content: input.prompt }],
      middleware: [withSandbox(input.sandbox ?? sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability: { adapter: input.log, attach: input.attach, journalDir: setting.journalDir } })],
      abortController: input.abortController,
    } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  }

  function newRun(group: Group, detachAt: number): Run {
    const claude = setting.claude(model)
    const run: Run = { runId: `reaper-${group}-${randomUUID()}`, threadId: `thread-${randomUUID()}`, group, prompt: group === 'finished' ? FAST_PROMPT : SLOW_PROMPT, home: claude.home, detachAt, delivered: 0 }
    homes.set(run.runId, claude)
    runs.push(run)
    return run
  }

  /**
   * Start a run and leave it once the client read `run.detachAt` chunks (a
   * slow run at its tool call at the latest, after which nothing comes for
   * minutes): the client hangs up, then the host stops its run without a
   * cancel, so `withSandbox` detaches it and the agent goes on in the sandbox.
   */
  async function startAndAbandon(run: Run): Promise<void> {
    await stores.runs.createOrResume({ runId: run.runId, threadId: run.threadId, startedAt: Date.now() })
    const host = new AbortController()
    const log = stores.stream({ runId: run.runId })
    // Passed on as it is: core finds the run (and its detach) from its stream.
    const stream = agentRun({ ...run, claude: homes.get(run.runId)!.options, log, attach: false, abortController: host })
    const response = toServerSentEventsResponse(stream, { abortController: host, durability: { adapter: log, batch: 1 } })
    const events = await readSseEvents(response.body!, (event, seen) => transcriptOf(seen).length >= run.detachAt || (run.group !== 'finished' && event.chunk.type === EventType.TOOL_CALL_END))
    run.delivered = transcriptOf(events).length
    host.abort()
    // The host has let the run go once it released the run's driver lease (after its last record write, the detach).
    const released = stores.locks.withLock(`${DRIVER_LEASE_PREFIX}${run.runId}`, async () => true)
    expect(await Promise.race([released, new Promise((resolve) => setTimeout(() => resolve(false), 30_000))]), `the host of ${run.runId} let its run go`).toBe(true)
    const detached = await waitFor(async () => {
      const record = await stores.runs.get(run.runId)
      return record?.detachedSince !== undefined && record.sandboxKey !== undefined
    }, 30_000)
    expect(detached, `run ${run.runId} (${run.group}) was detached after ${run.delivered} chunks: ${JSON.stringify(await stores.runs.get(run.runId))}\n${errors.join('\n')}`).toBe(true)
    run.sandboxKey = (await stores.runs.get(run.runId))!.sandboxKey!
  }

  /** `ReapOptions.hasFinished` as spec 000 writes it: the instance record, `resume` (never `ensure`), `probeRunExit`. */
  async function hasFinished(record: RunRecord): Promise<RunExitProbe> {
    if (record.sandboxKey === undefined) return { state: 'unknown' }
    try {
      const instance = await stores.instances.get(record.sandboxKey)
      if (instance === null) return { state: 'unknown' }
      const handle = await provider.resume({ id: instance.providerSandboxId })
      if (handle === null) return { state: 'unknown' }
      return await probeRunExit({ handle, runId: record.runId, journalDir: setting.journalDir })
    } catch (error) {
      return { state: 'unknown', error }
    }
  }

  function sweep(now: number, detachedRunTtlMs: number): Promise<ReapResult> {
    return reapDetachedRuns({
      runs: stores.runs,
      locks: stores.locks,
      durability: (runId) => stores.stream({ runId }),
      hasFinished,
      drive: ({ runId, threadId, signal }) => {
        drives++
        const run = runs.find((r) => r.runId === runId)!
        const abortController = new AbortController()
        if (signal.aborted) abortController.abort(signal.reason)
        else signal.addEventListener('abort', () => abortController.abort(signal.reason), { once: true })
        return agentRun({ runId, threadId, prompt: run.prompt, claude: homes.get(runId)!.options, log: stores.stream({ runId }), attach: true, abortController })
      },
      now,
      detachedRunTtlMs,
      fenceQuietMs: FENCE_QUIET_MS,
      reclaim: sandboxReclaimer({ provider, instances: stores.instances, journalDir: setting.journalDir }),
      logger,
    })
  }

  const logChunks = async (runId: string): Promise<StreamChunk[]> => (await stores.stream({ runId }).snapshot()).map((entry) => entry.chunk).filter((chunk) => !isRunAcceptedMarker(chunk))
  const outcomes = (counts: Partial<Record<ReapRunOutcome, number>>): Record<ReapRunOutcome, number> => ({ finalized: 0, expired: 0, producing: 0, unknown: 0, 'not-claimed': 0, 'budget-exceeded': 0, 'reclaim-failed': 0, ...counts })

  beforeAll(async () => {
    const takeover = (JSON.parse(readFileSync(TAKEOVER_FIXTURE, 'utf8')) as { fixtures: FixtureFileEntry[] }).fixtures
    model = await startFakeModel([...SLOW_FIXTURES, ...takeover], { host: await setting.modelHost(), vars: { stepSeconds: '1' } })
    dir = mkdtempSync(join(tmpdir(), 'reaper-e2e-'))
    stores = createSqliteStores({ path: join(dir, 'runs.db'), leaseMs: 3000 })
    provider = providerFor(setting.provider)
    sandbox = defineSandbox({ id: 'reaper-e2e', provider, lifecycle: { reuse: 'thread' } })
    // The control: the same turn, never left, read to its end.
    const run = newRun('finished', Number.MAX_SAFE_INTEGER)
    runs.pop()
    await stores.runs.createOrResume({ runId: run.runId, threadId: run.threadId, startedAt: Date.now() })
    const log = stores.stream({ runId: run.runId })
    const abortController = new AbortController()
    // Its own definition, so its sandbox goes when it ends (the reaper never sees a run that was not detached).
    const once = defineSandbox({ id: 'reaper-e2e', provider, lifecycle: { reuse: 'thread', destroyOnComplete: true } })
    const response = toServerSentEventsResponse(agentRun({ ...run, claude: homes.get(run.runId)!.options, log, attach: false, abortController, sandbox: once }), { abortController, durability: { adapter: log, batch: 1 } })
    const client = transcriptOf(await readSseEvents(response.body!))
    expect(client.at(-1)?.type, `the control run finished:\n${errors.join('\n')}`).toBe(EventType.RUN_FINISHED)
    control = normalizedFingerprints(await logChunks(run.runId), run)
    // The wire form of a chunk differs from the stored one (core moves a few fields), so the client is compared by count only.
    expect(control.length, "the control's log holds what its client read").toBe(client.length)
    console.info(`[reaper ${setting.name}] control run: ${control.length} chunks`)
  }, 180_000)

  afterAll(async () => {
    // Whatever a failure left running: expire it, so its sandbox and CLI go.
    if (stores) await sweep(Date.now(), 0).catch(() => undefined)
    stores?.close()
    await model?.stop()
    for (const claude of homes.values()) claude.cleanup?.()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 120_000)

  it(`abandoned runs at seeded points: one sweep finalizes the finished ones with their whole transcript, expires the stale ones and leaves the producing ones alone; a second has nothing to do; then nothing is left`, async () => {
    const random = seededRandom(BASE_SEED + setting.seedOffset)
    const slowPoint = () => 1 + Math.floor(random() * 8)
    // Detached before `split`: the stale group. Every other run is detached after it.
    const stale = Array.from({ length: GROUPS.stale }, () => newRun('stale', slowPoint()))
    await Promise.all(stale.map(startAndAbandon))
    const split = Date.now()
    await new Promise((resolve) => setTimeout(resolve, 200))
    // From the second chunk on: a run left at RUN_STARTED may never launch its agent, so it could not finish.
    const finished = Array.from({ length: GROUPS.finished }, () => newRun('finished', 2 + Math.floor(random() * (control.length - 11))))
    const producing = Array.from({ length: GROUPS.producing }, () => newRun('producing', slowPoint()))
    await Promise.all([...finished, ...producing].map(startAndAbandon))
    for (const run of runs) console.info(`[reaper ${setting.name}] seed ${BASE_SEED + setting.seedOffset}: ${run.group} run left after ${run.delivered} chunks (drawn ${run.detachAt === Number.MAX_SAFE_INTEGER ? '-' : run.detachAt})`)

    // The finished group ends in its sandbox while nobody reads it.
    const ended = await waitFor(async () => (await Promise.all(finished.map(async (run) => (await hasFinished((await stores.runs.get(run.runId))!)).state))).every((state) => state === 'finished'), 90_000)
    expect(ended, 'every finished-group agent wrote its exit sentinel while detached').toBe(true)
    // A slow run left at RUN_STARTED may never have launched its agent: no journal, so its probe is unknown (and it is untouched all the same).
    const launched = new Set(runs.filter((run) => run.group !== 'finished' && processesWithHome(run.home).length > 0).map((run) => run.runId))
    const probeOf = (run: Run) => (launched.has(run.runId) ? 'producing' : 'unknown')
    const live = producing.filter((run) => launched.has(run.runId)).length
    const before = new Map(await Promise.all(producing.map(async (run) => [run.runId, { record: await stores.runs.get(run.runId), length: (await logChunks(run.runId)).length }] as const)))

    // TTL: the stale group has outlived it, the producing group has not.
    const now = Date.now()
    const first = await sweep(now, now - split)
    console.info(`[reaper ${setting.name}] sweep 1 (TTL ${now - split} ms): ${JSON.stringify(first.outcomes)}, ${drives} drives`)
    expect(first.outcomes, `sweep 1 (errors: ${errors.join('\n')})`).toEqual(outcomes({ finalized: finished.length, expired: stale.length, producing: live, unknown: producing.length - live }))
    expect(drives, 'only the runs whose probe said finished were driven').toBe(finished.length)
    for (const run of finished) {
      expect(first.entries.find((e) => e.runId === run.runId)).toMatchObject({ outcome: 'finalized', probe: { state: 'finished', exitCode: 0 }, status: 'completed', reclaim: { reclaimed: true } })
      const tally = tallyTranscript(normalizedFingerprints(await logChunks(run.runId), run), control)
      expect(tally, `the log of ${run.runId} (left after ${run.delivered} chunks) equals the control, chunk for chunk`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
      expect(await stores.runs.get(run.runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
    }
    for (const run of stale) {
      expect(first.entries.find((e) => e.runId === run.runId)).toMatchObject({ outcome: 'expired', expired: true, probe: { state: probeOf(run) }, status: 'failed', reclaim: { reclaimed: true } })
      expect(await stores.runs.get(run.runId)).toMatchObject({ status: 'failed', error: { code: 'detached-run-expired' } })
      expect((await logChunks(run.runId)).at(-1), 'its log ends with the expiry').toMatchObject({ type: EventType.RUN_ERROR, code: 'detached-run-expired' })
    }
    for (const run of [...finished, ...stale]) {
      expect(await stores.instances.get(run.sandboxKey!), `the sandbox record of ${run.runId} is deleted`).toBeNull()
      expect(await waitFor(() => processesWithHome(run.home).length === 0, 15_000), `no CLI or tool process of ${run.runId} is left`).toBe(true)
    }
    for (const run of producing) {
      const was = before.get(run.runId)!
      expect(first.entries.find((e) => e.runId === run.runId)).toMatchObject({ outcome: probeOf(run), expired: false, probe: { state: probeOf(run) } })
      expect(await stores.runs.get(run.runId), 'a producing run is exactly as it was').toEqual(was.record)
      expect((await logChunks(run.runId)).length, 'nothing was written to its log').toBe(was.length)
      expect((await hasFinished(was.record!)).state, 'its sandbox is up and its agent (when it launched) still at work').toBe(probeOf(run))
      if (launched.has(run.runId)) expect(processesWithHome(run.home).length, 'its CLI is alive').toBeGreaterThan(0)
    }
    expect((await setting.sandboxesLeft()).length, 'only the producing runs still have a sandbox').toBe(producing.length)

    const secondNow = Date.now()
    const second = await sweep(secondNow, secondNow - split)
    expect(second.outcomes, 'sweep 2 has nothing to do').toEqual(outcomes({ producing: live, unknown: producing.length - live }))
    expect(drives, 'and drives nothing').toBe(finished.length)
    for (const run of producing) expect(await stores.runs.get(run.runId)).toEqual(before.get(run.runId)!.record)

    // Close out the rest: a TTL of 0 expires every run not finished, and reclaims its sandbox (its CLI with it).
    const third = await sweep(Date.now(), 0)
    expect(third.outcomes).toEqual(outcomes({ expired: producing.length }))
    const fourth = await sweep(Date.now(), 0)
    expect(fourth.entries, 'no detached run is left to sweep').toEqual([])
    console.info(`[reaper ${setting.name}] sweep 2: ${JSON.stringify(second.outcomes)}; sweep 3 (TTL 0): ${JSON.stringify(third.outcomes)}; sweep 4: ${fourth.entries.length} runs`)

    for (const run of runs) {
      expect(await stores.instances.get(run.sandboxKey!), `the sandbox record of ${run.runId} is deleted`).toBeNull()
      expect(await waitFor(() => processesWithHome(run.home).length === 0, 15_000), `no CLI or tool process of ${run.runId} is left`).toBe(true)
    }
    expect(await waitFor(async () => (await setting.sandboxesLeft()).length === 0, 15_000), `0 sandboxes left: ${(await setting.sandboxesLeft()).join(', ')}`).toBe(true)
    expect(setting.journalsLeft() ?? [], '0 journals left').toEqual([])
    expect(processesMatching(setting.journalDir), 'no process reads or writes a journal').toEqual([])
    expect(errors.filter((e) => !/aborted|detach/i.test(e)), 'nothing failed on the way').toEqual([])
  }, 300_000)
}

const localRoot = mkdtempSync(join(tmpdir(), 'reaper-e2e-sandboxes-'))
const localJournals = mkdtempSync(join(tmpdir(), 'reaper-e2e-journals-'))
afterAll(() => {
  const left = readdirSync(localRoot)
  const journals = readdirSync(localJournals)
  rmSync(localRoot, { recursive: true, force: true })
  rmSync(localJournals, { recursive: true, force: true })
  expect(left, 'every local-process sandbox folder is removed').toEqual([])
  expect(journals, 'every journal is removed').toEqual([])
})

describe('the reaper over abandoned runs of the real claude CLI on local-process', () => {
  reaperSuite({
    name: 'local-process',
    provider: { kind: 'local-process', root: localRoot },
    journalDir: localJournals,
    modelHost: () => Promise.resolve('127.0.0.1'),
    claude: (model) => {
      const home = makeClaudeHome('reaper-e2e-home')
      return { options: { executable: claudeBinary(), env: home.env(model.url) }, home: home.dir, cleanup: home.cleanup }
    },
    sandboxesLeft: () => Promise.resolve(readdirSync(localRoot)),
    journalsLeft: () => readdirSync(localJournals),
    seedOffset: 0,
  })
})

const LABELS = { 'tanstack-test.run': `reaper-e2e-${randomUUID().slice(0, 8)}` }
describeWithDocker('the reaper over abandoned runs of the real claude CLI in Docker sandboxes', dockerReason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)
    await pruneDockerSandboxes({ labels: LABELS }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  reaperSuite({
    name: 'docker',
    provider: { kind: 'docker', image: IMAGE, labels: LABELS, mounts: [{ source: claudeBinary(), target: CONTAINER_CLI, readOnly: true }] },
    journalDir: '/tmp/reaper-e2e-journals',
    modelHost: async () => (await bridgeHostAddress())!,
    claude: (model) => {
      const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
      const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
      return { options: { executable: CONTAINER_CLI, env }, home }
    },
    sandboxesLeft: async () => (await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)).containers,
    journalsLeft: () => undefined,
    seedOffset: 100_000,
  })
})
