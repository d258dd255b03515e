/**
 * One run at a time per sandbox: runs of one thread (one sandbox key) in this
 * process take turns, held from setup to the terminal hook. In-process only.
 * Invariant: at most one turn per key is held; a run aborted while waiting
 * stops waiting. Design notes: docs/design/with-sandbox.md
 */

/** The tail of each key's queue: resolves when the last run queued so far has ended. Per definition object. */
const tails = new WeakMap<object, Map<string, Promise<void>>>()

/**
 * Wait for the turn of `key` under `definition`.
 *
 * @param definition - The sandbox definition (runs of two definitions never wait for each other).
 * @param key - The sandbox key of the run.
 * @param signal - The run's abort signal: an abort stops the wait.
 * @param onWait - Called once when the run has to wait (for a log line).
 * @returns The release of the turn; idempotent. Call it when the run ended, or when its setup failed.
 */
export async function queueThreadRun(definition: object, key: string, signal: AbortSignal | undefined, onWait?: () => void): Promise<() => void> {
  let byKey = tails.get(definition)
  if (!byKey) tails.set(definition, (byKey = new Map()))
  const previous = byKey.get(key)
  let release!: () => void
  const done = new Promise<void>((resolve) => (release = resolve))
  const tail = (previous ?? Promise.resolve()).then(() => done)
  byKey.set(key, tail)
  const map = byKey
  let released = false
  const releaseTurn = () => {
    if (released) return
    released = true
    release()
    // The last run of the key leaves no entry behind.
    void tail.then(() => {
      if (map.get(key) === tail) map.delete(key)
    })
  }
  if (previous) {
    onWait?.()
    await untilAborted(previous, signal)
  }
  return releaseTurn
}

/** `promise`, or earlier when `signal` aborts. */
function untilAborted(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return promise
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const onAbort = () => resolve()
    signal.addEventListener('abort', onAbort, { once: true })
    void promise.then(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    })
  })
}
