/**
 * How a Coordinator drives its run, in either mode. The first drive pumps the
 * run's chunks into the Durable Object log with core's `RunController`. A
 * later drive (the object restarted or evicted mid-run) is a takeover: core's
 * `sandboxRunDriver` claims the run at a new epoch and drives it again, and
 * the source aligns to the stored log so its prefix is never written twice.
 * The sources: `chatSource` (do-drives: `chat()` with the harness against the
 * Cloudflare sandbox, durable through the run journal, host tools through a
 * tool bridge served from the object's own `fetch`) and colocated.ts's
 * `runnerSource` (the runner's journal in the container).
 */
import { chat, defineChatMiddleware, resumeServerSentEventsResponse, type AnyTextAdapter, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import {
  defineSandbox,
  provideToolBridgeProvisioner,
  routedToolBridge,
  RunController,
  sandboxRunDriver,
  ToolBridgeProvisionerCapability,
  withSandbox,
  type RoutedToolBridge,
  type SandboxDefinitionInput,
  type SandboxInstanceStore,
} from '@tanstack/ai-sandbox'
import type { CloudflareSandboxConfig } from '../config.js'
import { cloudflareSandbox } from '../provider.js'
import { objectLockStore } from './object-lock.js'
import { runLogStream, type RunLogStore } from './run-log-bindings.js'
import type { RunEventLog } from './vocabulary.js'

/** A run as the Coordinator stores it when the trigger arrives. */
export interface StoredRunInput {
  readonly runId: string
  readonly threadId: string
  readonly messages: ModelMessage[]
  /** do-drives: where the agent reaches the run's tool bridge (the Worker's origin the trigger came to). */
  readonly bridgeUrl?: string
  /** colocated: where the runner sends a tool execution, and the run's own bearer for it. */
  readonly toolsUrl?: string
  readonly toolsToken?: string
  /** Set once a drive started the agent: every later drive is a takeover. */
  readonly started?: boolean
}

/** A run's chunks, from the start of the run (`attach`: this is a takeover; the source aligns to the stored log). */
export type RunSource = (attach: boolean, abortController: AbortController) => AsyncIterable<StreamChunk>

/** What every drive needs from its Coordinator. */
export interface DriveDeps {
  readonly log: RunEventLog
  readonly runs: RunLogStore
  readonly cancelPollMs?: number
}

/** What a do-drives drive needs besides {@link DriveDeps}. */
export interface ChatDeps extends DriveDeps {
  readonly instances: SandboxInstanceStore
  readonly adapter: (run: { runId: string; threadId: string }) => AnyTextAdapter
  readonly tools: () => ReadonlyArray<unknown>
  readonly provider: () => CloudflareSandboxConfig
  readonly sandbox: () => Partial<Omit<SandboxDefinitionInput, 'provider'>>
  /** The tool bridge of the run being driven, served by the object's `fetch`. */
  bridge?: RoutedToolBridge
}

/** Quiescence window of a takeover, ms: the stored log must stop growing this long (no other writer) before the first append. */
const TAKEOVER_QUIET_MS = 2_000

/**
 * Drive the run to its end (or until `controller` aborts): the first drive
 * when `attach` is false, a takeover otherwise.
 */
export async function driveRun(deps: DriveDeps, input: StoredRunInput, source: RunSource, options: { attach: boolean; controller: AbortController }): Promise<void> {
  if (!options.attach) {
    const controller = new RunController({ runs: deps.runs, durability: (runId) => runLogStream(deps.log, { runId }) })
    const handle = controller.start({ runId: input.runId, threadId: input.threadId, stream: source(false, options.controller), signal: options.controller.signal })
    await handle.done
    return
  }

  const pending: Promise<unknown>[] = []
  // The attach request core's resume path reads: the run, and the cursor a reader would resume after (here: the stored tail).
  const tail = await deps.log.tail(input.runId)
  const request = new Request(`https://coordinator/run?runId=${encodeURIComponent(input.runId)}`, { headers: { 'last-event-id': String(tail?.lastSeq ?? -1) } })
  const response = resumeServerSentEventsResponse({
    adapter: runLogStream(deps.log, request),
    driver: sandboxRunDriver({
      request,
      runs: deps.runs,
      locks: objectLockStore(),
      durability: (runId) => runLogStream(deps.log, { runId }),
      fenceQuietMs: TAKEOVER_QUIET_MS,
      waitUntil: (promise) => void pending.push(promise),
      drive: ({ signal }) => {
        const follow = (): void => options.controller.abort(signal.reason)
        if (signal.aborted) follow()
        else signal.addEventListener('abort', follow, { once: true })
        return source(true, options.controller)
      },
    }),
  })
  // Nobody reads this response: clients tail the log. The drive goes on beside it, through waitUntil.
  await response.body?.cancel().catch(() => undefined)
  while (pending.length > 0) await pending.shift()!.catch(() => undefined)
}

/** do-drives: `chat()` with the harness adapter against a Cloudflare sandbox, durable through the run journal. */
export function chatSource(deps: ChatDeps, input: StoredRunInput): RunSource {
  // Built inside the stream, so a mistake in the app's config (a missing binding, an adapter factory that throws)
  // ends the run at once with a RUN_ERROR naming it, instead of failing every alarm.
  return async function* (attach, abortController) {
    const bridge = (deps.bridge ??= routedToolBridge({ publicUrl: input.bridgeUrl! }))
    const locks = objectLockStore()
    const definition = defineSandbox({ id: 'edge-agent', lifecycle: { reuse: 'none', snapshot: 'none' }, ...deps.sandbox(), provider: cloudflareSandbox(deps.provider()) })
    yield* chat({
      adapter: deps.adapter({ runId: input.runId, threadId: input.threadId }),
      runId: input.runId,
      threadId: input.threadId,
      messages: input.messages,
      tools: [...deps.tools()],
      middleware: [
        withSandbox(definition, { runs: deps.runs, locks, instances: deps.instances, durability: { adapter: runLogStream(deps.log, { runId: input.runId }), attach, ...(deps.cancelPollMs !== undefined ? { cancelPollMs: deps.cancelPollMs } : {}) } }),
        bridgeMiddleware(bridge),
      ],
      abortController,
    } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  }
}

/** Gives the harness the run's routed tool bridge (its URL and per-run token). */
function bridgeMiddleware(bridge: RoutedToolBridge) {
  return defineChatMiddleware({
    name: 'cloudflare-agent-tool-bridge',
    provides: [ToolBridgeProvisionerCapability],
    setup: (ctx) => provideToolBridgeProvisioner(ctx, bridge.provisioner),
  })
}
