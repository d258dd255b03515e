/**
 * `createCloudflareSandboxAgent`: an app's whole Worker for agent runs on
 * Cloudflare, as spec 000 "Edge / serverless execution" splits it. A
 * trigger request starts a run and returns at once with its id; a
 * `Coordinator` Durable Object (one per run) drives it from its alarm, with
 * core's run driver writing into a `DurableObjectRunEventLog`; clients tail
 * the log over SSE from a cursor and reconnect with `Last-Event-ID`; cancel
 * is a request of its own. The run's state, log and sandbox instance live in
 * the object's storage, so an object the platform evicted or restarted picks
 * its run up again from its next alarm (a takeover through the run's
 * journal in the container). This module owns the routes, the config and
 * the object; the drive itself is drive.ts.
 */
import { isTerminalRunStatus, requestRunCancel, RUN_CANCEL_REASON, type AnyTextAdapter, type ModelMessage } from '@tanstack/ai'
import { assertValidRunId, SandboxConfigError, type SandboxDefinitionInput, type SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import type { CloudflareSandboxConfig, SandboxNamespaceBinding } from '../config.js'
import { Sandbox } from '../sandbox-class.js'
import { parseConfig } from '../errors.js'
import { timingSafeBearerEqualWeb } from './bearer.js'
import { destroyRunSandbox, runnerSource, type ColocatedDeps, type ColocatedRunnerCommand } from './colocated.js'
import { chatSource, driveRun, type ChatDeps, type DriveDeps, type StoredRunInput } from './drive.js'
import { durableObjectInstanceStore } from './durable-object-instance-store.js'
import { DurableObjectRunEventLog, type DurableObjectSqlStorage } from './durable-object-run-event-log.js'
import { runLogStore, type RunLogStore } from './run-log-bindings.js'
import { cursorOf, eventStreamResponse } from './sse.js'
import { serveToolCall } from './tools-route.js'

/** What a run's adapter (or runner) factory is told. */
export interface AgentRunInfo {
  readonly runId: string
  readonly threadId: string
}

/** Options both modes take. Every function gets the Worker's `env`, so secrets stay in bindings. */
interface AgentConfigBase<Env> {
  /** The bearer token every route requires (`Authorization: Bearer <token>`), e.g. `(env) => env.RUN_TOKEN`. */
  token: (env: Env) => string
  /** `cloudflareSandbox` options besides the binding (workdir, timeoutMs, env, …). */
  provider?: (env: Env) => Omit<CloudflareSandboxConfig, 'binding'>
  /** `chat()` tools. They run in the Coordinator; the agent calls them through the tool bridge (do-drives) or the runner's tools route (colocated). */
  tools?: (env: Env) => ReadonlyArray<unknown>
  /** Binding names in wrangler.jsonc. Default `{ coordinator: 'Coordinator', sandbox: 'Sandbox' }`. */
  bindings?: { coordinator?: string; sandbox?: string }
  /** Where the routes live. Default `/runs`. */
  basePath?: string
  /**
   * The origin the agent in the container reaches this Worker at (its tool
   * bridge or tools route), e.g. `(env) => env.PUBLIC_URL`. Default: the
   * origin of the trigger request, which is wrong behind a proxy that
   * rewrites it or when the trigger came to an address the container cannot reach.
   */
  publicUrl?: (env: Env) => string
  /** ms between the Coordinator's watchdog alarms while a run is driven: how soon a restarted object picks its run up again. Default 30 000. */
  heartbeatMs?: number
  /** How often a driven run re-reads its record for a cancel, ms. Default core's (1000). */
  cancelPollMs?: number
}

/** `mode: 'do-drives'`: the Coordinator Durable Object runs `chat()` with the harness adapter against the Cloudflare sandbox. */
export interface DoDrivesAgentConfig<Env = Record<string, unknown>> extends AgentConfigBase<Env> {
  mode: 'do-drives'
  /** The harness adapter of a run, e.g. `() => claudeCodeText('sonnet', { … })`. */
  adapter: (env: Env, run: AgentRunInfo) => AnyTextAdapter
  /** `defineSandbox` options besides the provider (workspace, policy, hooks, lifecycle). Default: a fresh sandbox per run, destroyed after it. */
  sandbox?: (env: Env) => Partial<Omit<SandboxDefinitionInput, 'provider'>>
}

/**
 * `mode: 'colocated'`: the harness and its tool bridge run in the container
 * (the app's runner module calls `runInContainerHarness` from `/runner`); the
 * Coordinator stores the run's events and executes the chat() tools the
 * runner sends back. A fresh sandbox per run, destroyed after it.
 */
export interface ColocatedAgentConfig<Env = Record<string, unknown>> extends AgentConfigBase<Env> {
  mode: 'colocated'
  /** How to start the runner in the container, e.g. `(env) => ({ command: 'node /app/runner.mjs', env: { ANTHROPIC_API_KEY: env.ANTHROPIC_API_KEY } })`. */
  runner: (env: Env, run: AgentRunInfo) => ColocatedRunnerCommand
}

/** Options of {@link createCloudflareSandboxAgent}: one of the two modes. */
export type CloudflareSandboxAgentConfig<Env = Record<string, unknown>> = DoDrivesAgentConfig<Env> | ColocatedAgentConfig<Env>

/** What {@link createCloudflareSandboxAgent} returns: the classes wrangler binds and the Worker's default export. */
export interface CloudflareSandboxAgent<Env> {
  /** The Durable Object class that drives runs; export it under the class name wrangler.jsonc gives (a SQLite class). */
  readonly Coordinator: new (ctx: unknown, env: Env) => { fetch(request: Request): Promise<Response>; alarm(): Promise<void> }
  /** The SDK's `Sandbox` Durable Object class; export it as `Sandbox`. */
  readonly Sandbox: typeof Sandbox
  /** The Worker's handler: `export default agent.worker`. */
  readonly worker: { fetch(request: Request, env: Env): Promise<Response> }
}

const fn = (what: string) => z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { message: `expected ${what}` })

