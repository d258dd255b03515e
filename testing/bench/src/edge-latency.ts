/**
 * Benchmark (v): how soon a client sees an edge agent run's events (issue
 * 34). `createCloudflareSandboxAgent` in `do-drives` mode runs in Miniflare
 * exactly as testing/claude-code-e2e/tests/cloudflare-agent.e2e.test.ts runs
 * it (workerd, the real `@cloudflare/sandbox` Durable Object, the stand-in
 * container, the real Claude Code CLI against the fake model, the e2e
 * suite's own Worker); the reference is the same agent run on the Node host
 * routes of examples/sandbox-web (its server as a child process, as its own
 * tests start it, in live mode pointed at the same fake model, with
 * `--docker`, so on both hosts the CLI runs in a container on the same
 * engine, mounted from the same binary, answering the same script).
 *
 * Two figures per host, ms, measured with this process's clock:
 *
 * - **trigger → first event**: from sending the trigger to the first SSE
 *   event of the run at the client. Miniflare: `POST /runs`, its `202`, then
 *   `GET /runs/:id/events` at once, to the first event of that tail. Node
 *   host: `POST /api/run`, whose own response is the run's event stream, to
 *   its first event. Core's `run.accepted` marker (the Node host's durable
 *   response writes it before the run's first chunk) does not count: the
 *   figure is the run's first real chunk, and the row names its type.
 * - **reconnect → first stored event**: while the run goes on, a tailing
 *   client drops its connection and reconnects with `Last-Event-ID` set to
 *   one before the last id it saw, so the first event the new connection
 *   owes it is already stored: the figure is the route's resume path (auth,
 *   routing, reading the stored log, the first write), not the agent's
 *   pacing. Miniflare: the run's `GET /runs/:id/events` tail. Node host: a
 *   second client's `GET /api/run` tail (the POST stays open: dropping it
 *   would detach the run, which is a takeover, not a reconnect).
 *
 * On both hosts the first event is `RUN_STARTED`, which comes once the run's
 * sandbox is up, so the first figure is mostly the sandbox's provisioning:
 * a container of the stand-in image started by workerd through the
 * `Sandbox` Durable Object, against a container of the Debian image started
 * by the Docker provider plus the example's workspace (a git clone of its
 * sample repository and a `git config`).
 *
 * The fake model answers testing/claude-code-e2e/fixtures/durable-takeover.json
 * (four Bash steps of `stepSeconds` each, 0 s by default), so the run emits
 * events over its whole length (the model's streamed replies, the tool calls)
 * and every reconnect falls inside it. Runs alternate between the hosts. Invariant: every run ends `completed` with
 * `RUN_FINISHED`, its event ids are gap-free from 0 across every reconnect,
 * each reconnect's first event is the one after its cursor; Miniflare is
 * disposed, no container of either host, no CLI of the Miniflare run's HOME,
 * no server process and no temp folder outlives the bench.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { RUN_ACCEPTED_EVENT } from '@tanstack/ai'
import { pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { claudeBinary, startFakeModel, type FakeModel } from '@testing/claude-code-e2e/aimock'
import { bundleWorker, cloudflareMissing, startCloudflareLab, type CloudflareLab } from '@testing/cloudflare-standin'
import { bridgeHostAddress } from '@testing/support/docker-engine'
import { processesWithHome, waitFor } from '@testing/support/harness-run'
import { sseMessages } from '@testing/support/sse-client'
import { BenchError, median, percentile, round } from './stats.js'

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const E2E_DIR = join(repoRoot, 'testing/claude-code-e2e')
/** The e2e suite's Worker: one `createCloudflareSandboxAgent` call, bundled as the suite bundles it. */
const WORKER_ENTRY = join(E2E_DIR, 'tests/helpers/cloudflare-agent-worker.ts')
const FIXTURE_FILE = join(E2E_DIR, 'fixtures/durable-takeover.json')
const SANDBOX_WEB_DIR = join(repoRoot, 'examples/sandbox-web')
/** The prompt the durable-takeover script answers. */
const PROMPT = 'Run the durable job in four steps.'
/** Where the CLI is mounted in both hosts' containers. */
const CONTAINER_CLI = '/opt/claude/claude'
/** The Node host's container image (its `--docker` default). */
const NODE_IMAGE = 'tanstack-sandbox-debian:bookworm'
/** The Node host's container label (examples/sandbox-web/src/server/agent.ts): its value is the server's data folder. */
const SANDBOX_WEB_LABEL = 'tanstack.sandbox-web'
/** The hosts' names in the rows. */
const MINIFLARE = 'Miniflare (workerd, do-drives)'
const NODE_HOST = 'Node host (sandbox-web --docker)'
/** Bound on one run, trigger to its end (a hang guard, not a timing claim). */
const RUN_TIMEOUT_MS = 180_000

