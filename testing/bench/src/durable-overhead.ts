/**
 * Benchmark (r): what a durable run costs the quickstart's turn (issue 12,
 * goal <= 10%). The real Claude Code CLI runs the offline quickstart script
 * (examples/quickstart/fixtures/demo.json through the quickstart's aimock:
 * Read, Edit, Read, Write, Bash `node --test`, then a closing message) on a
 * fresh clone of the sample repository, in a server route's shape: `chat()`
 * + `withSandbox` consumed through `toServerSentEventsResponse`, the response
 * body read to the end. Non-durable is the quickstart as it is; durable adds
 * `runs` (core's `InMemoryRunStore`, the record created first with
 * `createOrResume`), `locks` (`InMemoryLockStore`) and
 * `durability: { adapter: memoryStream({ runId }) }`, the same log handed to
 * the transport. Turns alternate (A B A B …) after one warm-up of each.
 *
 * Each turn is cut into phases, stamped where `chat()` yields (before the
 * transport) so the transport's batching does not blur them, and every
 * sandbox call (`process.*`, `fs.*`) of the turn is counted and timed through
 * a wrapper around the provider. That says where a difference comes from.
 * Where the sandbox's /tmp is an overlay file system (Docker), a third mode
 * puts the journal on a tmpfs (`durability.journalDir`), and a probe times
 * how soon a journaled line reaches the host on each file system.
 * Invariant: every timed turn makes the script's five tool calls, ends with
 * `RUN_FINISHED` after the passing-tests message and changes both files; a
 * durable turn's log replays every chunk the client got and its journal is
 * deleted; no sandbox, container or temp file outlives the bench.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { OFFLINE_TASK, resolveClaudeExecutable, SAMPLE_FILES, startOfflineModel, type OfflineModel } from '@example/quickstart'
import { chat, ConsoleLogger, InMemoryRunStore, memoryStream, replayRunStream, toServerSentEventsResponse, type DebugConfig, type StreamChunk } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { CLAUDE_CODE_INIT_EVENT, CLAUDE_CODE_SESSION_EVENT, claudeCodeText } from '@tanstack/ai-claude-code'
import { defineSandbox, defineWorkspace, gitSource, readJournalNdjson, shellQuote, startJournaledAgent, withSandbox, type SandboxDefinition, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { sseMessages } from '@testing/support/sse-client'
import { BenchError, median, percentile, round } from './stats.js'

const run = promisify(execFile)

/** The overhead goal of issue 12, in percent of the non-durable median. */
export const DURABLE_OVERHEAD_GOAL_PCT = 10

/** Tool calls the quickstart script makes (Read, Edit, Read, Write, Bash). */
const SCRIPT_TOOL_CALLS = 5

/**
 * How a turn runs: the quickstart as it is; durable with the default journal
 * folder; and, where the sandbox's /tmp is an overlay file system (Docker),
 * durable with the journal on a tmpfs (`durability.journalDir`), which
 * isolates what following a journal on overlayfs costs.
 */
export type DurableOverheadMode = 'non-durable' | 'durable' | 'durable, journal on tmpfs'

/** One mode on one provider: medians over the timed turns, in ms. */
export interface DurableOverheadRow {
  readonly provider: string
  readonly mode: DurableOverheadMode
  readonly turns: number
  /** Wall time of the turn: from the route's first line to the end of the response body. */
  readonly medianMs: number
  readonly p90Ms: number
  /** Route start to the sandbox's `onReady` (created, cloned, set up). */
  readonly readyMs: number
  /** `onReady` to the agent's output reader in place (the first `spawn` returns: the CLI on a pipe, or the journal's `tail -f`). */
  readonly launchMs: number
  /** Launched to the CLI's first line (its init event) out of `chat()`. */
  readonly cliStartMs: number
  /** The CLI's first line to the last model text out of `chat()`: the five model requests and the tools between them. */
  readonly modelMs: number
  /** The last model text to `RUN_FINISHED` out of `chat()`: the CLI's exit and the end of its output. */
  readonly endMs: number
  /** `RUN_FINISHED` out of `chat()` to the end of the response body: the transport (and, durable, the log's last append and close). */
  readonly deliveryMs: number
  /** How much later the client saw the first model output than `chat()` yielded it (the durable transport batches up to 32 chunks). */
  readonly clientLagMs: number
  /** Sandbox calls (`process.exec`, `process.spawn`, `fs.*`) started between the route's start and the body's end. */
  readonly sandboxCalls: number
  /** Their summed duration (they overlap, so this is work, not wall time). */
  readonly sandboxCallMs: number
  /** Of those, the ones started between `RUN_FINISHED` out of `chat()` and the body's end: the run's end work, and what competes with it. */
  readonly callsInDelivery: number
  /** CPU time of the whole machine (every process: this one, the CLI, the Docker engine) during the turn, from /proc/stat; `null` where unreadable. */
  readonly machineCpuMs: number | null
  /** CPU time of this Node process during the turn (`process.cpuUsage`). */
  readonly hostCpuMs: number
  /** SSE events the client got (a durable turn also gets core's `run.accepted` marker). */
  readonly events: number
}

