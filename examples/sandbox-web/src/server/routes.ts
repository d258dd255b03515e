/**
 * The app's HTTP surface (hono): the four routes of a durable agent run and
 * the pages. Owns request parsing and responses; the run itself is
 * `agent.run`, the stores are the SQLite ones.
 *
 * - `POST /api/run?runId=…` `{ threadId, prompt }`: record, then stream the run (SSE, ids = log offsets).
 * - `GET /api/run?runId=…` with `Last-Event-ID` (or `?offset=-1`): replay from there and take the run over if nobody drives it.
 * - `POST /api/run/cancel` `{ threadId }`: both cancel bands.
 * - `GET /api/status`: the reaper's last sweep, the live sandboxes, recent runs.
 *
 * Plus `GET /api/threads/:threadId` (the thread's runs, for a tab that rejoins), `GET /api/runs/:runId/changes`
 * (what a stopped run had changed, captured before its sandbox went), the thread's portable snapshots
 * (`GET /api/threads/:threadId/checkpoints`, and `POST /api/threads/:threadId/restore`: destroy the thread's sandbox so
 * its next run gets a new one, restored from the latest checkpoint) and the built browser app.
 *
 * Every request must name this server in `Host`; every `/api/*` request must
 * carry the launch's access token, and one that changes state must be JSON
 * from this app's own page (see access.ts). The start route refuses a run
 * past the caps with 429 (see run-limit.ts). The built browser app loads
 * without the token: it holds nothing but code.
 */