/** One figure on one host. */
export interface EdgeLatencyRow {
  readonly host: string
  readonly figure: 'trigger -> first event' | 'reconnect -> first stored event'
  readonly samples: number
  readonly medianMs: number
  readonly p90Ms: number
  readonly minMs: number
  readonly maxMs: number
  /** Trigger rows: median ms from sending the trigger to its response (Miniflare: the 202; Node host: the POST's headers); `null` on reconnect rows. */
  readonly answeredMedianMs: number | null
  /** The chunk types the figure's first events had (trigger rows), e.g. `RUN_STARTED`. */
  readonly firstEvent: string
}

/** Everything the bench measured. */
export interface EdgeLatencyResult {
  readonly rows: EdgeLatencyRow[]
  /** The `host` of the measured rows and of their reference rows. */
  readonly hosts: { readonly miniflare: string; readonly node: string }
  /** Runs per host, reconnects per run, the script's step length. */
  readonly runs: number
  readonly reconnectsPerRun: number
  readonly stepSeconds: number
  /** Per host: ms from the trigger to the run's end at the client, median (context: how long a run lasts). */
  readonly runMedianMs: Readonly<Record<string, number>>
  /** Per host, per run: every sample, in ms. */
  readonly samples: Readonly<Record<string, { trigger: number[]; answered: number[]; reconnect: number[] }>>
}

/** What the bench needs of a host. */
interface Host {
  readonly name: string
  /** Whether the trigger's response is itself the run's stream and holds the drive (Node host): reconnects then use a second tail. */
  readonly triggerDrives: boolean
  /**
   * Send the trigger and return the run id and the response whose body
   * streams the run's events: the trigger's own (Node host) or the tail
   * opened right after the 202 (Miniflare).
   */
  trigger(threadId: string, signal: AbortSignal): Promise<{ runId: string; events: Response; answeredAt: number }>
  /** `GET` the run's events after `cursor` (`Last-Event-ID`). */
  tail(runId: string, cursor: number, signal: AbortSignal): Promise<Response>
  /** The run's record status. */
  status(runId: string, threadId: string): Promise<string>
  /** The host's sandboxes that still exist. */
  sandboxes(): Promise<string[]>
  /** Stop everything the host started; returns what was left behind (and removed on the way). */
  close(): Promise<string[]>
}

/** One SSE event as the client saw it. */
interface SeenEvent {
  readonly id: number
  readonly type: string
  readonly at: number
}

/** The client's view of one run, over every connection it had: each id's first arrival. */
class RunView {
  readonly seen = new Map<number, SeenEvent>()
  lastId = -1
  finished = false