/** The verdict for one durable mode on one provider against the non-durable turns, and where the difference is. */
export interface DurableOverheadSummary {
  readonly provider: string
  readonly mode: Exclude<DurableOverheadMode, 'non-durable'>
  readonly nonDurableMedianMs: number
  readonly durableMedianMs: number
  /** `(durable - non-durable) / non-durable` of the medians, in percent. */
  readonly overheadPct: number
  /** The median over the A B pairs (each durable turn right after its non-durable one) of `(B - A) / A`, in percent: less sensitive to load that drifts during the run. */
  readonly pairedOverheadPct: number
  readonly goalPct: number
  readonly verdict: 'meets the goal' | 'misses the goal'
  /** Durable minus non-durable per phase, in ms: the median over the A B pairs. */
  readonly phaseDeltaMs: Readonly<Record<'ready' | 'launch' | 'cliStart' | 'model' | 'end' | 'delivery', number>>
  /** Durable minus non-durable, median over the pairs: sandbox calls per turn, and their summed ms. */
  readonly extraSandboxCalls: number
  readonly extraSandboxCallMs: number
  /** Durable minus non-durable, median over the pairs: CPU ms of the machine and of this process per turn. */
  readonly extraMachineCpuMs: number | null
  readonly extraHostCpuMs: number
  /** The machine's 1-minute load average when this provider's turns started and ended: other work on the machine shows here. */
  readonly loadAverage: readonly [start: number, end: number]
}

/** How soon a line an agent appends to its journal reaches the host through `readJournalNdjson` (the follow reader a durable run uses). */
export interface JournalFollowLatencyRow {
  readonly provider: string
  readonly journalDir: string
  /** The folder's file system type inside the sandbox (`stat -f`). */
  readonly fileSystem: string
  readonly lines: number
  /** ms from the agent's `date` before its write to the line's arrival on the host. */
  readonly medianMs: number
  readonly p90Ms: number
  readonly maxMs: number
}

/** Everything the bench measured. */
export interface DurableOverheadResult {
  readonly rows: DurableOverheadRow[]
  readonly summary: DurableOverheadSummary[]
  readonly followLatency: JournalFollowLatencyRow[]
}

/** One sandbox call of a turn: when it started (ms since the route started), how long it took, what it ran. */
interface SandboxCall {
  readonly op: string
  readonly atMs: number
  readonly ms: number
  readonly what: string
}

/** Where the traced provider reports: the current route's start, and its calls while recording. */
interface CallSink {
  origin: number
  calls: SandboxCall[] | undefined
}

/** One provider's setup: where the CLI and the repository are, as the sandbox sees them. */
interface Target {
  readonly name: string
  readonly provider: SandboxProvider
  readonly repoUrl: string
  readonly executable: string
  /** The CLI's HOME for turn `i` (a fresh one per turn, as the demo has). */
  readonly home: (i: number) => string
  /** Remove turn `i`'s HOME when it is on the host. */
  readonly removeHome: (i: number) => Promise<void>
  /** The host name the sandbox uses for the model, and the address the model listens on. */
  readonly modelHost: string
  readonly modelListen: string
  /** The journal folder inside the sandbox. */
  readonly journalDir: string
  /** A journal folder on a tmpfs, where the default one is on an overlay file system (Docker); adds the diagnosis mode. */
  readonly tmpfsJournalDir?: string
  /** What of the target is left once its sandboxes were destroyed (removed on the way). */
  readonly leftovers: () => Promise<string[]>
}

/** Milestones of one turn, ms since the route started; `*AtChat` when `chat()` yielded the chunk, `*AtClient` when the body delivered it. */
interface Turn {
  readonly totalMs: number
  readonly readyMs: number
  readonly launchedMs: number
  readonly cliFirstLineAtChat: number
  readonly firstOutputAtChat: number
  readonly firstOutputAtClient: number
  readonly lastTextAtChat: number
  readonly finishedAtChat: number
  readonly events: number
  readonly calls: readonly SandboxCall[]
  readonly machineCpuMs: number | null
  readonly hostCpuMs: number
}

/** What the current turn's `onReady` reports (turns run one at a time). */
interface TurnProbe {
  handle?: SandboxHandle
  readyAt?: number
  failure?: unknown
}

/**
 * Time the quickstart's turn non-durable and durable, interleaved.
 *
 * @param options.turns - Timed turns per mode and provider, after one warm-up of each. Default 8.
 * @param options.local - Run on local-process. Default `true`.
 * @param options.docker - Run on Docker (`tanstack-sandbox-debian:bookworm`). Default `true`.
 * @param options.trace - Print every sandbox call of the last turn of each mode. Default `false`.
 * @returns A row per provider and mode, and the verdict per provider.
 * @throws BenchError `bench-failed` when a turn does not run the script to its passing end, a durable
 *   log misses chunks, a journal, sandbox or container is left, or no Docker sandbox can be created.
 */
