/**
 * A durable run server, as an application would write it, for the takeover
 * suites and the soak: one OS process serving the routes of spec 000
 * "Takeover" over HTTP (`@hono/node-server`), with the stores that every such
 * process shares: one SQLite file (`@tanstack/ai-sandbox-sqlite`) or one
 * PostgreSQL schema (`@tanstack/ai-sandbox-postgres`), by `config.stores`:
 *
 * - `POST /api/run?runId=…` `{ threadId }`: creates the run record, starts the
 *   real Claude Code CLI in the run's sandbox and streams it over SSE through
 *   the shared event log (`toServerSentEventsResponse({ durability })`).
 * - `GET /api/run?runId=…` with `Last-Event-ID`: replays the log from there
 *   and takes the run over (`resumeServerSentEventsResponse({ adapter, driver:
 *   sandboxRunDriver(...) })`, the harness with `attach: true`).
 * - `POST /api/run/cancel` `{ threadId }`: both cancel bands.
 *
 * The prompt is the suite's fixed one (a real app loads the thread's messages
 * from its chat persistence). It prints `listening <port>` once it serves
 * and `drive <runId>` when its driver holds a run's claim; errors go to
 * stderr. Input: one JSON argument, see {@link RunServerConfig}. It never exits by itself; the suites kill it.
 */
import { serve } from '@hono/node-server'
import { chat, defineChatMiddleware, requestRunCancel, resolveResumeRunId, resumeServerSentEventsResponse, RUN_CANCEL_REASON, toServerSentEventsResponse, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, sandboxRunDriver, withSandbox } from '@tanstack/ai-sandbox'
import { providerFor, type ProviderConfig } from './durable-host.js'
import { openServerStores, type StoresConfig } from './server-stores.js'

/** What the suite passes on the command line. */
export interface RunServerConfig {
  /** The stores every server of the suite shares: a SQLite file or a PostgreSQL schema. */
  stores: StoresConfig
  provider: ProviderConfig
  claude: ClaudeCodeOptions
  /** The user message of every run. */
  prompt: string
  /** Quiescence window of the run driver, ms. */
  fenceQuietMs: number
  /** Lock lease, ms: how long a killed server's claim outlives it. */
  leaseMs: number
  /** How often a live run re-reads its record for a remote cancel, ms. */
  cancelPollMs: number
  /** The attach preflight's wait for a journal, ms. */
  attachWaitMs?: number
  /**
   * Fault injection for the chaos suite: this process SIGKILLs itself the
   * moment its POST route's log is asked to append a chunk that matches, so
   * the chunk is never stored (a host that dies at that exact point).
   */
  dieBeforeAppend?: ChunkMatch
}

/** A chunk to die at: its `type`, a `CUSTOM` chunk's `name`, and for `RUN_FINISHED` only the final one (not a tool-calling turn's). */
export interface ChunkMatch {
  type: string
  name?: string
}

/** Whether `chunk` is what `match` names. */
export function chunkMatches(chunk: StreamChunk, match: ChunkMatch): boolean {
  if (chunk.type !== match.type) return false
  if (match.name !== undefined && (chunk as { name?: string }).name !== match.name) return false
  return chunk.type !== 'RUN_FINISHED' || chunk.finishReason !== 'tool_calls'
}

const config = JSON.parse(process.argv[2] ?? '') as RunServerConfig
const stores = await openServerStores(config.stores, config.leaseMs)
const sandbox = defineSandbox({ id: 'durable-e2e', provider: providerFor(config.provider), lifecycle: { reuse: 'thread', destroyOnComplete: true } })
const logger = resolveDebugOption({ logger: { debug: () => {}, info: () => {}, warn: (m: string) => console.error(`warn ${m}`), error: (m: string) => console.error(`error ${m}`) } })
/** Runs this process drives, for the in-process cancel band. */
const driving = new Map<string, AbortController>()

/** Forgets a run in `driving` once it ends on this process (finished, failed, aborted). */
function forgetWhenDone(runId: string) {
  const forget = () => void driving.delete(runId)
  return defineChatMiddleware({ name: 'forget-when-done', onFinish: forget, onAbort: forget, onError: forget })
}

/** The run's `chat()`: the real CLI in the thread's sandbox, durable over the shared stores. Passed on as it is: core finds the run from its stream. */
function agentRun(input: { runId: string; threadId: string; log: StreamDurability; attach: boolean; abortController: AbortController }): AsyncIterable<StreamChunk> {
  const durability = { adapter: input.log, attach: input.attach, cancelPollMs: config.cancelPollMs, ...(config.attachWaitMs !== undefined ? { attachWaitMs: config.attachWaitMs } : {}) }
  return chat({
    adapter: claudeCodeText('sonnet', config.claude),
    runId: input.runId,
    threadId: input.threadId,
    messages: [{ role: 'user', content: config.prompt }],
    middleware: [withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability }), forgetWhenDone(input.runId)],
    abortController: input.abortController,
  } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
}

