/**
 * `runLockStoreConformance`: the `LockStore` contract of `@tanstack/ai/locks`
 * as a vitest suite, plus each check as a plain function. The contract is one
 * method, `withLock(key, fn)`: mutual exclusion around `fn` per key, and, for
 * a lease-backed store, `fn`'s `signal` aborts "as soon as ownership can no
 * longer be guaranteed". The kit checks that and what core relies on beside
 * it (`withLock` waits for a held key instead of failing, as the takeover kit
 * also requires), and nothing a store chooses for itself: no error class, no
 * abort reason, no order among waiters, no bound on how long a free key takes.
 * The contract names no bad input (any string is a key) and no typed error,
 * so the kit refuses nothing. Where the contract is silent the checks ask
 * only what core's `InMemoryLockStore` and this repository's SQLite and
 * PostgreSQL lock stores all do: `withLock` settles with `fn`'s own outcome
 * (the very value or error), and a holder that keeps running keeps its key
 * past the lease (callbacks that ignore `signal`, like `ensure`'s, stay
 * valid). The lease checks run only for a store that declares its `leaseMs`,
 * and the `isHeld` checks (`LockProbe`, this package's optional extension)
 * only where the store has the method. Keys are unique to the run, so a
 * shared database is fine. Source: `@tanstack/ai` 0.58.0
 * `activities/chat/middleware/locks.d.ts`.
 */
import type { LockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import type { LockProbe } from '../reaper/orphans.js'

/** What {@link runLockStoreConformance} checks: one lock store, through one or two handles. */
export interface LockStores {
  /** The lock store under test. */
  locks: LockStore
  /**
   * A second handle on the same keys (another connection, pool or process-local
   * instance over the same database), so exclusion and hand-over are proven
   * across handles. Default `locks`.
   */
  peer?: LockStore
  /** Called after each case, also a failed one (close connections, stop timers). */
  close?: () => void | Promise<void>
}

/** What the checks need to know of the store and how long they wait. */
export interface LockStoreCheckSettings {
  /**
   * The lease, in ms, of the stores `makeStores` builds, for a lease-backed
   * store. Required by the lease checks (they block the event loop for
   * 2 × `leaseMs` to stand in for a paused holder); skip them by leaving it
   * out. Give the stores under test a short lease (tens to a few hundred ms).
   */
  leaseMs?: number
  /** ms a check waits for a callback to enter, a call to settle or a signal to abort before it fails. Default 5000. */
  waitMs?: number
}

/** One check of the kit. */
export type LockStoreCheck = (stores: LockStores, settings?: LockStoreCheckSettings) => Promise<void>

/** One entry of {@link LOCK_STORE_CHECKS}: a title, the check, and what it needs: `isHeld` on the store, or a `lease` (`leaseMs`). */
export type LockStoreCheckEntry = readonly [title: string, check: LockStoreCheck, needs?: 'isHeld' | 'lease']

/** Options of {@link runLockStoreConformance}. */
export interface LockStoreConformanceOptions extends LockStoreCheckSettings {
  /** Build the stores under test; called before each case (after a skip is decided), and `close` after it. */
  makeStores: () => LockStores | Promise<LockStores>
  /** Timeout of each case, in ms. Default 30 000. */
  timeoutMs?: number
}

const DEFAULT_WAIT_MS = 5000

/** How long a check keeps a key held to see that a waiter stays out. */
const HOLD_MS = 50

const RUN = randomUUID().slice(0, 8)

/** A key unique to this run and call; `name` comes last, so keys that differ only in it are still distinct keys. */
function lockKey(name: string): string {
  return `lock-conformance:${RUN}:${randomUUID().slice(0, 8)}:${name}`
}

function waitOf(settings: LockStoreCheckSettings | undefined): number {
  return settings?.waitMs ?? DEFAULT_WAIT_MS
}

function peerOf(stores: LockStores): LockStore {
  return stores.peer ?? stores.locks
}

/** `store.isHeld`, bound, or `undefined` on a store without it. */
function probeOf(store: LockStore): ((key: string) => Promise<boolean>) | undefined {
  const isHeld = (store as LockStore & Partial<LockProbe>).isHeld
  return typeof isHeld === 'function' ? isHeld.bind(store) : undefined
}

/** The lease of `settings`, or a failure naming the missing setting. */
function leaseOf(settings: LockStoreCheckSettings | undefined, check: string): number {
  const leaseMs = settings?.leaseMs
  if (leaseMs === undefined) throw new Error(`${check}: needs settings.leaseMs, the lease of the stores under test (the lease checks apply to lease-backed stores only)`)
  return leaseMs
}

/** Block the event loop for `ms`: no timer of the holder (a renewal) can run, as in a paused process. */
function stopFor(ms: number): void {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // blocked on purpose
  }
}

