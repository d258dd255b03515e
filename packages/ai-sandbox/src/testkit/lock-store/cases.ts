/**
 * The lock-store kit's checks, each a plain function over `LockStores`:
 * exclusion, hand-over, independent keys, `isHeld`, and the lease (renewed
 * while held, expired when the holder is gone, and a lost holder that cannot
 * release the next one's lock). One file: seven checks over one context,
 * each short, read as a list.
 */
import type { LockStore } from '@tanstack/ai/locks'
import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'vitest'
import { deferred, expectFree, HOLD_MS, leaseOf, lockKey, lostLeaseHint, peerOf, probeOf, stopFor, untilAborted, withCalls, within, type Deferred, type LockStoreCheck } from './context.js'

/**
 * One holder at a time: 20 concurrent `withLock` calls on one key,
 * alternating between `locks` and `peer`, never have two callbacks inside at
 * once; each call waits for the key (none fails), runs its callback once, and
 * resolves with that callback's value. Waiters' order is not checked (the
 * contract names none; the SQL stores poll).
 */
export const checkLockExclusive: LockStoreCheck = (stores, settings) =>
  withCalls(settings, async (calls, ms) => {
    const key = lockKey('exclusive')
    let inside = 0
    let maxInside = 0
    const ran: number[] = []
    const signals: AbortSignal[] = []
    const enter = async (i: number, signal: AbortSignal): Promise<number> => {
      signals.push(signal)
      inside++
      maxInside = Math.max(maxInside, inside)
      ran.push(i)
      await sleep(2)
      inside--
      return i
    }
    const count = 20
    const settled = await within(
      Promise.allSettled(Array.from({ length: count }, (_, i) => calls.start((i % 2 === 0 ? stores.locks : peerOf(stores)).withLock(key, (signal) => enter(i, signal))))),
      ms * 4,
      `${count} concurrent withLock calls on one key all finish`,
    )
    for (const [i, outcome] of settled.entries()) {
      if (outcome.status === 'rejected') throw new Error(`Contract violated: withLock of a held key waits for it, it does not fail; call ${i} rejected with: ${String(outcome.reason)}`, { cause: outcome.reason })
    }
    expect(maxInside, `mutual exclusion: never two callbacks inside withLock of one key at once (up to ${maxInside} were)${lostLeaseHint(signals.find((signal) => signal.aborted), 'a holder')}`).toBe(1)
    expect(
      settled.map((outcome) => (outcome as PromiseFulfilledResult<number>).value),
      'each withLock resolves with the value its own callback resolved with',
    ).toEqual(Array.from({ length: count }, (_, i) => i))
    expect([...ran].sort((a, b) => a - b), 'each callback runs exactly once').toEqual(Array.from({ length: count }, (_, i) => i))
    await expectFree(stores, key, ms, 'after every holder settled')
  })

/**
 * A settled callback hands the key over: `fn` gets an `AbortSignal` that is
 * not aborted while it holds the key; a second `withLock` (through `peer`)
 * waits while the first callback runs; the first call rejects with the very
 * error its callback rejected with; then the waiter enters and its call
 * resolves with the very value its callback returned; and the key is free
 * afterwards.
 */
export const checkLockHandsOver: LockStoreCheck = (stores, settings) =>
  withCalls(settings, async (calls, ms) => {
    const key = lockKey('hand-over')
    const release = calls.gate()
    const entered = deferred<AbortSignal>()
    const thrown = new Error('thrown by the first holder')
    let abortedWhileHeld: boolean | undefined
    const first = calls.start(
      stores.locks.withLock(key, async (signal) => {
        entered.resolve(signal)
        await release.promise
        abortedWhileHeld = signal.aborted
        throw thrown
      }),
    )
    const signal = await within(entered.promise, ms, 'withLock of a free key calls fn')
    expect(signal instanceof AbortSignal, 'fn receives an AbortSignal').toBe(true)
    expect(signal.aborted, "a new holder's signal is not aborted").toBe(false)

    const value = { handedOver: true }
    let secondEntered = false
    let hint = ''
    const second = calls.start(
      peerOf(stores).withLock(key, async () => {
        secondEntered = true
        hint = lostLeaseHint(signal, 'the first holder')
        return value
      }),
    )
    await sleep(HOLD_MS)
    expect(secondEntered, `while a holder is inside fn, another withLock of the key waits${hint}`).toBe(false)

    release.resolve()
    const outcome = await within(
      first.then(
        () => 'resolved',
        (error: unknown) => error,
      ),
      ms,
      'withLock settles once fn settled',
    )
    expect(outcome, 'withLock rejects with the very error fn rejected with').toBe(thrown)
    expect(abortedWhileHeld, "a holder's signal is not aborted while it holds the key").toBe(false)
    expect(await within(second, ms, "once the holder's fn settled (here: rejected), the waiting withLock enters"), 'withLock resolves with the very value fn resolved with').toBe(value)
    await expectFree(stores, key, ms, 'after its holders settled')
  })