  add(event: SeenEvent): void {
    if (!this.seen.has(event.id)) this.seen.set(event.id, event)
    if (event.id > this.lastId) this.lastId = event.id
    if (event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR') this.finished = true
  }
}

/** A connection reading a run's events: its first event, its end, and the way to drop it. */
interface Tail {
  /** The first event of this connection that is not core's `run.accepted` marker. */
  readonly first: Promise<SeenEvent>
  /** Settles when the body ends, breaks or is dropped. */
  readonly ended: Promise<void>
  drop(): void
}

/** Read `response`'s SSE events into `view` in the background. */
function readTail(response: Response, controller: AbortController, view: RunView, what: string): Tail {
  if (response.status !== 200 || !response.body) throw new BenchError(`edge-latency bench: ${what} answered ${response.status} ${response.statusText}`)
  let resolveFirst!: (event: SeenEvent) => void
  let rejectFirst!: (error: unknown) => void
  const first = new Promise<SeenEvent>((resolve, reject) => {
    resolveFirst = resolve
    rejectFirst = reject
  })
  first.catch(() => undefined)
  const ended = (async () => {
    try {
      for await (const message of sseMessages(response.body!)) {
        const at = performance.now()
        const chunk = JSON.parse(message.data) as { type: string; name?: string }
        if (message.id === undefined || !/^\d+$/.test(message.id)) throw new BenchError(`edge-latency bench: ${what} sent an event without a numeric id (${JSON.stringify(message.id)}): ${message.data.slice(0, 500)}`)
        const event = { id: Number(message.id), type: chunk.type === 'CUSTOM' ? `CUSTOM ${chunk.name}` : chunk.type, at }
        view.add(event)
        if (!(chunk.type === 'CUSTOM' && chunk.name === RUN_ACCEPTED_EVENT)) resolveFirst(event)
      }
      rejectFirst(new BenchError(`edge-latency bench: ${what} ended without an event`))
    } catch (error) {
      rejectFirst(controller.signal.aborted ? new BenchError(`edge-latency bench: ${what} was dropped before its first event`) : error)
      if (!controller.signal.aborted) throw error
    }
  })()
  // Awaited where it matters (the run's end); a dropped tail's failure must not surface as an unhandled rejection.
  ended.catch(() => undefined)
  return { first, ended, drop: () => controller.abort() }
}

/** Open a tail through `open` with its own abort controller. */
async function openTail(open: (signal: AbortSignal) => Promise<Response>, view: RunView, what: string): Promise<Tail> {
  const controller = new AbortController()
  return readTail(await open(controller.signal), controller, view, what)
}

const whole = (value: number): string => value.toFixed(0)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Reject after `ms` with a bench error naming `what` (a hang guard). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new BenchError(`edge-latency bench: ${what} took over ${ms / 1000} s`)), ms)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** One run on `host`: the trigger sample, then reconnect samples every `spacingMs` while it goes on, then its end checked. */
async function measureRun(host: Host, reconnects: number, spacingMs: number, trace: boolean): Promise<{ triggerMs: number; answeredMs: number; firstType: string; reconnectMs: number[]; runMs: number }> {
  const view = new RunView()
  const threadId = `bench-edge-${randomUUID().slice(0, 8)}`
  const tails: Tail[] = []
  const started = performance.now()
  try {
    const controller = new AbortController()
    const { runId, events, answeredAt } = await within(host.trigger(threadId, controller.signal), 60_000, `${host.name}: the trigger`)
    const triggerTail = readTail(events, controller, view, `${host.name}: the trigger's event stream`)
    tails.push(triggerTail)
    const first = await within(triggerTail.first, RUN_TIMEOUT_MS, `${host.name}: the run's first event`)
    const triggerMs = first.at - started
    let current = triggerTail
    if (host.triggerDrives) {
      // A second client tails the run from where the first one is; the trigger's stream stays open and drives.
      current = await openTail((signal) => host.tail(runId, view.lastId, signal), view, `${host.name}: GET tail`)
      tails.push(current)
    }
    const reconnectMs: number[] = []
    while (reconnectMs.length < reconnects && !view.finished && performance.now() - started < RUN_TIMEOUT_MS) {
      await sleep(spacingMs)
      const last = view.lastId
      if (view.finished || last < 1) continue
      current.drop()
      const cursor = last - 1
      const sent = performance.now()
      current = await openTail((signal) => host.tail(runId, cursor, signal), view, `${host.name}: reconnect after ${cursor}`)
      tails.push(current)
      const event = await within(current.first, 30_000, `${host.name}: a reconnect's first event`)
      if (event.id !== cursor + 1) throw new BenchError(`edge-latency bench: ${host.name}: a reconnect after ${cursor} began with event ${event.id}`)
      reconnectMs.push(event.at - sent)
    }
    // The run to its end, on the connections still open.
    await within(Promise.all([triggerTail.ended, current.ended]), RUN_TIMEOUT_MS, `${host.name}: the run`)
    const runMs = Math.max(...[...view.seen.values()].map((event) => event.at)) - started
    const ids = [...view.seen.keys()].sort((a, b) => a - b)
    if (!view.finished || ids.some((id, index) => id !== index)) throw new BenchError(`edge-latency bench: ${host.name}: the client's events are not the whole run (ids ${ids.join(',')}, finished ${view.finished})`)
    const last = [...view.seen.values()].find((event) => event.id === view.lastId)
    if (last?.type !== 'RUN_FINISHED') throw new BenchError(`edge-latency bench: ${host.name}: the run ended with ${last?.type}, not RUN_FINISHED`)
    const status = await host.status(runId, threadId)
    if (status !== 'completed') throw new BenchError(`edge-latency bench: ${host.name}: run ${runId} is ${status}, not completed`)
    const ending = performance.now()
    if (!(await waitFor(async () => (await host.sandboxes()).length === 0, 60_000))) throw new BenchError(`edge-latency bench: ${host.name}: the run's sandbox is still there 60 s after its end`)
    const goneMs = performance.now() - ending
    if (trace) {
      console.log(`\n${host.name} ${runId} (trigger sent at ${new Date(performance.timeOrigin + started).toISOString()}): trigger answered ${whole(answeredAt - started)}, first event ${whole(triggerMs)} (${first.type}), reconnects ${reconnectMs.map(whole).join(' ')}, run ${whole(runMs)}, sandbox gone ${whole(goneMs)} after`)
      for (const event of [...view.seen.values()].sort((a, b) => a.id - b.id)) console.log(`  ${String(event.id).padStart(3)} ${whole(event.at - started).padStart(6)} ${event.type}`)
    }
    return { triggerMs, answeredMs: answeredAt - started, firstType: first.type, reconnectMs, runMs }
  } finally {
    for (const tail of tails) tail.drop()
    await Promise.allSettled(tails.map((tail) => tail.ended))
  }
}

