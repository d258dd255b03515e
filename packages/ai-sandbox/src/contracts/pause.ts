/**
 * `pause(ms, signal)`: wait, ending early (without an error) when `signal`
 * aborts, for poll loops that check the signal themselves afterwards. Built on
 * `node:timers/promises`; the one copy core's loops share.
 */
import { setTimeout as delay } from 'node:timers/promises'

/**
 * Wait `ms` milliseconds, or until `signal` aborts, whichever comes first.
 * Never rejects: an abort just ends the wait (the caller checks `signal`).
 * @param ms - Milliseconds; a negative value waits 0.
 */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve()
  return delay(Math.max(0, ms), undefined, signal ? { signal } : undefined).catch(() => undefined)
}