export async function benchDurableOverhead(options: { turns?: number; local?: boolean; docker?: boolean; trace?: boolean } = {}): Promise<DurableOverheadResult> {
  const turns = options.turns ?? 8
  const temp = await mkdtemp(join(tmpdir(), 'bench-durable-overhead-'))
  const rows: DurableOverheadRow[] = []
  const summary: DurableOverheadSummary[] = []
  const followLatency: JournalFollowLatencyRow[] = []
  try {
    const repo = await createSampleRepo(join(temp, 'repo'))
    const targets: (() => Promise<Target>)[] = []
    if (options.local !== false) targets.push(() => localTarget(temp, repo))
    if (options.docker !== false) targets.push(() => dockerTarget(repo))
    for (const makeTarget of targets) {
      const target = await makeTarget()
      const measureAll = async () => {
        const result = await measureTarget(target, turns, options.trace === true)
        for (const dir of [target.journalDir, ...(target.tmpfsJournalDir ? [target.tmpfsJournalDir] : [])]) followLatency.push(await journalFollowLatency(target, dir, FOLLOW_LINES))
        return result
      }
      const measured = await measureAll().catch((error: unknown) => ({ error }))
      // Counted on success and failure alike; a failure is reported first.
      const left = await target.leftovers()
      if ('error' in measured) throw measured.error
      if (left.length > 0) throw new BenchError(`durable-overhead bench: ${target.name} left ${left.join(', ')}.`)
      rows.push(...measured.rows)
      summary.push(...measured.summary)
    }
    return { rows, summary, followLatency }
  } finally {
    await rm(temp, { recursive: true, force: true })
  }
}

/** Print the three tables of (r): per mode, the verdicts, the journal follow latency. */
export function printDurableOverhead(result: DurableOverheadResult): void {
  const rounded = (row: object) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, typeof value === 'number' ? round(value, key.endsWith('Pct') ? 1 : 0) : Array.isArray(value) ? value.map((n: number) => round(n, 1)).join(' → ') : value]))
  console.log(`\n(r) durable over non-durable: the quickstart's turn (real Claude Code, aimock, demo.json) through chat() + withSandbox + toServerSentEventsResponse, body read to the end; ms per turn, phase medians stamped where chat() yields (goal: overhead <= ${DURABLE_OVERHEAD_GOAL_PCT}%)`)
  console.table(result.rows.map(({ sandboxCallMs: _work, hostCpuMs: _host, events: _events, ...row }) => rounded(row)))
  console.table(result.summary.map(({ phaseDeltaMs, extraSandboxCallMs: _work, extraHostCpuMs: _host, ...rest }) => rounded({ ...rest, ...Object.fromEntries(Object.entries(phaseDeltaMs).map(([phase, ms]) => [`Δ${phase}`, ms])) })))
  console.log(`(r) journal follow latency: an agent appends a line every ${FOLLOW_INTERVAL_S} s, read back with readJournalNdjson (a durable run's reader); ms from its write to the host`)
  console.table(result.followLatency.map(rounded))
}

/** Lines of the follow-latency probe, one every {@link FOLLOW_INTERVAL_S} s (not a divisor of a second, so the lines sample every phase of a 1-s poll). */
const FOLLOW_LINES = 20
const FOLLOW_INTERVAL_S = 0.37

/**
 * Journal an agent that prints its clock every 0.37 s into `dir`, read it with
 * `readJournalNdjson` as a durable run does, and time each line's way to the
 * host (the sandbox shares the host's clock: local-process, or a container).
 */
async function journalFollowLatency(target: Target, dir: string, lines: number): Promise<JournalFollowLatencyRow> {
  const handle = await target.provider.create()
  try {
    const fileSystem = (await handle.process.exec(`mkdir -p ${shellQuote(dir)} && stat -f -c %T ${shellQuote(dir)}`)).stdout.trim()
    const journal = { runId: `bench-follow-${randomUUID()}`, dir }
    const agent = `i=0; while [ $i -lt ${lines} ]; do printf '{"ns":"%s"}\\n' "$(date +%s%N)"; i=$((i + 1)); sleep ${FOLLOW_INTERVAL_S}; done`
    await startJournaledAgent(handle, agent, { journal })
    const latencies: number[] = []
    for await (const value of readJournalNdjson(handle, { journal })) latencies.push(Date.now() - Number((value as { ns: string }).ns) / 1e6)
    if (latencies.length !== lines) throw new BenchError(`durable-overhead bench: the follow probe read ${latencies.length} of ${lines} lines from ${dir}.`)
    return { provider: target.name, journalDir: dir, fileSystem, lines, medianMs: median(latencies), p90Ms: percentile(latencies, 90), maxMs: Math.max(...latencies) }
  } finally {
    await handle.destroy()
  }
}