const baseShape = {
  token: fn('a function (env) returning the bearer token the routes require, e.g. (env) => env.RUN_TOKEN'),
  provider: fn('a function (env) returning cloudflareSandbox options besides the binding').optional(),
  tools: fn('a function (env) returning the chat() tools').optional(),
  bindings: z.object({ coordinator: z.string().min(1).optional(), sandbox: z.string().min(1).optional() }, { message: 'expected { coordinator?, sandbox? } binding names' }).strict().optional(),
  basePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/, "expected a path such as '/runs' (no trailing slash)")
    .optional(),
  publicUrl: fn("a function (env) returning the Worker's public origin, e.g. (env) => env.PUBLIC_URL").optional(),
  heartbeatMs: z.number().int().min(1_000, 'expected at least 1000 ms').max(15 * 60_000, 'expected at most 15 minutes (an alarm handler runs at most that long)').optional(),
  cancelPollMs: z.number().int().positive().optional(),
}

const modeSchema = z
  .object({
    mode: z.enum(['do-drives', 'colocated'], {
      message: "expected 'do-drives' (the Coordinator Durable Object runs chat() against the Cloudflare sandbox) or 'colocated' (the harness runs in the container with runInContainerHarness from /runner)",
    }),
  })
  .passthrough()

const configSchemas = {
  'do-drives': z
    .object({
      ...baseShape,
      mode: z.literal('do-drives'),
      adapter: fn('a function (env, { runId, threadId }) returning the harness adapter, e.g. () => claudeCodeText(...)'),
      sandbox: fn('a function (env) returning defineSandbox options besides the provider').optional(),
      runner: z.undefined({ message: "do-drives takes no runner: the Coordinator runs chat() itself. Use mode 'colocated' to run the harness in the container" }).optional(),
    })
    .strict(),
  colocated: z
    .object({
      ...baseShape,
      mode: z.literal('colocated'),
      runner: fn("a function (env, { runId, threadId }) returning { command, env?, cwd? }: how to start your runner module in the container, e.g. () => ({ command: 'node /app/runner.mjs' })"),
      adapter: z.undefined({ message: 'colocated takes no adapter here: the harness runs in the container. Give it to runInContainerHarness({ adapter }) in your runner module' }).optional(),
      sandbox: z.undefined({ message: 'colocated takes no sandbox options here: the workspace is set up in the container. Give them to runInContainerHarness({ sandbox })' }).optional(),
    })
    .strict(),
}