/**
 * Keys are independent and exact: eleven keys held at the same time, half
 * through each handle, none waiting for another. They differ only in case, a
 * trailing space, a `:1` suffix, or after their first 1000 characters, and
 * carry slashes, quotes, percent signs and unicode (real keys embed
 * caller-chosen run and thread ids). Every key is free afterwards.
 */
export const checkLockKeysIndependent: LockStoreCheck = (stores, settings) =>
  withCalls(settings, async (calls, ms) => {
    const long = 'k'.repeat(1000)
    const names = ['k', 'K', 'k ', 'k:1', 'a/b\\c', `quote'"\``, '%2F..%00', 'ünïcödé-ключ-🔑', 'with space', `${long}-one`, `${long}-two`]
    const base = lockKey('')
    const keys = names.map((name) => `${base}${name}`)
    const release = calls.gate()
    const entered = new Set<string>()
    const all = deferred()
    const holders = keys.map((key, i) =>
      calls.start(
        (i % 2 === 0 ? stores.locks : peerOf(stores)).withLock(key, async () => {
          entered.add(key)
          if (entered.size === keys.length) all.resolve()
          await release.promise
        }),
      ),
    )
    await within(all.promise, ms, 'keys are independent: a held key keeps out only callers of that exact key').catch((error: unknown) => {
      const missing = names.filter((_, i) => !entered.has(keys[i]!)).map((name) => JSON.stringify(name.length > 40 ? `${name.slice(0, 12)}…${name.slice(-8)}` : name))
      throw new Error(`${(error as Error).message}; these keys never entered while the others were held: ${missing.join(', ')}`)
    })
    release.resolve()
    await within(Promise.all(holders), ms, 'withLock settles once fn settled')
    for (const key of keys) await expectFree(stores, key, ms, 'after its holder settled')
  })

/**
 * `isHeld(key)` (`LockProbe`, optional; checked when the store has it): false
 * for a key nobody holds; true while a holder is inside `fn`, seen through
 * both handles; false for another key meanwhile; false again once `fn`
 * settled, whether it resolved or rejected (the key is released, not left to
 * expire); and asking never takes the key.
 *
 * @throws Error naming the method when the store has no `isHeld`.
 */
export const checkLockIsHeld: LockStoreCheck = (stores, settings) =>
  withCalls(settings, async (calls, ms) => {
    const isHeld = probeOf(stores.locks)
    if (!isHeld) throw new Error('checkLockIsHeld: this LockStore has no isHeld (LockProbe, optional); the check applies only to stores that implement it')
    const peerIsHeld = probeOf(peerOf(stores)) ?? isHeld
    const [key, other] = [lockKey('is-held'), lockKey('is-held-other')]
    expect(await within(isHeld(key), ms, 'isHeld resolves'), 'isHeld of a key nobody holds is false').toBe(false)
    expect(await within(peerOf(stores).withLock(key, async () => 'entered'), ms, 'withLock enters after isHeld'), 'isHeld does not take the key').toBe('entered')

    for (const ending of ['resolves', 'rejects'] as const) {
      const release = calls.gate()
      const entered = deferred()
      const held = calls.start(
        stores.locks.withLock(key, async () => {
          entered.resolve()
          await release.promise
          if (ending === 'rejects') throw new Error('the holder failed')
        }),
      )
      await within(entered.promise, ms, 'withLock of a free key calls fn')
      expect(await isHeld(key), 'isHeld is true while a holder is inside fn').toBe(true)
      expect(await peerIsHeld(key), "isHeld is true while a holder is inside fn, also through the other handle (another connection sees the holder's lease)").toBe(true)
      expect(await peerIsHeld(other), 'isHeld of another key is false while this one is held').toBe(false)
      release.resolve()
      await within(
        held.catch(() => undefined),
        ms,
        'withLock settles once fn settled',
      )
      expect(await isHeld(key), `isHeld is false once fn ${ending === 'resolves' ? 'resolved' : 'rejected'}: the key is released, not left to expire`).toBe(false)
      expect(await peerIsHeld(key), `isHeld is false once fn ${ending === 'resolves' ? 'resolved' : 'rejected'}, also through the other handle`).toBe(false)
    }
    await expectFree(stores, key, ms, 'after every holder settled')
  })

