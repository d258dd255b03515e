/**
 * The `keepAlive` idle timer with durations longer than one `setTimeout` can
 * hold (2^31-1 ms, about 24.8 days). Vitest's fake timers reproduce Node's
 * overflow (a longer delay fires after 1 ms), so the first case fails on a
 * plain `setTimeout(destroy, keepAliveMs)`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { defineSandbox } from '../../src/index.js'
import { MAX_TIMER_MS, setLongTimeout, type TimerApi } from '../../src/definition/long-timeout.js'
import { memoryProvider } from '../testkit/memory-provider.js'

const DAY = 86_400_000

afterEach(() => {
  vi.useRealTimers()
})

/** A defined sandbox, ensured and released once, with a count of destroys. */
async function idleSandbox(keepAlive: string | number) {
  const provider = memoryProvider()
  const destroyed: string[] = []
  const sandbox = defineSandbox({ id: 'keep-alive', provider, lifecycle: { keepAlive }, hooks: { onDestroy: () => void destroyed.push('destroyed') } })
  const run = { threadId: 't1', runId: 'r1' }
  const handle = await sandbox.ensure(run)
  const key = sandbox.key(run)
  sandbox.release({ key })
  return { sandbox, provider, handle, key, run, destroyed }
}

describe('keepAlive beyond 2^31-1 ms', () => {
  it("keeps a '30d' sandbox for 30 days, then destroys it", async () => {
    vi.useFakeTimers()
    const { provider, handle, destroyed } = await idleSandbox('30d')
    await vi.advanceTimersByTimeAsync(1_000)
    expect(destroyed, 'not destroyed 1 s after the run').toEqual([])
    await vi.advanceTimersByTimeAsync(30 * DAY - 1_000 - 1)
    expect(destroyed, 'not destroyed 1 ms before 30 days').toEqual([])
    expect(await provider.resume({ id: handle.id })).not.toBeNull()
    await vi.advanceTimersByTimeAsync(1)
    expect(destroyed).toEqual(['destroyed'])
    expect(await provider.resume({ id: handle.id })).toBeNull()
  })

  it('a later run cancels a long timer, and the next release starts a new one', async () => {
    vi.useFakeTimers()
    const { sandbox, key, run, destroyed } = await idleSandbox(40 * DAY)
    await vi.advanceTimersByTimeAsync(39 * DAY)
    await sandbox.ensure(run) // cancels the timer
    await vi.advanceTimersByTimeAsync(2 * DAY)
    expect(destroyed, 'the cancelled timer did not fire at day 40').toEqual([])
    sandbox.release({ key })
    await vi.advanceTimersByTimeAsync(40 * DAY - 1)
    expect(destroyed).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(destroyed).toEqual(['destroyed'])
  })

  it('sandbox.destroy cancels a pending long timer', async () => {
    vi.useFakeTimers()
    const { sandbox, key, destroyed } = await idleSandbox('60d')
    await sandbox.destroy({ key })
    expect(destroyed).toEqual(['destroyed'])
    await vi.advanceTimersByTimeAsync(61 * DAY)
    expect(destroyed, 'no second destroy from the timer').toEqual(['destroyed'])
    expect(vi.getTimerCount()).toBe(0)
  })
})

describe('setLongTimeout', () => {
  /** Timers that record every delay and fire only when told. */
  function recordingTimers() {
    const delays: number[] = []
    const pending = new Map<number, () => void>()
    let next = 0
    const timers: TimerApi = {
      setTimeout: (fn, ms) => {
        delays.push(ms)
        const id = ++next
        pending.set(id, fn)
        return { id } as never
      },
      clearTimeout: (timer) => void pending.delete((timer as { id: number }).id),
    }
    const fireNext = () => {
      const [id, fn] = [...pending][0]!
      pending.delete(id)
      fn()
    }
    return { timers, delays, pending, fireNext }
  }

  it('never hands setTimeout more than 2^31-1 ms, and fires once after the whole delay', () => {
    const { timers, delays, fireNext } = recordingTimers()
    let fired = 0
    const total = 3 * MAX_TIMER_MS + 5
    setLongTimeout(() => fired++, total, timers)
    for (let i = 0; i < 3; i++) {
      fireNext()
      expect(fired, `not fired after chunk ${i + 1}`).toBe(0)
    }
    fireNext()
    expect(fired).toBe(1)
    expect(delays).toEqual([MAX_TIMER_MS, MAX_TIMER_MS, MAX_TIMER_MS, 5])
    expect(delays.reduce((a, b) => a + b, 0)).toBe(total)
  })

  it('uses one plain timer for short delays, and cancel stops it', () => {
    const { timers, delays, pending } = recordingTimers()
    let fired = 0
    const timer = setLongTimeout(() => fired++, 1_000, timers)
    expect(delays).toEqual([1_000])
    timer.cancel()
    timer.cancel()
    expect(pending.size).toBe(0)
    expect(fired).toBe(0)
  })
})