const triggerSchema = z
  .object({
    threadId: z.string().min(1, 'expected a non-empty threadId').max(200).optional(),
    messages: z
      .array(
        z
          .object({
            role: z.enum(['user', 'assistant', 'tool'], { message: "expected role 'user', 'assistant' or 'tool'" }),
            content: z.union([z.string(), z.array(z.object({ type: z.string() }).passthrough()), z.null()], { message: 'expected content: a string, an array of content parts, or null' }),
          })
          .passthrough(),
        { message: 'expected messages: the ModelMessage[] of the run' },
      )
      .min(1, 'expected at least one message'),
  })
  .strict()

const INPUT_KEY = 'tsb-agent:input'
/** The largest trigger body, bytes: the run's input is one value in the Coordinator's storage (at most 2 MB there). */
const MAX_TRIGGER_BYTES = 1024 * 1024
/** How long a colocated run's journal reader may take to land its last call after the drive ended, before the sandbox goes anyway, ms. */
const SETTLE_BOUND_MS = 30_000

/**
 * Build an app's agent Worker: `{ Coordinator, Sandbox, worker }`. Routes
 * (each needs `Authorization: Bearer <token>`):
 *
 * - `POST {basePath}` `{ threadId?, messages }` → `202 { runId, threadId }`:
 *   the run is recorded and its Coordinator's alarm set; nothing waits for the agent.
 * - `GET {basePath}/:runId/events` → SSE: every event after the cursor
 *   (`Last-Event-ID`, else `?after=`, else from the start), `id` = its `seq`,
 *   `data` = the chunk; the stream ends when the run's log ends.
 * - `GET {basePath}/:runId` → the run's record (core's fields, `lastSeq`, `updatedAt`).
 * - `POST {basePath}/:runId/cancel` → `202`: records the cancel and aborts the
 *   run (core's `requestRunCancel` and `RUN_CANCEL_REASON`); a closed tab never cancels.
 *
 * The agent reaches the run's tools on `publicUrl` (default: the origin the
 * trigger request came to), with a per-run token of its own, not the app's:
 * do-drives at `{basePath}/:runId/tool-bridge/…` (MCP over the routed tool
 * bridge), colocated at `POST {basePath}/:runId/tools` (one
 * `ToolExecRequest` from the runner's `httpRemoteToolExecutor`, answered by
 * `executeHostTool`). In colocated mode the Coordinator launches
 * `runner.command` in a fresh sandbox through the run journal, with the run
 * request on its stdin, and stores each chunk the runner writes; the sandbox
 * is destroyed once the run ended. wrangler: the Coordinator and `Sandbox`
 * classes under `new_sqlite_classes`, `Sandbox` with its container image.
 *
 * @param config - See {@link CloudflareSandboxAgentConfig}.
 * @returns The classes and the Worker handler.
 * @throws SandboxConfigError naming the option when one is invalid.
 * @example
 * ```ts
 * const agent = createCloudflareSandboxAgent({
 *   mode: 'do-drives',
 *   adapter: () => claudeCodeText('sonnet'),
 *   token: (env) => env.RUN_TOKEN,
 * })
 * export const { Coordinator, Sandbox } = agent
 * export default agent.worker
 *
 * // colocated: the harness runs in the container (runner.mjs calls runInContainerHarness)
 * createCloudflareSandboxAgent({ mode: 'colocated', runner: () => ({ command: 'node /app/runner.mjs' }), token: (env) => env.RUN_TOKEN })
 * ```
 */