/**
 * A holder that keeps running keeps its key past the lease (lease-backed
 * stores; needs `leaseMs`): a callback inside for 2 × `leaseMs` (awaiting,
 * not blocking) keeps its signal quiet; `isHeld` (where present) is still
 * true after 1.5 × `leaseMs`; a waiter that started meanwhile through `peer`
 * enters only after that callback returned. `ensure` ignores its signal, so
 * a lease that ran out under a live holder would let two in.
 */
export const checkLockLeaseRenewed: LockStoreCheck = (stores, settings) =>
  withCalls(settings, async (calls, ms) => {
    const leaseMs = leaseOf(settings, 'checkLockLeaseRenewed')
    const key = lockKey('lease-renewed')
    const entered = deferred<AbortSignal>()
    let left = false
    let abortedInside: boolean | undefined
    const holder = calls.start(
      stores.locks.withLock(key, async (signal) => {
        entered.resolve(signal)
        await sleep(2 * leaseMs)
        abortedInside = signal.aborted
        left = true
      }),
    )
    const signal = await within(entered.promise, ms, 'withLock of a free key calls fn')
    await sleep(leaseMs / 2)
    let leftWhenWaiterEntered: boolean | undefined
    const waiter = calls.start(
      peerOf(stores).withLock(key, async () => {
        leftWhenWaiterEntered = left
      }),
    )
    await sleep(leaseMs)
    const isHeld = probeOf(peerOf(stores)) ?? probeOf(stores.locks)
    if (isHeld) expect(await isHeld(key), `isHeld is true while a holder still runs fn 1.5 × leaseMs (${1.5 * leaseMs} ms) after it entered: a live holder's lease is renewed${lostLeaseHint(signal, 'the holder')}`).toBe(true)
    await within(holder, ms + 2 * leaseMs, 'withLock settles once fn settled')
    expect(
      abortedInside,
      `a holder that keeps running keeps the key past leaseMs (${leaseMs} ms): its signal is not aborted (the lease is renewed while fn runs; on a loaded machine, an event loop stalled for most of the lease does this too: give the stores a longer leaseMs)`,
    ).toBe(false)
    await within(waiter, ms, 'the waiter enters once the holder left')
    expect(leftWhenWaiterEntered, `a waiter enters only after the holder left, also when the holder stayed inside for 2 × leaseMs (${2 * leaseMs} ms)${lostLeaseHint(signal, 'the holder')}`).toBe(true)
    await expectFree(stores, key, ms, 'after every holder settled')
  })

/**
 * A lease runs out when its holder stops (lease-backed stores; needs
 * `leaseMs`): a holder whose process blocks for 2 × `leaseMs` (no renewal can
 * run, as under SIGSTOP or a VM pause) has lost the key: `isHeld` (where
 * present) is false right after, another `withLock` (through `peer`) takes
 * the key while the first callback is still inside, and the stopped holder's
 * signal aborts (within `waitMs`; a paused process can learn it only once it
 * runs again, so not necessarily before the successor entered).
 */
export const checkLockLeaseExpires: LockStoreCheck = (stores, settings) =>
  withCalls(settings, async (calls, ms) => {
    const leaseMs = leaseOf(settings, 'checkLockLeaseExpires')
    const key = lockKey('lease-expires')
    const stopped = deferred<AbortSignal>()
    const release = calls.gate()
    const holder = calls.start(
      stores.locks.withLock(key, async (signal) => {
        stopFor(2 * leaseMs)
        stopped.resolve(signal)
        await release.promise // ignores the signal, as ensure's callback does
      }),
    )
    const signal = await within(stopped.promise, ms + 2 * leaseMs, 'withLock of a free key calls fn')
    const isHeld = probeOf(peerOf(stores)) ?? probeOf(stores.locks)
    if (isHeld) expect(await isHeld(key), `isHeld is false once the holder stopped for 2 × leaseMs (${2 * leaseMs} ms) without renewing: its lease ran out`).toBe(false)
    expect(
      await within(
        peerOf(stores).withLock(key, async () => 'successor'),
        ms,
        `another holder takes the key once the lease of a holder stopped for 2 × leaseMs (${2 * leaseMs} ms) ran out`,
      ),
    ).toBe('successor')
    await untilAborted(signal, ms, "the stopped holder's signal aborts once its lease ran out (ownership can no longer be guaranteed)")
    release.resolve()
    await within(
      holder.catch(() => undefined),
      ms,
      "the stopped holder's withLock settles once its fn settled",
    )
    await expectFree(stores, key, ms, 'after every holder settled')
  })