/** Warm up, alternate the modes, and compare. */
async function measureTarget(target: Target, turns: number, trace: boolean): Promise<{ rows: DurableOverheadRow[]; summary: DurableOverheadSummary[] }> {
  const model = await startOfflineModel(undefined, { host: target.modelListen })
  const probe: TurnProbe = {}
  const sink: CallSink = { origin: 0, calls: undefined }
  const definition = defineSandbox({
    id: 'bench-durable-overhead',
    provider: tracedProvider(target.provider, sink),
    workspace: defineWorkspace({
      source: gitSource({ url: target.repoUrl }),
      setup: ['git config user.name "Quickstart agent" && git config user.email agent@example.com', 'node --test'],
    }),
    // As the demo: kept after the turn so the diff can be checked, then destroyed outside the clock.
    lifecycle: { reuse: 'thread', snapshot: 'none' },
    hooks: {
      onReady: async (handle) => {
        probe.readyAt = performance.now()
        probe.handle = handle
        await model.useWorkspace(handle.workspaceRoot).catch((error: unknown) => void (probe.failure = error))
      },
    },
  })
  const stores = { runs: new InMemoryRunStore(), locks: new InMemoryLockStore() }
  const loadAtStart = loadavg()[0]!
  const modes: DurableOverheadMode[] = ['non-durable', 'durable', ...(target.tmpfsJournalDir ? (['durable, journal on tmpfs'] as const) : [])]
  const samples = new Map<DurableOverheadMode, Turn[]>(modes.map((mode) => [mode, []]))
  let index = 0
  try {
    for (let i = -1; i < turns; i++) {
      for (const mode of modes) {
        const turn = await oneTurn({ target, definition, model, probe, sink, stores, mode, index: index++ })
        if (i >= 0) samples.get(mode)!.push(turn)
      }
    }
  } finally {
    await model.stop()
  }
  if (trace) for (const mode of modes) printTrace(target.name, mode, samples.get(mode)!.at(-1)!)
  const plain = samples.get('non-durable')!
  const loadAverage = [loadAtStart, loadavg()[0]!] as const
  return {
    rows: modes.map((mode) => rowOf(target.name, mode, samples.get(mode)!)),
    summary: modes.filter((mode) => mode !== 'non-durable').map((mode) => summaryOf(target.name, mode, plain, samples.get(mode)!, loadAverage)),
  }
}

/** A turn's phases, in ms (see {@link DurableOverheadRow}). */
function phasesOf(t: Turn): Record<DurationPhase, number> {
  return {
    ready: t.readyMs,
    launch: t.launchedMs - t.readyMs,
    cliStart: t.cliFirstLineAtChat - t.launchedMs,
    model: t.lastTextAtChat - t.cliFirstLineAtChat,
    end: t.finishedAtChat - t.lastTextAtChat,
    delivery: t.totalMs - t.finishedAtChat,
  }
}

type DurationPhase = 'ready' | 'launch' | 'cliStart' | 'model' | 'end' | 'delivery'

function rowOf(provider: string, mode: DurableOverheadMode, turns: readonly Turn[]): DurableOverheadRow {
  const med = (pick: (turn: Turn) => number) => median(turns.map(pick))
  return {
    provider,
    mode,
    turns: turns.length,
    medianMs: med((t) => t.totalMs),
    p90Ms: percentile(turns.map((t) => t.totalMs), 90),
    readyMs: med((t) => phasesOf(t).ready),
    launchMs: med((t) => phasesOf(t).launch),
    cliStartMs: med((t) => phasesOf(t).cliStart),
    modelMs: med((t) => phasesOf(t).model),
    endMs: med((t) => phasesOf(t).end),
    deliveryMs: med((t) => phasesOf(t).delivery),
    clientLagMs: med((t) => t.firstOutputAtClient - t.firstOutputAtChat),
    sandboxCalls: med((t) => t.calls.length),
    sandboxCallMs: med((t) => t.calls.reduce((sum, call) => sum + call.ms, 0)),
    callsInDelivery: med((t) => t.calls.filter((call) => call.atMs >= t.finishedAtChat && call.atMs <= t.totalMs).length),
    machineCpuMs: turns.some((t) => t.machineCpuMs === null) ? null : med((t) => t.machineCpuMs!),
    hostCpuMs: med((t) => t.hostCpuMs),
    events: med((t) => t.events),
  }
}