/**
 * The e2e suite's lab: its Worker bundled with the built packages, Miniflare
 * on the bridge address (the container reaches the Worker's tool bridge
 * there), the CLI mounted, a HOME of its own.
 */
async function miniflareHost(temp: string, model: FakeModel): Promise<Host> {
  const token = randomBytes(24).toString('hex')
  const home = `/tmp/claude-home-bench-${randomUUID().slice(0, 8)}`
  const options = { executable: CONTAINER_CLI, env: { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'bench-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' } }
  const script = await bundleWorker(WORKER_ENTRY, join(temp, 'worker', 'worker.js'))
  const lab: CloudflareLab = await startCloudflareLab({
    script,
    bindings: { SANDBOX_LOG_LEVEL: 'error', RUN_TOKEN: token, CLAUDE_OPTIONS: JSON.stringify(options) },
    mounts: [{ source: claudeBinary(), target: CONTAINER_CLI, readOnly: true }],
    hostGateway: true,
    durableObjects: { Coordinator: 'Coordinator' },
  })
  const base = lab.containerUrl
  if (!base) {
    await lab.close()
    throw new BenchError('edge-latency bench: Miniflare listens on loopback only, so the container cannot reach the Worker (no Docker bridge address on this machine)')
  }
  const auth = { authorization: `Bearer ${token}` }
  return {
    name: MINIFLARE,
    triggerDrives: false,
    trigger: async (threadId, signal) => {
      const response = await fetch(new URL('runs', base), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ threadId, messages: [{ role: 'user', content: PROMPT }] }), signal })
      if (response.status !== 202) throw new BenchError(`edge-latency bench: POST /runs answered ${response.status}: ${await response.text()}`)
      const { runId } = (await response.json()) as { runId: string }
      const answeredAt = performance.now()
      return { runId, events: await fetch(new URL(`runs/${runId}/events`, base), { headers: auth, signal }), answeredAt }
    },
    tail: (runId, cursor, signal) => fetch(new URL(`runs/${runId}/events`, base), { headers: { ...auth, 'last-event-id': String(cursor) }, signal }),
    status: async (runId) => ((await (await fetch(new URL(`runs/${runId}`, base), { headers: auth })).json()) as { status: string }).status,
    sandboxes: () => lab.containers(),
    close: async () => {
      const left: string[] = []
      try {
        await lab.close()
      } catch (error) {
        left.push(error instanceof Error ? error.message : String(error))
      }
      if (!(await waitFor(() => processesWithHome(home).length === 0, 10_000))) left.push(`CLI processes with HOME=${home}: ${processesWithHome(home).join(', ')}`)
      return left
    },
  }
}

/**
 * examples/sandbox-web's server as its tests start it (`node --import tsx
 * src/server/main.ts` in its folder, a free port, a fresh data folder; the
 * access token given as `SANDBOX_WEB_TOKEN`), with `--docker` and in live
 * mode: its `ANTHROPIC_BASE_URL` is the fake model, as the container reaches it.
 */
