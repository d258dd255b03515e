/**
 * The lock-store kit's ground: what it checks (`LockStores`, the settings,
 * the check and entry types) and the helpers its checks share (unique keys,
 * bounded waits, deferreds, call counting, "the key is free again").
 */
import type { LockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { expect } from 'vitest'
import type { LockProbe } from '../../reaper/orphans.js'

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

export const DEFAULT_WAIT_MS = 5000

/** How long a check keeps a key held to see that a waiter stays out. */
export const HOLD_MS = 50

const RUN = randomUUID().slice(0, 8)

/** A key unique to this run and call; `name` comes last, so keys that differ only in it are still distinct keys. */
export function lockKey(name: string): string {
  return `lock-conformance:${RUN}:${randomUUID().slice(0, 8)}:${name}`
}

function waitOf(settings: LockStoreCheckSettings | undefined): number {
  return settings?.waitMs ?? DEFAULT_WAIT_MS
}

export function peerOf(stores: LockStores): LockStore {
  return stores.peer ?? stores.locks
}

/** `store.isHeld`, bound, or `undefined` on a store without it. */
export function probeOf(store: LockStore): ((key: string) => Promise<boolean>) | undefined {
  const isHeld = (store as LockStore & Partial<LockProbe>).isHeld
  return typeof isHeld === 'function' ? isHeld.bind(store) : undefined
}

/** The lease of `settings`, or a failure naming the missing setting. */
export function leaseOf(settings: LockStoreCheckSettings | undefined, check: string): number {
  const leaseMs = settings?.leaseMs
  if (leaseMs === undefined) throw new Error(`${check}: needs settings.leaseMs, the lease of the stores under test (the lease checks apply to lease-backed stores only)`)
  return leaseMs
}

/** Block the event loop for `ms`: no timer of the holder (a renewal) can run, as in a paused process. */
export function stopFor(ms: number): void {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // blocked on purpose
  }
}

export interface Deferred<T> {
  readonly promise: Promise<T>
  resolve: (value: T) => void
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/** Await `promise`, failing naming `rule` when it does not settle within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, rule: string): Promise<T> {
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
export function lostLeaseHint(signal: AbortSignal | undefined, who: string): string {
  if (!signal?.aborted) return ''
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason)
  return ` (${who}'s own signal had aborted by then, with ${JSON.stringify(reason)}: it lost its lease while it ran; if nothing took the key from it, something stalled past the lease: on a loaded machine give the stores a longer leaseMs)`
}

/** Resolve once `signal` aborts; fail naming `rule` after `ms`. */
export function untilAborted(signal: AbortSignal, ms: number, rule: string): Promise<void> {
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
export async function withCalls(settings: LockStoreCheckSettings | undefined, body: (calls: Calls, waitMs: number) => Promise<void>): Promise<void> {
  const calls = new Calls()
  const ms = waitOf(settings)
  try {
    await body(calls, ms)
  } finally {
    await calls.settle(ms)
  }
}

/** The key is free: `isHeld` is false through each handle that has it, and a new `withLock` through the peer enters. */
export async function expectFree(stores: LockStores, key: string, ms: number, after: string): Promise<void> {
  for (const [which, store] of [['locks', stores.locks], ['peer', peerOf(stores)]] as const) {
    const isHeld = probeOf(store)
    if (isHeld) expect(await within(isHeld(key), ms, `isHeld(key) resolves (${which})`), `isHeld(key) is false ${after}: a settled holder releases its key, it does not leave it to expire (${which})`).toBe(false)
  }
  expect(await within(peerOf(stores).withLock(key, async () => 'free'), ms, `withLock of a key enters ${after}`), `withLock of the key enters ${after}`).toBe('free')
}