/** Compare a durable mode with the non-durable turns it alternated with (pair i: plain[i], then durable[i]). */
function summaryOf(provider: string, mode: DurableOverheadSummary['mode'], plain: readonly Turn[], durable: readonly Turn[], loadAverage: readonly [number, number]): DurableOverheadSummary {
  const nonDurableMedianMs = median(plain.map((t) => t.totalMs))
  const durableMedianMs = median(durable.map((t) => t.totalMs))
  const overheadPct = ((durableMedianMs - nonDurableMedianMs) / nonDurableMedianMs) * 100
  const paired = (pick: (turn: Turn) => number) => median(durable.map((turn, i) => pick(turn) - pick(plain[i]!)))
  const phase = (name: DurationPhase) => paired((t) => phasesOf(t)[name])
  const cpu = plain.concat(durable).some((t) => t.machineCpuMs === null) ? null : paired((t) => t.machineCpuMs!)
  return {
    provider,
    mode,
    nonDurableMedianMs,
    durableMedianMs,
    overheadPct,
    pairedOverheadPct: median(durable.map((turn, i) => ((turn.totalMs - plain[i]!.totalMs) / plain[i]!.totalMs) * 100)),
    goalPct: DURABLE_OVERHEAD_GOAL_PCT,
    verdict: overheadPct <= DURABLE_OVERHEAD_GOAL_PCT ? 'meets the goal' : 'misses the goal',
    phaseDeltaMs: { ready: phase('ready'), launch: phase('launch'), cliStart: phase('cliStart'), model: phase('model'), end: phase('end'), delivery: phase('delivery') },
    extraSandboxCalls: paired((t) => t.calls.length),
    extraSandboxCallMs: paired((t) => t.calls.reduce((sum, call) => sum + call.ms, 0)),
    extraMachineCpuMs: cpu,
    extraHostCpuMs: paired((t) => t.hostCpuMs),
    loadAverage,
  }
}

interface TurnInput {
  readonly target: Target
  readonly definition: SandboxDefinition
  readonly model: OfflineModel
  readonly probe: TurnProbe
  readonly sink: CallSink
  readonly stores: { readonly runs: InMemoryRunStore; readonly locks: InMemoryLockStore }
  readonly mode: DurableOverheadMode
  readonly index: number
}

/** One quickstart turn through a route's shape: timed, then checked and its sandbox destroyed outside the clock. */
async function oneTurn(input: TurnInput): Promise<Turn> {
  const { target, definition, model, probe, sink, mode, index } = input
  const { runs, locks } = input.stores
  delete probe.handle
  delete probe.readyAt
  delete probe.failure
  const threadId = `bench-durable-overhead-${index}-${randomUUID()}`
  const runId = `bench-run-${randomUUID()}`
  const adapter = claudeCodeText('claude-sonnet-4-5', {
    executable: target.executable,
    maxTurns: 30,
    env: {
      HOME: target.home(index), // a fresh ~/.claude per turn, as the demo has per run
      CLAUDE_CODE_TMPDIR: `${target.home(index)}/tmp`,
      // As root on the host, Claude Code skips permissions only when told it is isolated (the demo opts in the same way).
      ...(target.name === 'local-process' && process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}),
      ANTHROPIC_BASE_URL: `http://${target.modelHost}:${model.port}`,
      ANTHROPIC_API_KEY: 'offline-bench',
      CLAUDE_CODE_MAX_RETRIES: '0',
    },
  })
  const messages = [{ role: 'user' as const, content: OFFLINE_TASK }]
  const abortController = new AbortController()
  const atChat: { atMs: number; chunk: StreamChunk }[] = []
  const calls: SandboxCall[] = []
  try {
    // ---- the route, timed from its first line ----
    const cpuBefore = { machine: await machineCpuMs(), host: process.cpuUsage() }
    const started = performance.now()
    sink.origin = started
    sink.calls = calls
    let response: Response
    const journalDir = mode === 'durable, journal on tmpfs' ? target.tmpfsJournalDir! : target.journalDir
    if (mode !== 'non-durable') {
      const log = memoryStream({ runId })
      await runs.createOrResume({ runId, threadId, startedAt: Date.now(), status: 'running' })
      const stream = chat({ adapter, threadId, runId, messages, abortController, debug: benchDebug(), middleware: [withSandbox(definition, { runs, locks, durability: { adapter: log, journalDir } })] })
      response = toServerSentEventsResponse(stamped(stream, started, atChat), { abortController, durability: { adapter: log } })
    } else {
      const stream = chat({ adapter, threadId, messages, abortController, debug: benchDebug(), middleware: [withSandbox(definition)] })
      response = toServerSentEventsResponse(stamped(stream, started, atChat), { abortController })
    }
    const atClient = await readBody(response, started)
    const totalMs = performance.now() - started
    sink.calls = undefined
    const machineAfter = await machineCpuMs()
    const hostCpu = process.cpuUsage(cpuBefore.host)
    const cpu = { machineCpuMs: machineAfter === null || cpuBefore.machine === null ? null : machineAfter - cpuBefore.machine, hostCpuMs: (hostCpu.user + hostCpu.system) / 1000 }
    // ---- the client has everything: check it ----
    const handle = checkTurn(input, atClient.map((e) => e.chunk))
    const status = await handle.process.exec('git status --porcelain')
    if (!status.stdout.includes('math.js') || !status.stdout.includes('math.test.js')) throw new BenchError(`durable-overhead bench: a ${mode} turn changed ${JSON.stringify(status.stdout)}, not math.js and math.test.js.`)
    if (mode !== 'non-durable') await checkDurable(input, handle, runId, journalDir, atClient.length)
    const first = (events: typeof atChat, test: (chunk: StreamChunk) => boolean) => events.find((e) => test(e.chunk))?.atMs
    const last = (events: typeof atChat, test: (chunk: StreamChunk) => boolean) => events.findLast((e) => test(e.chunk))?.atMs
    const readyMs = probe.readyAt! - started
    const launch = calls.find((call) => call.op === 'process.spawn' && call.atMs >= readyMs)
    const milestones = {
      launchedMs: launch && launch.atMs + launch.ms,
      cliFirstLineAtChat: first(atChat, isCliFirstLine),
      firstOutputAtChat: first(atChat, isModelOutput),
      firstOutputAtClient: first(atClient, isModelOutput),
      lastTextAtChat: last(atChat, (c) => c.type === 'TEXT_MESSAGE_CONTENT'),
      finishedAtChat: last(atChat, (c) => c.type === 'RUN_FINISHED'),
    }
    const missing = Object.entries(milestones).filter(([, value]) => value === undefined)
    if (missing.length > 0) throw new BenchError(`durable-overhead bench: a ${mode} turn has no ${missing.map(([name]) => name).join(', ')}.`)
    return { totalMs, readyMs, ...(milestones as Record<keyof typeof milestones, number>), events: atClient.length, calls, ...cpu }
  } finally {
    sink.calls = undefined
    abortController.abort()
    await definition.destroy({ key: definition.key({ threadId, runId: '' }) })
    await target.removeHome(index)
  }
}

