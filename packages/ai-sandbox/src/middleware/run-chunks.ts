/**
 * The run's live chunk stream behind `SandboxRunChunksCapability`: a
 * `sandbox.flush` tick, merged into the adapter's output, lets a queued file
 * event reach the client while the agent is silent. Invariant: at most one
 * tick is pending, and none is delivered after `close()`.
 * Design notes: docs/design/with-sandbox.md
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
