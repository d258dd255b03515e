/**
 * The two lifecycle helpers of a run: a chunk queue that the wire tap fills
 * and `chatStream` drains (arrival order kept, ends once closed and empty),
 * and the CLI's settling after its turn (stdin closed, a grace period to
 * exit, then its process group killed). Invariant: `settleProcess` never
 * returns while the CLI still runs.
 */
import type { AdapterYieldChunk } from '@tanstack/ai'
import type { ProcessExit, SpawnedProcess } from '@tanstack/ai-sandbox'

/** A queue of chunks read once as an async iterable. */
export interface ChunkQueue {
  /** Append chunks; ignored after `end()`. */
  push: (chunks: readonly AdapterYieldChunk[]) => void
  /** No more chunks: the stream ends after what is queued. Idempotent. */
  end: () => void
  readonly stream: AsyncIterable<AdapterYieldChunk>
}

/**
 * Make a chunk queue.
 * @example
 * ```ts
 * const q = createChunkQueue(); q.push([chunk]); q.end(); for await (const c of q.stream) use(c)
 * ```
 */
export function createChunkQueue(): ChunkQueue {
  const items: AdapterYieldChunk[] = []
  let ended = false
  let wake: (() => void) | undefined
  const notify = () => {
    const w = wake
    wake = undefined
    w?.()
  }
  return {
    push(chunks) {
      if (ended || chunks.length === 0) return
      items.push(...chunks)
      notify()
    },
    end() {
      ended = true
      notify()
    },
    stream: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          if (items.length > 0) {
            yield items.shift()!
            continue
          }
          if (ended) return
          await new Promise<void>((resolve) => (wake = resolve))
        }
      },
    },
  }
}

/**
 * Close the CLI's stdin (ACP agents exit on EOF), wait up to `graceMs` for it
 * to exit, then kill its process group and wait for that.
 * @returns How the process ended.
 */
export async function settleProcess(child: SpawnedProcess, graceMs: number): Promise<ProcessExit> {
  await child.stdin.end().catch(() => undefined) // already closed by the connection, or the process is gone
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)))
  try {
    const first = await Promise.race([child.wait(), late])
    if (first !== 'late') return first
    await child.kill()
    return await child.wait()
  } finally {
    clearTimeout(timer)
  }
}