/** The turn ran the script to its passing end; returns its sandbox. */
function checkTurn(input: TurnInput, chunks: readonly StreamChunk[]): SandboxHandle {
  const { probe, mode, target } = input
  if (probe.failure !== undefined) throw new BenchError(`durable-overhead bench: loading the offline script failed: ${String(probe.failure)}`, { cause: probe.failure })
  const failed = chunks.find((c) => c.type === 'RUN_ERROR')
  if (failed) throw new BenchError(`durable-overhead bench: a ${mode} turn on ${target.name} failed: ${JSON.stringify(failed).slice(0, 400)}`)
  const last = chunks.at(-1)
  const toolCalls = chunks.filter((c) => c.type === 'TOOL_CALL_END').length
  const text = chunks.map((c) => (c.type === 'TEXT_MESSAGE_CONTENT' ? c.delta : '')).join('')
  if (last?.type !== 'RUN_FINISHED' || toolCalls !== SCRIPT_TOOL_CALLS || !text.includes('0 failures')) {
    throw new BenchError(`durable-overhead bench: a ${mode} turn on ${target.name} ended with ${last?.type} after ${toolCalls} tool calls (the script makes ${SCRIPT_TOOL_CALLS}) and text ${JSON.stringify(text.slice(-120))}: demo.json no longer matches what the CLI does.`)
  }
  if (!probe.handle || probe.readyAt === undefined) throw new BenchError(`durable-overhead bench: a ${mode} turn ended without the sandbox's onReady.`)
  return probe.handle
}