interface Deferred<T> {
  readonly promise: Promise<T>
  resolve: (value: T) => void
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/** Await `promise`, failing naming `rule` when it does not settle within `ms`. */
async function within<T>(promise: Promise<T>, ms: number, rule: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Contract violated: ${rule}; it did not happen within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Said after a failed exclusion rule when the holder's own signal had aborted:
 * a lease-backed store that let a holder's lease run out under it (an event
 * loop stalled past the lease on a loaded machine) fails that rule too, and
 * the message should say so rather than only blame the store.
 */
function lostLeaseHint(signal: AbortSignal | undefined, who: string): string {
  if (!signal?.aborted) return ''
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason)
  return ` (${who}'s own signal had aborted by then, with ${JSON.stringify(reason)}: it lost its lease while it ran; if nothing took the key from it, something stalled past the lease: on a loaded machine give the stores a longer leaseMs)`
}

/** Resolve once `signal` aborts; fail naming `rule` after `ms`. */
function untilAborted(signal: AbortSignal, ms: number, rule: string): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return within(new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })), ms, rule)
}

/**
 * The `withLock` calls and gates of one check. On the way out (passed or
 * failed) every gate opens and every call gets up to `waitMs` to settle, so a
 * failing check leaves no callback parked and no rejection unhandled; what
 * still hangs after that is the store's `close()`'s to end.
 */
class Calls {
  private readonly started: Array<Promise<unknown>> = []
  private readonly gates: Array<Deferred<void>> = []

  /** A gate a callback waits on until the check opens it. */
  gate(): Deferred<void> {
    const gate = deferred()
    this.gates.push(gate)
    return gate
  }

  /** Track a `withLock` call; returns it unchanged. */
  start<T>(call: Promise<T>): Promise<T> {
    this.started.push(call.then(
      () => undefined,
      () => undefined,
    ))
    return call
  }

  async settle(ms: number): Promise<void> {
    for (const gate of this.gates) gate.resolve()
    await within(Promise.all(this.started), ms, 'every withLock call settles once its callback returns').catch(() => undefined)
  }
}

/** Run `body` with a fresh {@link Calls}, settling them whatever happens. */
async function withCalls(settings: LockStoreCheckSettings | undefined, body: (calls: Calls, waitMs: number) => Promise<void>): Promise<void> {
  const calls = new Calls()
  const ms = waitOf(settings)
  try {
    await body(calls, ms)
  } finally {
    await calls.settle(ms)
  }
}

/** The key is free: `isHeld` is false through each handle that has it, and a new `withLock` through the peer enters. */
async function expectFree(stores: LockStores, key: string, ms: number, after: string): Promise<void> {
  for (const [which, store] of [['locks', stores.locks], ['peer', peerOf(stores)]] as const) {
    const isHeld = probeOf(store)
    if (isHeld) expect(await within(isHeld(key), ms, `isHeld(key) resolves (${which})`), `isHeld(key) is false ${after}: a settled holder releases its key, it does not leave it to expire (${which})`).toBe(false)
  }
  expect(await within(peerOf(stores).withLock(key, async () => 'free'), ms, `withLock of a key enters ${after}`), `withLock of the key enters ${after}`).toBe('free')
}

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

/** Every check of the kit, in the order the suite runs them. A check with a third element needs `isHeld` on the store, or `leaseMs` (`lease`). */
export const LOCK_STORE_CHECKS: ReadonlyArray<LockStoreCheckEntry> = [
  ['one holder at a time: concurrent withLock calls of one key never overlap, and each waits instead of failing', checkLockExclusive],
  ["a settled callback hands the key over; withLock settles with fn's own value or error", checkLockHandsOver],
  ['keys are independent and exact (case, suffixes, unicode, 1000+ characters)', checkLockKeysIndependent],
  ['isHeld is true while a holder is inside, through either handle, and false once it settled', checkLockIsHeld, 'isHeld'],
  ['a holder that keeps running keeps the key past leaseMs, its signal quiet', checkLockLeaseRenewed, 'lease'],
  ["a stopped holder's lease runs out: another holder takes the key and the stopped holder's signal aborts", checkLockLeaseExpires, 'lease'],
  ['a holder that lost its lease neither takes the key back nor releases it', checkLockLostHolderCannotRelease, 'lease'],
]

