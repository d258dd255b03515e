/**
 * The two lifecycle helpers of a Grok Build run: an event queue that the wire
 * tap fills and the shared run loop drains (arrival order kept, ends once
 * closed and empty, or throws what `fail` was given), and the CLI's settling
 * after its turn (stdin closed, a grace period to exit, then its process
 * group killed). Invariant: `settleProcess` never returns while the CLI still runs.
 */
import type { ProcessExit, SpawnedProcess } from '@tanstack/ai-sandbox'

/** A queue of events read once as an async iterable. */
export interface EventQueue<T> {
  /** Append one event; ignored after `end()`. */
  push: (event: T) => void
  /** No more events: the stream ends after what is queued. Idempotent. */
  end: () => void
  /** End the stream with `error`, thrown after what is queued. */
  fail: (error: unknown) => void
  readonly stream: AsyncIterable<T>
}

/**
 * Make an event queue.
 * @example
 * ```ts
 * const q = createEventQueue<unknown>(); q.push(entry); q.end(); for await (const e of q.stream) use(e)
 * ```
 */
export function createEventQueue<T>(): EventQueue<T> {
  const items: T[] = []
  let ended = false
  let failure: { error: unknown } | undefined
  let wake: (() => void) | undefined
  const notify = () => {
    const w = wake
    wake = undefined
    w?.()
  }
  return {
    push(event) {
      if (ended) return
      items.push(event)
      notify()
    },
    end() {
      ended = true
      notify()
    },
    fail(error) {
      if (ended) return
      failure = { error }
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
          if (failure) throw failure.error
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