import { serveStatic } from '@hono/node-server/serve-static'
import { requestRunCancel, resolveResumeRunId, resumeServerSentEventsResponse, RUN_CANCEL_REASON, toServerSentEventsResponse, type RunRecord } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { sandboxRunDriver, type SandboxCheckpoint } from '@tanstack/ai-sandbox'
import type { SqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { checkBrowserWrite, checkHost, requireToken, type AppEnv } from './access.js'
import { controllerFor, type Agent } from './agent.js'
import type { ServerConfig } from './config.js'
import { SAMPLE_TASK, SHOW_TASK } from './model.js'
import { ID_PATTERN, type PromptStore } from './prompts.js'
import type { Reaper } from './reaper.js'
import type { RunLimiter } from './run-limit.js'
import type { RunSandboxStore } from './run-sandboxes.js'
import { SAMPLE_FILES } from './sample-repo.js'
import type { StoppedChangesStore } from './stopped-changes.js'

/** What the routes need. */
export interface AppDeps {
  config: ServerConfig
  stores: SqliteStores
  agent: Agent
  prompts: PromptStore
  /** Which sandbox each run got, for the page. */
  runSandboxes: RunSandboxStore
  reaper: Reaper
  /** The caps on live runs; the start route asks it for a slot. */
  limiter: RunLimiter
  /** Stopped runs' changes: captured by the cancel route before the sandbox goes, served to the page. */
  stopped: StoppedChangesStore
  /** The port the server listens on, for the `Host` and `Origin` checks (known once it listens, with `PORT=0`). */
  port: () => number
  /** True once the server shuts down: the API answers 503 from then on. */
  stopping: () => boolean
}

/** The longest task a run accepts, in characters. */
const MAX_PROMPT_CHARS = 100_000

/** How much of a run's task the status page shows, in characters. */
const SUMMARY_PROMPT_CHARS = 300

/** A run as the browser sees it: the record's public fields, the start of its prompt and, when known, its sandbox's id. */
function summary(record: RunRecord, prompt: string | undefined, sandboxId?: string) {
  const shown = prompt === undefined ? null : prompt.length > SUMMARY_PROMPT_CHARS ? `${prompt.slice(0, SUMMARY_PROMPT_CHARS)}…` : prompt
  return { runId: record.runId, threadId: record.threadId, status: record.status, startedAt: record.startedAt, finishedAt: record.finishedAt ?? null, detached: record.detachedSince !== undefined, prompt: shown, sandboxId: sandboxId ?? null }
}

/** A checkpoint as the browser sees it: which, when, from which run, how many files (the manifest itself stays on the server). */
function checkpointSummary(checkpoint: SandboxCheckpoint) {
  const files = checkpoint.manifest.entries.filter((entry) => entry.type === 'file')
  return {
    checkpointId: checkpoint.checkpointId,
    sequence: checkpoint.sequence,
    kind: checkpoint.kind,
    runId: checkpoint.runId ?? null,
    createdAt: checkpoint.createdAt,
    fileCount: files.length,
    bytes: files.reduce((sum, entry) => sum + entry.size, 0),
    messageCount: checkpoint.messageCount,
  }
}

/** A checkpoint as `GET /api/threads/:threadId/checkpoints` and the restore route describe it. */
export type CheckpointSummary = ReturnType<typeof checkpointSummary>

/** The lock key under which a POST checks and creates its run (see the route). */
const ACCEPT_LOCK_KEY = 'sandbox-web:accept-run'

const logger = resolveDebugOption({ logger: { debug: () => {}, info: () => {}, warn: (m: string) => console.warn(`warn ${m}`), error: (m: string) => console.error(`error ${m}`) } })

/** Build the app. */
export function createApp({ config, stores, agent, prompts, runSandboxes, reaper, limiter, stopped, port, stopping }: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>()

  // Who may ask, before anything else. Host on every path (a rebinding page gets not even the app's code), the rest
  // on the API: a state-changing request only as JSON from this app's page, and nothing without the launch's token.
  app.use('*', checkHost(port))
  app.use('/api/*', checkBrowserWrite(port))
  app.use('/api/*', requireToken(config.accessToken, port))
  // A shutting-down server takes no new work: the tab retries, and the next server answers.
  app.use('/api/*', async (c, next) => {
    if (stopping()) return c.json({ error: 'the server is shutting down; retry in a moment' }, 503)
    await next()
  })
  // Read at most this much of a request body: a task is at most MAX_PROMPT_CHARS characters (4 bytes each in UTF-8).
  app.use('/api/*', bodyLimit({ maxSize: MAX_PROMPT_CHARS * 4 + 4096, onError: (c) => c.json({ error: `the request body is too large; a task is at most ${MAX_PROMPT_CHARS} characters` }, 413) }))

  app.post('/api/run', async (c) => {
    const runId = c.req.query('runId')
    const body = (await c.req.json().catch(() => null)) as { threadId?: unknown; prompt?: unknown } | null
    if (!runId || !ID_PATTERN.test(runId) || typeof body?.threadId !== 'string' || !ID_PATTERN.test(body.threadId) || typeof body.prompt !== 'string' || body.prompt.trim() === '') {
      return c.json({ error: 'expected ?runId and a JSON body { threadId, prompt } (ids: letters, digits, _ and -)' }, 400)
    }
    const { threadId, prompt } = body as { threadId: string; prompt: string }
    if (prompt.length > MAX_PROMPT_CHARS) return c.json({ error: `the task is ${prompt.length} characters long; at most ${MAX_PROMPT_CHARS} are accepted` }, 413)
    // Accepting is one step at a time, on every server that shares the stores: two POSTs naming one id (or one
    // thread) cannot both pass the checks before either has created its record, so this request creates the run it
    // writes, never joins another's.
    const refused = await stores.locks.withLock(ACCEPT_LOCK_KEY, async () => {
      const active = await stores.runs.findActiveRun(threadId)
      if (active) return c.json({ error: `thread ${threadId} already has a live run, ${active.runId}: attach to it or cancel it first` }, 409)
      if (await stores.runs.get(runId)) return c.json({ error: `run ${runId} exists already: every run needs a new id` }, 409)
      const slot = await limiter.acquire(c.get('client'), runId)
      if (!slot.granted) return c.json({ error: slot.message }, 429)
      try {
        await prompts.save({ runId, threadId, prompt })
        // Created when the run is accepted, so an attach during the sandbox boot finds it.
        await stores.runs.createOrResume({ runId, threadId, startedAt: Date.now() })
      } catch (error) {
        slot.release() // no run was started
        throw error
      }
      return null
    })
    if (refused) return refused
    // ONE log for withSandbox and the transport, for the run checked above. Not stores.stream(c.req.raw): the
    // stores read X-Run-Id before ?runId, so a header could point this run's output into another run's log.
    const log = stores.stream({ runId })
    const abortController = new AbortController()
    const stream = agent.run({ runId, threadId, prompt, log, attach: false, abortController })
    return toServerSentEventsResponse(stream, { abortController, durability: { adapter: log, batch: 1 } })
  })

  app.get('/api/run', (c) => {
    const request = c.req.raw
    const runId = resolveResumeRunId(request)
    if (!runId || !ID_PATTERN.test(runId)) return c.json({ error: 'name the run: ?runId=… or an X-Run-Id header' }, 400)
    return resumeServerSentEventsResponse({
      adapter: stores.stream(request),
      driver: sandboxRunDriver({
        request,
        runs: stores.runs,
        locks: stores.locks,
        durability: (id) => stores.stream({ runId: id }),
        fenceQuietMs: config.fenceQuietMs,
        logger,
        drive: ({ runId: id, threadId, signal }) => {
          const stream = async function* () {
            // The client sent no history (it is reconnecting): load the run's prompt.
            const stored = await prompts.load(id)
            yield* agent.run({ runId: id, threadId, prompt: stored?.prompt ?? '', log: stores.stream({ runId: id }), attach: true, abortController: controllerFor(signal) })
          }
          return stream()
        },
      }),
    })
  })

  app.post('/api/run/cancel', async (c) => {
    const body = (await c.req.json().catch(() => null)) as { threadId?: unknown } | null
    if (typeof body?.threadId !== 'string' || !ID_PATTERN.test(body.threadId)) return c.json({ error: 'expected a JSON body { threadId } (letters, digits, _ and -)' }, 400)
    const active = await stores.runs.findActiveRun(body.threadId)
    if (!active) return c.json({ cancelled: null })
    // First what the agent has changed so far: both bands destroy the sandbox, and a stopped run never reaches the
    // point where withSandbox emits its file.changed diffs. Bounded (CAPTURE_TIMEOUT_MS); a Stop goes on without it.
    await stopped.capture(active)
    // Band 1: on the record, so a driver on any process sees it within cancelPollMs.
    await requestRunCancel(stores.runs, active.runId)
    // Band 2: in process, so a driver here stops at once.
    agent.driving.get(active.runId)?.abort(RUN_CANCEL_REASON)
    return c.json({ cancelled: active.runId })
  })

  app.get('/api/threads/:threadId', async (c) => {
    const threadId = c.req.param('threadId')
    if (!ID_PATTERN.test(threadId)) return c.json({ error: 'bad thread id' }, 400)
    const records = (await stores.runs.listByThread?.(threadId)) ?? []
    const runs = await Promise.all(records.map(async (record) => summary(record, (await prompts.load(record.runId))?.prompt, await runSandboxes.load(record.runId))))
    // `now`: the server's clock, so the page can show a live run's elapsed time from `startedAt` whatever its own clock says.
    return c.json({ threadId, runs, now: Date.now() })
  })

  // The thread's checkpoints, oldest first: one per successful run (withSandbox writes it after withPersistence saved the turn).
  app.get('/api/threads/:threadId/checkpoints', async (c) => {
    const threadId = c.req.param('threadId')
    if (!ID_PATTERN.test(threadId)) return c.json({ error: 'bad thread id' }, 400)
    const checkpoints = (await agent.snapshots.list(threadId)).map(checkpointSummary)
    return c.json({ threadId, checkpoints, latest: checkpoints.at(-1) ?? null })
  })

  // "Restore in a new sandbox": destroy the thread's sandbox (a failed run keeps its own for a while, and a run of the
  // thread before then would resume it with whatever that run left), so the next run gets a NEW private sandbox, which
  // withSandbox fills from the thread's latest checkpoint before the agent starts. Nothing is restored here: the
  // checkpoint named in the answer is the one the next run starts from. Under the accept lock, so no run of the thread
  // starts (and ensures the sandbox) while this checks and destroys.
  app.post('/api/threads/:threadId/restore', async (c) => {
    const threadId = c.req.param('threadId')
    if (!ID_PATTERN.test(threadId)) return c.json({ error: 'bad thread id' }, 400)
    return stores.locks.withLock(ACCEPT_LOCK_KEY, async () => {
      const active = await stores.runs.findActiveRun(threadId)
      if (active) return c.json({ error: `thread ${threadId} has a live run, ${active.runId}: stop it or let it finish, then restore` }, 409)
      const latest = await agent.snapshots.latest(threadId)
      if (!latest) {
        return c.json({ error: `thread ${threadId} has no checkpoint yet: one is written when a run of the thread completes, so there is nothing to restore from. Nothing was changed.` }, 409)
      }
      const destroyed = await agent.sandbox.destroy({ key: agent.sandbox.key({ threadId, runId: '' }), instances: stores.instances })
      return c.json({ threadId, checkpoint: checkpointSummary(latest), destroyedSandboxId: destroyed.destroyed ? destroyed.providerSandboxId : null })
    })
  })

  app.get('/api/runs/:runId/changes', async (c) => {
    const runId = c.req.param('runId')
    if (!ID_PATTERN.test(runId)) return c.json({ error: 'bad run id' }, 400)
    const changes = await stopped.load(runId)
    return changes ? c.json(changes) : c.json({ error: `no changes were captured for run ${runId} (it was not stopped, or it had no sandbox yet)` }, 404)
  })

  app.get('/api/status', async (c) => {
    const runs = (await Promise.all((await prompts.recent(20)).map(async (entry) => {
      const record = await stores.runs.get(entry.runId)
      return record ? summary(record, entry.prompt) : null
    }))).filter((run) => run !== null)
    const sandboxes = await agent.listSandboxes().catch(() => null) // null: the engine did not answer
    return c.json({ provider: config.provider, mode: config.apiKey ? 'live' : 'offline', reaper: reaper.status(), sandboxes, drivingHere: [...agent.driving.keys()], runs })
  })

  app.post('/api/status/sweep', async (c) => {
    await reaper.sweep()
    return c.json(reaper.status())
  })

  app.get('/api/sample', (c) => c.json({ task: SAMPLE_TASK, showTask: SHOW_TASK, files: Object.keys(SAMPLE_FILES), mode: config.apiKey ? 'live' : 'offline', provider: config.provider }))

  app.all('/api/*', (c) => c.json({ error: `no route ${c.req.method} ${new URL(c.req.url).pathname}` }, 404))

  // The built browser app. serveStatic reads only inside clientDir: it refuses `..` segments, backslashes and any
  // escape left after decoding (`..%2f`), so such a path gets the page. Any other path is the page too (a client route).
  app.get('*', async (c, next) => {
    const raw = new URL(c.req.url).pathname
    try {
      decodeURIComponent(raw)
    } catch {
      // A malformed escape (`/%`, `/%zz`) is the client's mistake: a 400, not a 500 with a URIError stack in the log.
      return c.text(`The path ${JSON.stringify(raw)} is not valid percent-encoding.`, 400)
    }
    for (const [name, value] of Object.entries(PAGE_HEADERS)) c.header(name, value)
    await next()
  })
  app.get('*', serveStatic({ root: config.clientDir }))
  app.get('*', serveStatic({ root: config.clientDir, path: 'index.html' }))
  app.get('*', (c) => c.text('The browser app is not built: run `pnpm --filter @example/sandbox-web build` (pnpm dev does it).', 500))

  return app
}

/**
 * On every file of the browser app: no page of another site may frame it (a framed Start is a click the developer
 * did not mean), and no request of the page sends its address onward (the first load's address holds the token).
 */
const PAGE_HEADERS = { 'x-frame-options': 'DENY', 'content-security-policy': "frame-ancestors 'none'", 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff' }