export function createCloudflareSandboxAgent<Env = Record<string, unknown>>(config: CloudflareSandboxAgentConfig<Env>): CloudflareSandboxAgent<Env> {
  const { mode } = parseConfig(modeSchema, config, '', 'createCloudflareSandboxAgent')
  parseConfig(configSchemas[mode] as z.ZodType, config, '', 'createCloudflareSandboxAgent')
  const basePath = config.basePath ?? '/runs'
  const coordinatorBinding = config.bindings?.coordinator ?? 'Coordinator'
  const sandboxBinding = config.bindings?.sandbox ?? 'Sandbox'
  const heartbeatMs = config.heartbeatMs ?? 30_000

  class Coordinator {
    readonly #storage: CoordinatorStorage
    readonly #env: Env
    readonly #log: DurableObjectRunEventLog
    readonly #runs: RunLogStore
    readonly #instances: SandboxInstanceStore
    /** do-drives: the chat() drive's parts, with the tool bridge of the run being driven. */
    readonly #chat: ChatDeps | undefined
    #driving: AbortController | undefined
    /** Whether this isolate has looked for a run to pick up (the first request after a restart does). */
    #looked = false

    constructor(ctx: unknown, env: Env) {
      this.#storage = (ctx as { storage: CoordinatorStorage }).storage
      this.#env = env
      this.#log = new DurableObjectRunEventLog(this.#storage)
      this.#runs = runLogStore(this.#log)
      this.#instances = durableObjectInstanceStore(this.#storage)
      this.#chat =
        config.mode === 'do-drives'
          ? {
              ...this.#driveDeps(),
              instances: this.#instances,
              adapter: (run) => config.adapter(env, run),
              tools: () => config.tools?.(env) ?? [],
              provider: () => this.#providerConfig(),
              sandbox: () => config.sandbox?.(env) ?? {},
            }
          : undefined
    }

    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url)
      // The Worker forwards two kinds of request: its own, to `https://coordinator/?action=…`, and the agent's tool
      // route under basePath. Anything else, and the other mode's tool route, is not served.
      if (url.pathname !== '/') {
        const segments = url.pathname.split('/')
        if (config.mode === 'do-drives' && segments.includes('tool-bridge')) return this.#chat?.bridge?.fetch(request) ?? Response.json({ error: 'this run serves no tool bridge now' }, { status: 404 })
        if (config.mode === 'colocated' && segments.at(-1) === 'tools') {
          const input = await this.#storage.get<StoredRunInput>(INPUT_KEY)
          const record = input ? await this.#log.get(input.runId) : null
          return serveToolCall(request, config.tools?.(this.#env) ?? [], input?.toolsToken, record !== null && isTerminalRunStatus(record.status))
        }
        return notFound()
      }
      const runId = url.searchParams.get('runId') ?? ''
      const action = url.searchParams.get('action')
      const log = this.#log
      if (action === 'start' && request.method === 'POST') return this.#start((await request.json()) as StoredRunInput)
      const record = await log.get(runId)
      if (!record) return Response.json({ error: `no run ${runId}` }, { status: 404 })
      if (!this.#looked) await this.#pickUp(record.status)
      if (action === 'record') return Response.json(record)
      if (action === 'events') {
        const after = cursorOf(request)
        if (after === undefined) return Response.json({ error: 'Last-Event-ID (or ?after=) must be an event id of this run: a whole number, -1 for the start' }, { status: 400 })
        return eventStreamResponse(log, runId, after, request.signal)
      }
      if (action === 'cancel' && request.method === 'POST') {
        // Both bands: the record reaches a drive that starts later, the abort the one running here now.
        if (!isTerminalRunStatus(record.status)) await requestRunCancel(this.#runs, runId)
        this.#driving?.abort(RUN_CANCEL_REASON)
        return Response.json({ runId, cancelRequested: !isTerminalRunStatus(record.status) }, { status: 202 })
      }
      return notFound()
    }

    async alarm(): Promise<void> {
      this.#looked = true
      const input = await this.#storage.get<StoredRunInput>(INPUT_KEY)
      if (!input) return
      // Driven here already: only keep the watchdog going.
      if (this.#driving) return void (await this.#storage.setAlarm(Date.now() + heartbeatMs))
      const record = await this.#log.get(input.runId)
      if (!record || isTerminalRunStatus(record.status)) return void (await this.#finish(input.runId))
      // The watchdog: should this object die mid-drive, the next alarm takes the run over.
      await this.#storage.setAlarm(Date.now() + heartbeatMs)
      const attach = input.started === true
      if (!attach) await this.#storage.put(INPUT_KEY, { ...input, started: true })
      const controller = new AbortController()
      this.#driving = controller
      try {
        const runner = this.#chat ? undefined : runnerSource(this.#colocatedDeps(), input)
        await driveRun(this.#driveDeps(), input, runner?.source ?? chatSource(this.#chat!, input), { attach, controller })
        await runner?.settled(SETTLE_BOUND_MS)
      } finally {
        this.#driving = undefined
      }
      const after = await this.#log.get(input.runId)
      if (after && isTerminalRunStatus(after.status)) await this.#finish(input.runId)
    }

    /** The run is over: its colocated sandbox goes (do-drives: withSandbox destroyed it), and so does the watchdog. */
    async #finish(runId: string): Promise<void> {
      if (config.mode === 'colocated') await destroyRunSandbox(this.#colocatedDeps(), runId)
      await this.#storage.deleteAlarm()
    }

    /**
     * The first request an isolate serves for a run it does not drive: a run
     * still going (its object restarted or evicted) is picked up at once
     * from the alarm, instead of whenever the platform runs the watchdog alarm again.
     */
    async #pickUp(status: string): Promise<void> {
      this.#looked = true
      if (this.#driving || isTerminalRunStatus(status as never)) return
      await this.#storage.setAlarm(Date.now())
    }

    async #start(input: StoredRunInput): Promise<Response> {
      const existing = await this.#storage.get<StoredRunInput>(INPUT_KEY)
      if (existing) return Response.json({ runId: existing.runId, threadId: existing.threadId }, { status: 202 })
      await this.#log.open({ runId: input.runId, threadId: input.threadId })
      await this.#storage.put(INPUT_KEY, input)
      await this.#storage.setAlarm(Date.now())
      return Response.json({ runId: input.runId, threadId: input.threadId }, { status: 202 })
    }

    #driveDeps(): DriveDeps {
      return { log: this.#log, runs: this.#runs, ...(config.cancelPollMs !== undefined ? { cancelPollMs: config.cancelPollMs } : {}) }
    }

    #colocatedDeps(): ColocatedDeps {
      const env = this.#env
      return {
        log: this.#log,
        instances: this.#instances,
        provider: () => this.#providerConfig(),
        runner: (run) => (config as ColocatedAgentConfig<Env>).runner(env, run),
        tools: () => config.tools?.(env) ?? [],
      }
    }

    #providerConfig(): CloudflareSandboxConfig {
      return { ...config.provider?.(this.#env), binding: bindingOf(this.#env, sandboxBinding, 'bindings.sandbox') }
    }
  }

  const worker = {
    async fetch(request: Request, env: Env): Promise<Response> {
      const url = new URL(request.url)
      if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) return notFound()
      const rest = url.pathname.slice(basePath.length).split('/').filter(Boolean)
      const stubOf = (runId: string) => {
        const coordinators = bindingOf(env, coordinatorBinding, 'bindings.coordinator') as unknown as CoordinatorNamespace
        return coordinators.get(coordinators.idFromName(runId))
      }
      // The agent's own route (do-drives: the tool bridge; colocated: the tools route) checks the run's own token: the
      // agent in the sandbox holds no app bearer. The other mode's route does not exist.
      const toolRoute = config.mode === 'do-drives' ? rest[1] === 'tool-bridge' : rest[1] === 'tools' && rest.length === 2
      if (toolRoute) return validRunId(rest[0]) ? stubOf(rest[0]!).fetch(request) : notFound()
      const token = config.token(env)
      if (typeof token !== 'string' || token === '') {
        return Response.json({ error: 'createCloudflareSandboxAgent.token(env) returned no token, so every request is refused: set the secret it reads (e.g. wrangler secret put RUN_TOKEN).' }, { status: 500 })
      }
      if (!(await timingSafeBearerEqualWeb(request.headers.get('authorization'), token))) {
        return Response.json({ error: 'unauthorized: send Authorization: Bearer <token>' }, { status: 401, headers: { 'www-authenticate': 'Bearer' } })
      }
      if (rest.length === 0) {
        if (request.method !== 'POST') return Response.json({ error: 'method not allowed: use POST' }, { status: 405, headers: { allow: 'POST' } })
        const text = await request.text()
        if (new TextEncoder().encode(text).byteLength > MAX_TRIGGER_BYTES) {
          return Response.json({ error: `the trigger body is over ${MAX_TRIGGER_BYTES} bytes (the run's input is stored in the Coordinator's storage): send less, e.g. reference large files instead of inlining them` }, { status: 413 })
        }
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          return Response.json({ error: 'invalid trigger body: not JSON. Send { "threadId"?: string, "messages": [{ "role": "user", "content": "…" }] } with content-type application/json' }, { status: 400 })
        }
        const body = triggerSchema.safeParse(json)
        if (!body.success) return Response.json({ error: `invalid trigger body: ${body.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ')}` }, { status: 400 })
        const runId = `run-${crypto.randomUUID()}`
        const threadId = body.data.threadId ?? `thread-${crypto.randomUUID()}`
        const messages = body.data.messages as unknown as ModelMessage[]
        const runBase = `${publicOrigin(config.publicUrl ? config.publicUrl(env) : url.origin)}${basePath}/${runId}`
        const input: StoredRunInput =
          config.mode === 'do-drives' ? { runId, threadId, messages, bridgeUrl: `${runBase}/tool-bridge` } : { runId, threadId, messages, toolsUrl: `${runBase}/tools`, toolsToken: randomToken() }
        return stubOf(runId).fetch(new Request(`https://coordinator/?action=start`, { method: 'POST', body: JSON.stringify(input) }))
      }
      const [runId, action, extra] = rest
      const route = action === undefined ? { name: 'record', method: 'GET' } : action === 'events' ? { name: 'events', method: 'GET' } : action === 'cancel' ? { name: 'cancel', method: 'POST' } : undefined
      if (!validRunId(runId) || extra !== undefined || route === undefined) return notFound()
      if (request.method !== route.method) return Response.json({ error: `method not allowed: use ${route.method}` }, { status: 405, headers: { allow: route.method } })
      const target = (name: string) => {
        const inner = new URL(`https://coordinator/?action=${name}`)
        for (const [key, value] of url.searchParams) inner.searchParams.set(key, value)
        inner.searchParams.set('action', name)
        inner.searchParams.set('runId', runId!)
        return new Request(inner, { method: request.method, headers: request.headers, signal: request.signal })
      }
      return stubOf(runId).fetch(target(route.name))
    },
  }

  return { Coordinator, Sandbox, worker }
}

/** The Coordinator's storage: the SQL the logs use, and the key-value and alarm calls of the object itself. */
interface CoordinatorStorage extends DurableObjectSqlStorage {
  get<T>(key: string): Promise<T | undefined>
  put(key: string, value: unknown): Promise<void>
  setAlarm(at: number): Promise<void>
  deleteAlarm(): Promise<void>
}

interface CoordinatorNamespace {
  idFromName(name: string): unknown
  get(id: unknown): { fetch(request: Request): Promise<Response> }
}

/** The origin of a configured public URL (its path and a trailing slash dropped). */
function publicOrigin(value: unknown): string {
  try {
    return new URL(value as string).origin
  } catch {
    const what = typeof value === 'string' && value !== '' ? `${JSON.stringify(value)} is not an absolute URL` : 'it returned no URL (is the variable it reads set?)'
    throw new SandboxConfigError('createCloudflareSandboxAgent.publicUrl', `Invalid option createCloudflareSandboxAgent.publicUrl: ${what}. Return the Worker's origin, e.g. 'https://agent.example.workers.dev'.`)
  }
}

/** A per-run bearer: 32 random bytes, hex. */
function randomToken(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(32)), (byte) => byte.toString(16).padStart(2, '0')).join('')
}

function notFound(): Response {
  return Response.json({ error: 'not found' }, { status: 404 })
}

function validRunId(runId: string | undefined): runId is string {
  try {
    assertValidRunId(runId, 'runId')
    return true
  } catch {
    return false
  }
}

function bindingOf(env: unknown, name: string, field: string): SandboxNamespaceBinding {
  const binding = (env as Record<string, unknown> | undefined)?.[name] as SandboxNamespaceBinding | undefined
  if (typeof binding?.idFromName !== 'function' || typeof binding.get !== 'function') {
    throw new SandboxConfigError(`createCloudflareSandboxAgent.${field}`, `Invalid option createCloudflareSandboxAgent.${field}: env.${name} is not a Durable Object namespace. Bind it in wrangler.jsonc (durable_objects.bindings [{ name: '${name}', class_name: … }]) or name the binding you use in bindings.`)
  }
  return binding
}
