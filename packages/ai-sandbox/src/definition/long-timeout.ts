/**
 * A timer for durations longer than Node's `setTimeout` can hold. Node stores
 * delays as signed 32-bit integers: anything over 2^31-1 ms (about 24.8 days)
 * is replaced by 1 ms with a `TimeoutOverflowWarning`. This re-arms in chunks
 * of at most {@link MAX_TIMER_MS} until the whole delay has passed.
 * Invariant: no delay handed to `setTimeout` is ever above {@link MAX_TIMER_MS}.
 */

/** The longest delay Node's `setTimeout` honours, in ms (2^31-1, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** A pending {@link setLongTimeout}. */
export interface LongTimeout {
  /** Stop it; `fn` will not run. Idempotent. */
  cancel: () => void
}

/** The timer functions used; tests pass their own to see every delay. */
export interface TimerApi {
  setTimeout: (fn: () => void, ms: number) => { unref?: () => unknown }
  clearTimeout: (timer: never) => void
}

const nodeTimers: TimerApi = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer),
}

/**
 * Run `fn` once after `ms` milliseconds, however long that is. The timer does
 * not keep the process alive (`unref`).
 * @param ms - Delay in ms (finite, >= 0).
 * @returns A handle whose `cancel()` stops the timer.
 */
export function setLongTimeout(fn: () => void, ms: number, timers: TimerApi = nodeTimers): LongTimeout {
  const due = Math.max(0, ms)
  let waited = 0
  let current: ReturnType<TimerApi['setTimeout']> | undefined
  let cancelled = false
  const arm = () => {
    const chunk = Math.min(MAX_TIMER_MS, due - waited)
    current = timers.setTimeout(() => {
      waited += chunk
      if (cancelled) return
      if (waited >= due) fn()
      else arm()
    }, chunk)
    current.unref?.()
  }
  arm()
  return {
    cancel: () => {
      cancelled = true
      if (current) timers.clearTimeout(current as never)
      current = undefined
    },
  }
}