/** A durable turn's record is there and attached, its log holds what the client got, and its journal was written and deleted. */
async function checkDurable(input: TurnInput, handle: SandboxHandle, runId: string, journalDir: string, events: number): Promise<void> {
  const record = await input.stores.runs.get(runId)
  if (!record || record.detachedSince !== undefined) throw new BenchError(`durable-overhead bench: run ${runId}'s record is ${JSON.stringify(record)}; expected it present and not detached.`)
  let stored = 0
  for await (const _chunk of replayRunStream(memoryStream({ runId }))) stored++
  if (stored !== events) throw new BenchError(`durable-overhead bench: the run log of ${runId} replays ${stored} chunks; the client got ${events}.`)
  // The journaled launch makes the folder (so it proves the agent was journaled); the run's reader deletes its files.
  const dir = shellQuote(journalDir)
  for (let waited = 0; ; waited += 100) {
    const listed = await handle.process.exec(`test -d ${dir} && ls -A ${dir}`)
    if (listed.exitCode !== 0) throw new BenchError(`durable-overhead bench: ${journalDir} does not exist after a durable turn: the agent was not journaled.`)
    if (listed.stdout.trim() === '') return
    if (waited >= 10_000) throw new BenchError(`durable-overhead bench: journal files left in ${journalDir}: ${listed.stdout.trim()}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

function isModelOutput(chunk: StreamChunk): boolean {
  return chunk.type === 'REASONING_MESSAGE_CONTENT' || chunk.type === 'TEXT_MESSAGE_CONTENT' || chunk.type === 'TOOL_CALL_START'
}

/** The chunk the CLI's first line (its `system` init event, which carries the session id) becomes. */
function isCliFirstLine(chunk: StreamChunk): boolean {
  return chunk.type === 'CUSTOM' && (chunk.name === CLAUDE_CODE_INIT_EVENT || chunk.name === CLAUDE_CODE_SESSION_EVENT)
}

/** Busy CPU time of the whole machine so far (user + nice + system + irq + softirq + steal over every core, /proc/stat), in ms; `null` without /proc. */
async function machineCpuMs(): Promise<number | null> {
  const stat = await readFile('/proc/stat', 'utf8').catch(() => undefined)
  const fields = stat?.split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number)
  if (!fields || fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return null
  const [user, nice, system, , , irq, softirq, steal] = fields as [number, number, number, number, number, number, number, number]
  return ((user + nice + system + irq + softirq + steal) * 1000) / CLOCK_TICKS_PER_SECOND
}

/** USER_HZ of /proc/stat: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100

/** Pass `stream` through unchanged, noting when each chunk left `chat()`. */
async function* stamped(stream: AsyncIterable<StreamChunk>, started: number, into: { atMs: number; chunk: StreamChunk }[]): AsyncGenerator<StreamChunk> {
  for await (const chunk of stream) {
    into.push({ atMs: performance.now() - started, chunk })
    yield chunk
  }
}

/** Read an SSE body to its end, stamping each event with its arrival (ms since `started`). */
async function readBody(response: Response, started: number): Promise<{ atMs: number; chunk: StreamChunk }[]> {
  const events: { atMs: number; chunk: StreamChunk }[] = []
  for await (const message of sseMessages(response.body!)) events.push({ atMs: performance.now() - started, chunk: JSON.parse(message.data) as StreamChunk })
  return events
}

/**
 * chat()'s logging for both modes: errors only (chat's default), minus the
 * one warning a durable run over `InMemoryLockStore` logs by design, which
 * this single-process bench would print once per turn.
 */
function benchDebug(): DebugConfig {
  const base = new ConsoleLogger()
  const expected = (message: string) => message.includes('InMemoryLockStore, which cannot coordinate hosts')
  const logger = {
    debug: (message: string, meta?: Record<string, unknown>) => base.debug(message, meta),
    info: (message: string, meta?: Record<string, unknown>) => base.info(message, meta),
    warn: (message: string, meta?: Record<string, unknown>) => void (expected(message) || base.warn(message, meta)),
    error: (message: string, meta?: Record<string, unknown>) => base.error(message, meta),
  }
  return { provider: false, output: false, middleware: false, tools: false, agentLoop: false, config: false, request: false, sandbox: false, errors: true, logger }
}

/**
 * Wrap `provider` so every `process` and `fs` call of its handles is timed
 * into `sink.calls` while that is set (a `spawn` until it returns, not for
 * its process's life). The wrapper adds microseconds to calls that take
 * milliseconds, the same in both modes.
 */
function tracedProvider(provider: SandboxProvider, sink: CallSink): SandboxProvider {
  const wrapGroup = <T extends object>(group: T, name: string): T =>
    new Proxy(group, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown
        if (typeof value !== 'function') return value
        return async (...args: unknown[]) => {
          const calls = sink.calls
          const start = performance.now()
          try {
            return (await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args)) as unknown
          } finally {
            calls?.push({ op: `${name}.${String(key)}`, atMs: start - sink.origin, ms: performance.now() - start, what: typeof args[0] === 'string' ? args[0].replace(/\s+/g, ' ').slice(0, 140) : '' })
          }
        }
      },
    })
  const wrapHandle = (handle: SandboxHandle): SandboxHandle =>
    new Proxy(handle, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown
        return key === 'process' || key === 'fs' ? wrapGroup(value as object, key) : value
      },
    })
  return new Proxy(provider, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown
      if (typeof value !== 'function' || (key !== 'create' && key !== 'resume')) return value
      return async (...args: unknown[]) => wrapHandle(await (value as (...a: unknown[]) => Promise<SandboxHandle>).apply(target, args))
    },
  })
}

/** Print one turn's milestones and sandbox calls (BENCH_DURABLE_TRACE=1). */
function printTrace(provider: string, mode: string, turn: Turn): void {
  const ms = (value: number) => value.toFixed(0)
  console.log(`\n${provider} ${mode}: ready ${ms(turn.readyMs)}, launched ${ms(turn.launchedMs)}, CLI first line ${ms(turn.cliFirstLineAtChat)}, first output ${ms(turn.firstOutputAtChat)} (client ${ms(turn.firstOutputAtClient)}), last text ${ms(turn.lastTextAtChat)}, RUN_FINISHED ${ms(turn.finishedAtChat)}, body end ${ms(turn.totalMs)} (ms since the route started)`)
  for (const call of [...turn.calls].sort((a, b) => a.atMs - b.atMs)) console.log(`${ms(call.atMs).padStart(6)} +${ms(call.ms).padStart(5)} ${call.op.padEnd(14)} ${call.what}`)
}

/** The quickstart's sample repository, one commit, in `dir`. */
async function createSampleRepo(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true })
  for (const [path, content] of Object.entries(SAMPLE_FILES)) await writeFile(join(dir, path), content)
  const identity = ['-c', 'user.name=Quickstart', '-c', 'user.email=quickstart@example.com']
  await run('git', ['init', '-q', '-b', 'main'], { cwd: dir })
  await run('git', ['add', '-A'], { cwd: dir })
  await run('git', [...identity, 'commit', '-q', '-m', 'Add add() and its test'], { cwd: dir })
  return dir
}

/** local-process: host paths are sandbox paths; the model on loopback. */
async function localTarget(temp: string, repo: string): Promise<Target> {
  const root = join(temp, 'sandboxes')
  const journalDir = join(temp, 'journals')
  return {
    name: 'local-process',
    provider: localProcessSandbox({ root }),
    repoUrl: `file://${repo}`,
    executable: resolveClaudeExecutable(),
    home: (i) => join(temp, `home-${i}`),
    removeHome: (i) => rm(join(temp, `home-${i}`), { recursive: true, force: true }),
    modelHost: '127.0.0.1',
    modelListen: '127.0.0.1',
    journalDir,
    leftovers: async () => [...(await readdir(root).catch(() => [])).map((name) => `sandbox folder ${name}`), ...(await readdir(journalDir).catch(() => [])).map((name) => `journal file ${name}`)],
  }
}

/** Where the host's CLI and repository appear in the container (as the quickstart mounts them). */
const CONTAINER_CLI = '/opt/claude/claude'
const CONTAINER_REPO = '/mnt/repo'
const DOCKER_IMAGE = 'tanstack-sandbox-debian:bookworm'

/** Docker Debian, as `pnpm demo --provider docker`: the CLI and repository mounted read-only, the model on the address the container reaches as host.docker.internal. */
async function dockerTarget(repo: string): Promise<Target> {
  const labels = { 'tanstack.bench.durable-overhead': randomUUID() }
  const user = process.getuid && process.getgid ? `${process.getuid()}:${process.getgid()}` : undefined // the repository's owner, as git expects
  const provider = dockerSandbox({
    image: DOCKER_IMAGE,
    labels,
    mounts: [
      { source: resolveClaudeExecutable(), target: CONTAINER_CLI, readOnly: true },
      { source: repo, target: CONTAINER_REPO, readOnly: true },
    ],
    ...(user ? { user } : {}),
  })
  // The address to serve the model on is known only from a sandbox: ask a throwaway one.
  let listen: string | undefined
  try {
    const handle = await provider.create()
    try {
      listen = (await handle.hostAccess?.())?.listenAddress
    } finally {
      await handle.destroy()
    }
  } catch (cause) {
    throw new BenchError(`durable-overhead bench: no Docker sandbox of ${DOCKER_IMAGE} could be created (is the engine up and the image built with scripts/docker/images.sh?). Pass docker: false to skip it.`, { cause })
  }
  if (!listen) throw new BenchError('durable-overhead bench: the Docker sandbox reports no host address to serve the model on.')
  return {
    name: 'docker (Debian)',
    provider,
    repoUrl: `file://${CONTAINER_REPO}`,
    executable: CONTAINER_CLI,
    home: (i) => `/tmp/quickstart/home-${i}`, // inside the container: gone with it
    removeHome: async () => undefined,
    modelHost: 'host.docker.internal',
    modelListen: listen,
    journalDir: '/tmp/tanstack-runs', // the default (DEFAULT_JOURNAL_DIR), on the container's overlay file system
    tmpfsJournalDir: '/dev/shm/tanstack-runs',
    leftovers: async () => {
      const pruned = await pruneDockerSandboxes({ labels })
      return [...pruned.containers.map((id) => `container ${id.slice(0, 12)}`), ...pruned.volumes.map((id) => `volume ${id}`)]
    },
  }
}

/**
 * Run alone: `pnpm -C testing/bench exec tsx src/durable-overhead.ts`. Sizes:
 * BENCH_DURABLE_TURNS (4 per mode); BENCH_DURABLE_LOCAL=0 or
 * BENCH_DURABLE_DOCKER=0 skips a provider; BENCH_DURABLE_TRACE=1 prints the
 * sandbox calls of one turn per mode. Writes bench-results/durable-overhead.json.
 */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { envInt } = await import('./stats.js')
  const result = await benchDurableOverhead({
    turns: envInt('BENCH_DURABLE_TURNS', 4),
    local: process.env.BENCH_DURABLE_LOCAL !== '0',
    docker: process.env.BENCH_DURABLE_DOCKER !== '0',
    trace: process.env.BENCH_DURABLE_TRACE === '1',
  })
  printDurableOverhead(result)
  const out = new URL('../bench-results/', import.meta.url)
  await mkdir(out, { recursive: true })
  await writeFile(new URL('durable-overhead.json', out), JSON.stringify({ date: new Date().toISOString(), node: process.version, durableOverhead: result }, null, 2) + '\n')
  console.log(`\nwrote ${new URL('durable-overhead.json', out).pathname}`)
}