/**
 * A holder that lost its lease neither takes the key back nor releases it
 * (lease-backed stores; needs `leaseMs`). Holder A stops for 2 × `leaseMs`,
 * then stays inside `fn` ignoring its signal; B (through `peer`) takes the key;
 * A's signal aborts. While A is still inside, B leaves and C enters: A's
 * renewals do not take the key back. Then A's callback returns (its release)
 * while C holds: D, waiting, stays out (and `isHeld`, where present, stays
 * true) until C leaves. Neither the lost holder's renewals nor its release
 * touch another holder's lease.
 */
export const checkLockLostHolderCannotRelease: LockStoreCheck = (stores, settings) =>
  withCalls(settings, async (calls, ms) => {
    const leaseMs = leaseOf(settings, 'checkLockLostHolderCannotRelease')
    const key = lockKey('lost-holder')
    const peer = peerOf(stores)
    const holderGate = (): { entered: Deferred<AbortSignal>; release: Deferred<void> } => ({ entered: deferred<AbortSignal>(), release: calls.gate() })
    const [a, b, c, d] = [holderGate(), holderGate(), holderGate(), holderGate()]
    const inside = new Set<string>()
    const signals = new Map<string, AbortSignal>()
    const overlaps: string[] = []
    // A correct store aborts the signal of a holder that lost its lease under it (an event loop stalled past it):
    // said in a failure, so a loaded machine's failure reads as that and not as the rule the store broke.
    const lostHint = (name: string): string => lostLeaseHint(signals.get(name), name)
    let whenDEntered = ''
    const hold = (store: LockStore, name: string, gate: ReturnType<typeof holderGate>, stop = false): Promise<void> =>
      calls.start(
        store.withLock(key, async (signal) => {
          if (stop) stopFor(2 * leaseMs)
          // A, the lost holder, is inside beside B and C by design; the others must never overlap.
          for (const other of inside) if (name !== 'A' && other !== 'A') overlaps.push(`${name} entered while ${other} held the key${lostHint(other)}`)
          if (name === 'D') whenDEntered = lostHint('C')
          inside.add(name)
          signals.set(name, signal)
          gate.entered.resolve(signal)
          await gate.release.promise
          inside.delete(name)
        }),
      )

    const holderA = hold(stores.locks, 'A', a, true)
    const signalA = await within(a.entered.promise, ms + 2 * leaseMs, 'withLock of a free key calls fn')
    const holderB = hold(peer, 'B', b)
    await within(b.entered.promise, ms, `another holder takes the key once the lease of a holder stopped for 2 × leaseMs (${2 * leaseMs} ms) ran out`)
    await untilAborted(signalA, ms, "the lost holder's signal aborts once its lease ran out")
    await sleep(leaseMs) // A's renewals, if any still run, get three turns

    const holderC = hold(stores.locks, 'C', c)
    b.release.resolve()
    await within(holderB, ms, 'withLock settles once fn settled')
    await within(c.entered.promise, ms, "a waiter enters once the successor left, although the lost holder is still inside fn: the lost holder's renewals do not take the key back")

    const holderD = hold(peer, 'D', d)
    a.release.resolve()
    await within(holderA, ms, "the lost holder's withLock settles once its fn settled")
    await sleep(Math.max(leaseMs, HOLD_MS))
    expect(inside.has('D'), `a lost holder's release does not free the key another holder holds now: a waiter stays out while that holder is inside${whenDEntered}`).toBe(false)
    const isHeld = probeOf(peer) ?? probeOf(stores.locks)
    if (isHeld) expect(await isHeld(key), `isHeld stays true after the lost holder's release, while another holder is inside${lostHint('C')}`).toBe(true)
    c.release.resolve()
    await within(holderC, ms, 'withLock settles once fn settled')
    await within(d.entered.promise, ms, 'the waiter enters once the holder left')
    d.release.resolve()
    await within(holderD, ms, 'withLock settles once fn settled')
    expect(overlaps, 'mutual exclusion among the holders that have not lost the key').toEqual([])
    await expectFree(stores, key, ms, 'after every holder settled')
  })