/** An AbortController that follows `signal` (the claim's), for chat(); forgotten once the run is no longer driven here. */
function controllerFor(runId: string, signal: AbortSignal): AbortController {
  const controller = new AbortController()
  const abort = (): void => controller.abort(signal.reason)
  if (signal.aborted) abort()
  else signal.addEventListener('abort', abort, { once: true })
  driving.set(runId, controller)
  return controller
}

/** The log with {@link RunServerConfig.dieBeforeAppend} applied (the log itself when no fault is set). */
function withFault<T extends StreamDurability>(log: T): T {
  const match = config.dieBeforeAppend
  if (!match) return log
  const append = (chunks: StreamChunk[]) => {
    if (chunks.some((chunk) => chunkMatches(chunk, match))) process.kill(process.pid, 'SIGKILL')
    return log.append(chunks)
  }
  return new Proxy(log, {
    get: (target, property) => {
      if (property === 'append') return append
      const value: unknown = Reflect.get(target, property)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

async function startRun(request: Request): Promise<Response> {
  const runId = new URL(request.url).searchParams.get('runId')
  const body = (await request.json().catch(() => null)) as { threadId?: unknown } | null
  if (!runId || typeof body?.threadId !== 'string') return Response.json({ error: 'expected ?runId and a JSON body { threadId }' }, { status: 400 })
  // Created when the run is accepted, so an attach during the sandbox boot finds it (spec 002, finding 3).
  await stores.runs.createOrResume({ runId, threadId: body.threadId, startedAt: Date.now() })
  const log = withFault(stores.stream(request))
  const abortController = new AbortController()
  driving.set(runId, abortController)
  const stream = agentRun({ runId, threadId: body.threadId, log, attach: false, abortController })
  return toServerSentEventsResponse(stream, { abortController, durability: { adapter: log, batch: 1 } })
}

async function attachRun(request: Request): Promise<Response> {
  const runId = resolveResumeRunId(request)
  if (!runId) return Response.json({ error: 'name the run: ?runId=… or an X-Run-Id header' }, { status: 400 })
  // A run this deployment never started has nothing to replay or take over: say so instead of streaming a timeout.
  if (!(await stores.runs.get(runId))) return Response.json({ error: `no run ${runId}` }, { status: 404 })
  return resumeServerSentEventsResponse({
    adapter: stores.stream(request),
    driver: sandboxRunDriver({
      request,
      runs: stores.runs,
      locks: stores.locks,
      durability: (runId) => stores.stream({ runId }),
      fenceQuietMs: config.fenceQuietMs,
      logger,
      drive: ({ runId, threadId, signal }) => {
        console.log(`drive ${runId}`)
        return agentRun({ runId, threadId, log: stores.stream({ runId }), attach: true, abortController: controllerFor(runId, signal) })
      },
    }),
  })
}

async function cancelRun(request: Request): Promise<Response> {
  const body = (await request.json().catch(() => null)) as { threadId?: unknown } | null
  if (typeof body?.threadId !== 'string') return Response.json({ error: 'expected a JSON body { threadId }' }, { status: 400 })
  const active = await stores.runs.findActiveRun(body.threadId)
  if (!active) return Response.json({ cancelled: null })
  // Both bands: the record reaches a driver on any process, the abort one on this process at once.
  await requestRunCancel(stores.runs, active.runId)
  driving.get(active.runId)?.abort(RUN_CANCEL_REASON)
  return Response.json({ cancelled: active.runId })
}

async function route(request: Request): Promise<Response> {
  const { pathname } = new URL(request.url)
  if (pathname === '/api/run' && request.method === 'POST') return startRun(request)
  if (pathname === '/api/run' && request.method === 'GET') return attachRun(request)
  if (pathname === '/api/run/cancel' && request.method === 'POST') return cancelRun(request)
  return new Response('not found', { status: 404 })
}

const server = serve({ fetch: route, port: 0, hostname: '127.0.0.1' }, (info) => console.log(`listening ${info.port}`))
process.on('SIGTERM', () => {
  server.close()
  // A PostgreSQL pool ends asynchronously; exit once it has (or after 2 s).
  setTimeout(() => process.exit(0), 2000).unref()
  void stores.close().finally(() => process.exit(0))
})