async function nodeHost(temp: string, model: FakeModel): Promise<Host> {
  const dataDir = join(temp, 'sandbox-web-data')
  const token = randomBytes(32).toString('base64url')
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts', '--docker'], {
    cwd: SANDBOX_WEB_DIR,
    env: {
      ...process.env,
      PORT: '0',
      SANDBOX_WEB_DATA: dataDir,
      SANDBOX_WEB_TOKEN: token,
      SANDBOX_WEB_IMAGE: NODE_IMAGE,
      SANDBOX_WEB_MAX_RUNS: '',
      SANDBOX_WEB_MAX_RUNS_TOTAL: '',
      ANTHROPIC_API_KEY: 'bench-key-not-a-secret',
      ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await Promise.race([exited, sleep(8000)])
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    }
  }
  let url: string
  try {
    url = await within(
      new Promise<string>((resolve, reject) => {
        const look = () => {
          const listening = /listening (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
          if (listening && /^open http/m.test(output)) resolve(listening[1]!)
        }
        child.stdout!.on('data', look)
        void exited.then(() => reject(new BenchError(`edge-latency bench: the sandbox-web server exited:\n${output}`)))
      }),
      60_000,
      'starting the sandbox-web server',
    )
  } catch (error) {
    await stop()
    throw error
  }
  const labels = { [SANDBOX_WEB_LABEL]: dataDir }
  const api = (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` } })
  return {
    name: NODE_HOST,
    triggerDrives: true,
    trigger: async (threadId, signal) => {
      const runId = `bench-${randomUUID()}`
      const events = await api(`/api/run?runId=${runId}`, { method: 'POST', headers: { origin: url, 'content-type': 'application/json' }, body: JSON.stringify({ threadId, prompt: PROMPT }), signal })
      return { runId, events, answeredAt: performance.now() }
    },
    tail: (runId, cursor, signal) => api(`/api/run?runId=${runId}`, { headers: { 'last-event-id': String(cursor) }, signal }),
    status: async (runId, threadId) => {
      const { runs } = (await (await api(`/api/threads/${threadId}`)).json()) as { runs: { runId: string; status: string }[] }
      return runs.find((run) => run.runId === runId)?.status ?? 'unknown'
    },
    sandboxes: async () => {
      const { sandboxes } = (await (await api('/api/status')).json()) as { sandboxes: string[] | null }
      return sandboxes ?? ['(the engine did not answer)']
    },
    close: async () => {
      await stop()
      const pruned = await pruneDockerSandboxes({ labels, images: false })
      const left = pruned.containers.map((id) => `container ${id.slice(0, 12)}`)
      if (child.exitCode !== 0 && child.signalCode === null) left.push(`the sandbox-web server exited ${child.exitCode}:\n${output.slice(-2000)}`)
      return left
    },
  }
}

/**
 * Measure both hosts, runs alternating (Miniflare, Node host, Miniflare, …).
 *
 * @param options.runs - Runs per host. Default 3.
 * @param options.reconnectsPerRun - Reconnects per run, one every `spacingMs` while it goes on. Default 8.
 * @param options.trace - Print every run's events with their arrival times. Default `false`.
 * @param options.stepSeconds - Length of each of the script's four Bash steps. Default 0: the run's events are then spread by the model's streaming and the CLI's tool calls alone (the e2e suite runs 1.5).
 * @param options.spacingMs - ms between two reconnects. Default 500.
 * @throws BenchError `bench-failed` when a host cannot start, a run does not end completed with every event once, a
 *   reconnect starts anywhere but after its cursor, or something of a host is left afterwards.
 */
export async function benchEdgeLatency(options: { runs?: number; reconnectsPerRun?: number; stepSeconds?: number; spacingMs?: number; trace?: boolean } = {}): Promise<EdgeLatencyResult> {
  const runs = options.runs ?? 3
  const reconnectsPerRun = options.reconnectsPerRun ?? 8
  const stepSeconds = options.stepSeconds ?? 0
  const spacingMs = options.spacingMs ?? 500
  const missing = await cloudflareMissing()
  if (missing) throw new BenchError(`edge-latency bench: the Cloudflare lab cannot run here: ${missing}`)
  const bridge = await bridgeHostAddress()
  if (!bridge) throw new BenchError('edge-latency bench: no Docker bridge address on this machine (a container must reach the fake model and the Worker)')
  const temp = await mkdtemp(join(tmpdir(), 'bench-edge-latency-'))
  const hosts: Host[] = []
  let model: FakeModel | undefined
  const failures: unknown[] = []
  const samples: Record<string, { trigger: number[]; answered: number[]; reconnect: number[]; types: string[]; run: number[] }> = {}
  try {
    const fixtures = JSON.parse(await readFile(FIXTURE_FILE, 'utf8')) as { fixtures: never[] }
    model = await startFakeModel(fixtures, { host: bridge, vars: { stepSeconds: String(stepSeconds) } })
    // Both hosts start side by side; one that started is closed below even when the other failed.
    const started = await Promise.allSettled([miniflareHost(temp, model), nodeHost(temp, model)])
    for (const host of started) if (host.status === 'fulfilled') hosts.push(host.value)
    for (const host of started) if (host.status === 'rejected') throw host.reason
    for (let run = 0; run < runs; run++) {
      for (const host of hosts) {
        const measured = await measureRun(host, reconnectsPerRun, spacingMs, options.trace === true)
        const into = (samples[host.name] ??= { trigger: [], answered: [], reconnect: [], types: [], run: [] })
        into.trigger.push(measured.triggerMs)
        into.answered.push(measured.answeredMs)
        into.reconnect.push(...measured.reconnectMs)
        into.types.push(measured.firstType)
        into.run.push(measured.runMs)
      }
    }
  } catch (error) {
    failures.push(error)
  } finally {
    const closed = await Promise.all(hosts.map(async (host) => ({ host, left: await host.close().catch((error: unknown) => [String(error)]) })))
    for (const { host, left } of closed) if (left.length > 0) failures.push(new BenchError(`edge-latency bench: ${host.name} left ${left.join('; ')}`))
    await model?.stop()
    await rm(temp, { recursive: true, force: true })
  }
  if (failures.length > 0) throw failures[0]
  const rows: EdgeLatencyRow[] = []
  for (const [host, taken] of Object.entries(samples)) {
    rows.push(row(host, 'trigger -> first event', taken.trigger, [...new Set(taken.types)].join(', '), median(taken.answered)))
    rows.push(row(host, 'reconnect -> first stored event', taken.reconnect, '', null))
  }
  return {
    rows,
    hosts: { miniflare: MINIFLARE, node: NODE_HOST },
    runs,
    reconnectsPerRun,
    stepSeconds,
    runMedianMs: Object.fromEntries(Object.entries(samples).map(([host, taken]) => [host, median(taken.run)])),
    samples: Object.fromEntries(Object.entries(samples).map(([host, taken]) => [host, { trigger: taken.trigger, answered: taken.answered, reconnect: taken.reconnect }])),
  }
}

/** Print the table of (v) and the runs' lengths. */
export function printEdgeLatency(result: EdgeLatencyResult): void {
  console.log(
    `\n(v) edge latency: createCloudflareSandboxAgent (do-drives) in Miniflare against the same agent run on examples/sandbox-web's Node routes (--docker), both with the real Claude Code CLI in a container against the fake model (durable-takeover.json, ${result.stepSeconds} s steps); ` +
      `${result.runs} run(s) per host, up to ${result.reconnectsPerRun} reconnects per run. trigger -> first event: the run's first chunk at a client (Miniflare: POST /runs, 202, GET /runs/:id/events; Node host: POST /api/run's own stream), answeredMs the trigger's response; ` +
      'reconnect -> first stored event: a dropped tail reconnects with Last-Event-ID one before the last id it saw, to that event (Miniflare: GET /runs/:id/events; Node host: GET /api/run beside the open POST)',
  )
  console.table(result.rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), p90Ms: round(row.p90Ms, 1), minMs: round(row.minMs, 1), maxMs: round(row.maxMs, 1), answeredMedianMs: row.answeredMedianMs === null ? '' : round(row.answeredMedianMs, 1) })))
  console.log(`(v) a run, trigger to RUN_FINISHED at the client (median): ${Object.entries(result.runMedianMs).map(([host, value]) => `${host} ${round(value / 1000, 1)} s`).join(', ')}`)
}

function row(host: string, figure: EdgeLatencyRow['figure'], values: number[], firstEvent: string, answeredMedianMs: number | null): EdgeLatencyRow {
  if (values.length === 0) throw new BenchError(`edge-latency bench: ${host}: no ${figure} sample (the runs ended before a reconnect?)`)
  return { host, figure, samples: values.length, medianMs: median(values), p90Ms: percentile(values, 90), minMs: Math.min(...values), maxMs: Math.max(...values), answeredMedianMs, firstEvent }
}
