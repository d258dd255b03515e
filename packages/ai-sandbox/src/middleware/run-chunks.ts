/**
 * The run's live chunk stream behind `SandboxRunChunksCapability`. Core queues
 * a `sandbox.file` chunk when the file events hand it an event, but drains
 * that queue only after the adapter yields a chunk; a `sandbox.flush` tick on
 * this stream, merged into the adapter's output, is that chunk, so the file
 * event reaches the client while the agent is silent. `withSandbox` drops the
 * tick in `onChunk`. Invariant: at most one tick is pending, and none is
 * delivered after `close()`.
 */
import { EventType, type StreamChunk } from '@tanstack/ai'

/** The `CUSTOM` tick that makes core drain its queued file chunks. Internal: `withSandbox` drops it, no client sees it. */
export const SANDBOX_FLUSH_EVENT = 'sandbox.flush'

/** One run's tick stream, from {@link createRunChunks}. */
export interface RunChunks {
  /**
   * What the adapter merges into its output; it ends at `close()`. Each
   * iteration (one per `chatStream` call of the run) reads the same ticks;
   * leaving one early (`return()`, as `mergeChunkStreams` does) only ends that one.
   */
  readonly stream: AsyncIterable<StreamChunk>
  /** Ask for one `sandbox.flush` tick; coalesced with a tick not yet read, kept for the next reader when none waits. Ignored after `close()`. */
  tick: () => void
  /** End the stream for every reader, dropping a pending tick. Idempotent. */
  close: () => void
}

const DONE: IteratorResult<StreamChunk> = { done: true, value: undefined }

/**
 * Make the tick stream of one run.
 * @example
 * ```ts
 * const chunks = createRunChunks()
 * provideSandboxRunChunks(ctx, chunks.stream)
 * chunks.tick() // after runtime.emit(event)
 * ```
 */
export function createRunChunks(): RunChunks {
  let pending = false
  let closed = false
  /** The one read waiting for a tick, and the reader it belongs to. */
  let waiting: { reader: object; resolve: (result: IteratorResult<StreamChunk>) => void } | undefined
  const settle = () => {
    if (!waiting || (!pending && !closed)) return
    const { resolve } = waiting
    waiting = undefined
    if (closed) return resolve(DONE)
    pending = false
    resolve({ done: false, value: { type: EventType.CUSTOM, name: SANDBOX_FLUSH_EVENT, value: {}, timestamp: Date.now() } })
  }
  const reader = (): AsyncIterator<StreamChunk> => {
    const self = {}
    let left = false
    return {
      next: () =>
        new Promise((resolve) => {
          // A reader that left, or a second read while another waits (a misuse), gets the end rather than a tick.
          if (left || closed || waiting) return resolve(DONE)
          waiting = { reader: self, resolve }
          settle()
        }),
      return: async () => {
        left = true
        if (waiting?.reader === self) {
          waiting.resolve(DONE)
          waiting = undefined
        }
        return DONE
      },
    }
  }
  return {
    stream: { [Symbol.asyncIterator]: reader },
    tick: () => {
      if (closed) return
      pending = true
      settle()
    },
    close: () => {
      closed = true
      pending = false
      settle()
    },
  }
}
