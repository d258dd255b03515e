/**
 * Live bridged-tool events as chat chunks: `createBridgeEventChannel` turns
 * {@link ToolBridgeEvent}s into `CUSTOM` chunks, `mergeChunkStreams` splices
 * them into the adapter's stream, `isBridgeCustomChunk` marks them out of band.
 * Invariant: the merged stream ends when the adapter's stream ends; it never
 * waits on the bridge. Design notes: docs/design/bridge.md
 */
import type { StreamChunk } from '@tanstack/ai'
import type { ToolBridgeEvent } from './tool-bridge-core.js'

/** `CUSTOM` event: a bridged tool started on the host. Value `{ toolCallId, toolName, input }`. */
export const TOOL_BRIDGE_CALL_EVENT = 'tool-bridge.call'
/** `CUSTOM` event: a bridged tool finished. Value `{ toolCallId, toolName, isError, content }` (`content` is what the agent got). */
export const TOOL_BRIDGE_RESULT_EVENT = 'tool-bridge.result'
/**
 * `CUSTOM` event: the agent cannot use the host tool bridge in this run, so the
 * `chat()` tools are missing from it. Value `{ server, status, reason }`:
 * `server` is the bridge's MCP server name (`tanstack`), `status` what the CLI
 * reported (`failed`, `needs-auth`, ...) or `not-contacted` when the run
 * finished without the agent ever reaching the bridge, `reason` a sentence for
 * people. The run loop also logs it as a warning.
 */
export const TOOL_BRIDGE_UNAVAILABLE_EVENT = 'tool-bridge.unavailable'

/** The value of a {@link TOOL_BRIDGE_UNAVAILABLE_EVENT} chunk. */
export interface ToolBridgeUnavailableValue {
  server: string
  status: string
  reason: string
}

/**
 * True for a {@link TOOL_BRIDGE_UNAVAILABLE_EVENT} chunk.
 * @example
 * ```ts
 * if (isBridgeUnavailableChunk(chunk)) console.warn(chunk.value)
 * ```
 */
export function isBridgeUnavailableChunk(chunk: StreamChunk): chunk is StreamChunk & { type: 'CUSTOM'; value: ToolBridgeUnavailableValue } {
  return chunk.type === 'CUSTOM' && (chunk as { name?: unknown }).name === TOOL_BRIDGE_UNAVAILABLE_EVENT
}

/** The value of a {@link TOOL_BRIDGE_CALL_EVENT} chunk. */
export interface ToolBridgeCallValue {
  toolCallId: string
  toolName: string
  input: unknown
}

/** The value of a {@link TOOL_BRIDGE_RESULT_EVENT} chunk. */
export interface ToolBridgeResultValue {
  toolCallId: string
  toolName: string
  isError: boolean
  content: string
}

/** A bridge chunk read back by {@link toolBridgeEventOf}. */
export type ToolBridgeChunkEvent = { name: typeof TOOL_BRIDGE_CALL_EVENT; value: ToolBridgeCallValue } | { name: typeof TOOL_BRIDGE_RESULT_EVENT; value: ToolBridgeResultValue }

/**
 * Read a chunk as a bridge call or result event. `chat()`'s chunk type lists
 * only `@tanstack/ai`'s own CUSTOM names, so this is the typed way in.
 * @returns `{ name, value }` for a `tool-bridge.call` or `tool-bridge.result` chunk, else `undefined`.
 * @example
 * ```ts
 * const event = toolBridgeEventOf(chunk)
 * if (event?.name === TOOL_BRIDGE_RESULT_EVENT) console.log(event.value.toolName, event.value.isError)
 * ```
 */
export function toolBridgeEventOf(chunk: StreamChunk): ToolBridgeChunkEvent | undefined {
  const { type, name, value } = chunk as { type: string; name?: unknown; value?: unknown }
  if (type !== 'CUSTOM' || typeof value !== 'object' || value === null) return undefined
  if (name === TOOL_BRIDGE_CALL_EVENT) return { name, value: value as ToolBridgeCallValue }
  if (name === TOOL_BRIDGE_RESULT_EVENT) return { name, value: value as ToolBridgeResultValue }
  return undefined
}

/** A queue of bridge events read as `CUSTOM` chunks. */
export interface BridgeEventChannel {
  /** Pass as the core's `onEvent`. Ignored after `close()`. */
  readonly onEvent: (event: ToolBridgeEvent) => void
  /** The chunks, in arrival order; ends once closed and drained. Iterate it once. */
  readonly stream: AsyncIterable<StreamChunk>
  /** End the stream after what is queued. Idempotent. */
  close: () => void
}

/**
 * Make a channel for one run's bridge events. A `call` becomes
 * {@link TOOL_BRIDGE_CALL_EVENT}, a `result` {@link TOOL_BRIDGE_RESULT_EVENT},
 * and an event a tool emits with `context.emitCustomEvent(name, value)` keeps
 * its name, with `toolCallId` added to its value (as `chat()` does).
 * @example
 * ```ts
 * const channel = createBridgeEventChannel()
 * const core = createToolBridgeCore({ tools, onEvent: channel.onEvent })
 * for await (const chunk of mergeChunkStreams(translated, channel.stream)) yield chunk
 * ```
 */