const optionsSchema = z
  .object({
    makeStores: z.custom<LockStoreConformanceOptions['makeStores']>((v) => typeof v === 'function', { message: 'expected makeStores() returning { locks, peer?, close? }' }),
    leaseMs: z
      .number()
      .int('expected an integer number of milliseconds (the lease of the stores under test)')
      .positive('expected a lease in ms above 0')
      .max(5000, 'expected at most 5000 ms (the lease checks block the event loop for 2 × leaseMs: give the stores under test a short lease)')
      .optional(),
    waitMs: z.number().int().positive('expected a wait in ms above 0').optional(),
    timeoutMs: z.number().int().positive('expected a timeout in ms above 0').optional(),
  })
  .strict()

const isLockStore = (v: unknown): boolean => typeof v === 'object' && v !== null && typeof (v as Partial<LockStore>).withLock === 'function'
const storesSchema = z.object({
  locks: z.custom<LockStore>(isLockStore, { message: 'expected a LockStore (withLock(key, fn))' }),
  peer: z.custom<LockStore>(isLockStore, { message: 'expected a second LockStore handle on the same keys, or nothing' }).optional(),
  close: z.custom<() => void>((v) => typeof v === 'function', { message: 'expected a function, or nothing' }).optional(),
})

/**
 * Register the lock store kit as a vitest `describe` block: one test per
 * entry of {@link LOCK_STORE_CHECKS}. The `isHeld` test is skipped, naming
 * the method, on a store without it; the three lease tests are skipped,
 * naming `leaseMs`, when it is not given (core's `InMemoryLockStore` has no
 * lease). `makeStores` runs before each test and `close` after it. Keys are
 * unique per case, so a shared database is fine. Over a lease of 150 ms the
 * suite takes one to three seconds.
 *
 * @param name - Shown in the block title, e.g. `sqlite`.
 * @param options - `makeStores` (required), `leaseMs` (the stores' lease; no default: without it the lease tests are skipped), `waitMs` per wait inside a case (default 5000), `timeoutMs` per case (default 30 000).
 * @throws SandboxConfigError naming the option when one is invalid, and (in a test) `runLockStoreConformance.makeStores()` when what `makeStores` returned has no `locks.withLock`.
 * @example
 * ```ts
 * import { runLockStoreConformance } from '@tanstack/ai-sandbox/testkit'
 * import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'
 *
 * runLockStoreConformance('sqlite', {
 *   makeStores: () => {
 *     const [a, b] = [createSqliteStores({ path: './kit.db', leaseMs: 150 }), createSqliteStores({ path: './kit.db', leaseMs: 150 })]
 *     return { locks: a.locks, peer: b.locks, close: () => (a.close(), b.close()) }
 *   },
 *   leaseMs: 150,
 * })
 * ```
 */
export function runLockStoreConformance(name: string, options: LockStoreConformanceOptions): void {
  const parsed = parseOptions(optionsSchema, options, 'runLockStoreConformance')
  const timeoutMs = parsed.timeoutMs ?? 30_000
  const settings: LockStoreCheckSettings = { waitMs: parsed.waitMs ?? DEFAULT_WAIT_MS, ...(parsed.leaseMs === undefined ? {} : { leaseMs: parsed.leaseMs }) }
  describe(`lock store conformance: ${name}`, () => {
    for (const [title, check, needs] of LOCK_STORE_CHECKS) {
      it(
        title,
        async (context) => {
          if (needs === 'lease' && settings.leaseMs === undefined) context.skip('no leaseMs given (a lease-backed store declares its lease; core InMemoryLockStore has none)')
          const stores = await options.makeStores()
          try {
            parseOptions(storesSchema, stores, 'runLockStoreConformance.makeStores()')
            if (needs === 'isHeld' && !probeOf(stores.locks)) context.skip('the store has no isHeld (LockProbe, optional; consumers feature-detect it)')
            await check(stores, settings)
          } finally {
            await stores.close?.()
          }
        },
        timeoutMs,
      )
    }
  })
}