export function createBridgeEventChannel(): BridgeEventChannel {
  const queue: StreamChunk[] = []
  const waiting: ((result: IteratorResult<StreamChunk>) => void)[] = []
  let closed = false
  const settle = () => {
    while (waiting.length > 0 && (queue.length > 0 || closed)) {
      const next = queue.shift()
      waiting.shift()!(next ? { done: false, value: next } : { done: true, value: undefined })
    }
  }
  const iterator: AsyncIterator<StreamChunk> = {
    next: () =>
      new Promise((resolve) => {
        waiting.push(resolve)
        settle()
      }),
    return: async () => {
      closed = true
      queue.length = 0
      settle()
      return { done: true, value: undefined }
    },
  }
  return {
    onEvent: (event) => {
      if (closed) return
      queue.push(bridgeChunk(event))
      settle()
    },
    stream: { [Symbol.asyncIterator]: () => iterator },
    close: () => {
      closed = true
      settle()
    },
  }
}

function bridgeChunk(event: ToolBridgeEvent): StreamChunk {
  const { toolCallId, toolName } = event
  if (event.type === 'call') return custom(TOOL_BRIDGE_CALL_EVENT, { toolCallId, toolName, input: event.input } satisfies ToolBridgeCallValue)
  if (event.type === 'result') return custom(TOOL_BRIDGE_RESULT_EVENT, { toolCallId, toolName, isError: event.isError, content: event.content } satisfies ToolBridgeResultValue)
  return custom(event.name, { ...event.value, toolCallId })
}

function custom(name: string, value: object): StreamChunk {
  return { type: 'CUSTOM', name, value } as unknown as StreamChunk
}

/**
 * True for a chunk that may have come from live bridged-tool execution: any
 * `CUSTOM` chunk. Structural on purpose, so that a tool emitting a new event
 * name can never make a journal replay diverge; alignment skips such stored
 * chunks as out-of-band (bounded). To show bridge activity, match the names
 * {@link TOOL_BRIDGE_CALL_EVENT} and {@link TOOL_BRIDGE_RESULT_EVENT} instead.
 * @example
 * ```ts
 * const inBand = storedChunks.filter((chunk) => !isBridgeCustomChunk(chunk))
 * ```
 */
export function isBridgeCustomChunk(chunk: StreamChunk): boolean {
  return chunk.type === 'CUSTOM'
}

type Tagged<T> = { from: 'primary' | 'side'; result: IteratorResult<T> }

/**
 * Interleave `side` into `primary` in arrival order. Ends when `primary`
 * ends, after the `side` items that are ready at that moment; never waits for
 * `side` to end. Leaving early stops both (a pending `primary` read is left to
 * finish on its own, so the adapter must also abort its process).
 * @param primary - The adapter's translated chunks.
 * @param side - Usually a {@link BridgeEventChannel}'s `stream`.
 * @example
 * ```ts
 * yield* mergeChunkStreams(translatedChunks(), channel.stream)
 * ```
 */
export async function* mergeChunkStreams<T>(primary: AsyncIterable<T>, side: AsyncIterable<T>): AsyncGenerator<T> {
  const main = primary[Symbol.asyncIterator]()
  const extra = side[Symbol.asyncIterator]()
  const read = (from: Tagged<T>['from'], it: AsyncIterator<T>) => it.next().then((result): Tagged<T> => ({ from, result }))
  let mainRead: Promise<Tagged<T>> | undefined
  let sideRead: Promise<Tagged<T>> | undefined
  let mainDone = false
  let sideDone = false
  try {
    while (!mainDone) {
      mainRead ??= read('primary', main)
      if (!sideDone) sideRead ??= read('side', extra)
      const { from, result } = await Promise.race(sideRead && !sideDone ? [mainRead, sideRead] : [mainRead])
      if (from === 'primary') mainRead = undefined
      else sideRead = undefined
      if (result.done) {
        if (from === 'primary') mainDone = true
        else sideDone = true
        continue
      }
      yield result.value
    }
    while (!sideDone) {
      sideRead ??= read('side', extra)
      const ready = await Promise.race([sideRead, nextTurn()])
      if (ready === undefined) break
      sideRead = undefined
      if (ready.result.done) sideDone = true
      else yield ready.result.value
    }
  } finally {
    void sideRead?.catch(() => undefined)
    if (!sideDone) void Promise.resolve(extra.return?.()).catch(() => undefined)
    if (!mainDone) {
      if (mainRead) void mainRead.then(() => main.return?.(), () => undefined).catch(() => undefined)
      else await main.return?.()
    }
  }
}

/** Resolves after pending I/O callbacks, i.e. after every already-settled read. */
function nextTurn(): Promise<undefined> {
  return new Promise((resolve) => setImmediate(() => resolve(undefined)))
}
