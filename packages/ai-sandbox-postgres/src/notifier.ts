/**
 * Tail wake-ups over LISTEN/NOTIFY: ONE listening connection per pool, fanned
 * out in-process by channel (per schema) and run. Owns re-LISTEN after a drop.
 * Not the only signal: readers also re-query every `recheckMs`. Invariant:
 * after every (re)connect and LISTEN, every waiting reader is woken.
 * Design notes: docs/design/stores.md
 */
import { createHash } from 'node:crypto'
import type { PostgresContext, PostgresPool } from './database.js'
import { DedicatedClient } from './dedicated-client.js'

/** One reader's wake-up flag: set by a notification (or a reconnect), consumed by {@link TailSubscription.wait}. */
interface Waiter {
  notified: boolean
  wake: (() => void) | undefined
}

/** A reader's handle on the wake-ups of one run. Internal. */
export interface TailSubscription {
  /** Resolves once the listening connection is in place (or failed: the reader then relies on `recheckMs`). Never rejects. */
  readonly ready: Promise<void>
  /** Wait until a notification for the run came since the last wait, `ms` passed, or `signal` aborted. */
  wait: (ms: number, signal: AbortSignal | undefined) => Promise<void>
  /** Stop listening for this reader. Idempotent. */
  close: () => void
}

/** The md5 digest of a run id, hex: the NOTIFY payload (PostgreSQL's `md5(run_id)`). */
export function runDigest(runId: string): string {
  return createHash('md5').update(runId, 'utf8').digest('hex')
}

const RECONNECT_MIN_MS = 50
const RECONNECT_MAX_MS = 2000

/** The shared listener of one pool. Internal. */
class Notifier {
  private readonly waiters = new Map<string, Map<string, Set<Waiter>>>()
  private readonly client: DedicatedClient
  private listening = new Set<string>()
  private reconnectDelay = RECONNECT_MIN_MS
  private reconnectTimer: NodeJS.Timeout | undefined
  private down = false

  constructor(ctx: PostgresContext) {
    this.client = new DedicatedClient(
      ctx,
      async (client) => {
        this.listening = new Set()
        client.on('notification', (message) => this.deliver(message.channel, message.payload ?? ''))
        for (const channel of this.waiters.keys()) await this.listen(client, channel)
      },
      false,
    )
    this.client.onLost(() => {
      // Notifications sent while nobody listened are gone: wake everyone to re-query, then listen again.
      this.listening = new Set()
      this.wakeAll()
      this.scheduleReconnect()
    })
  }

  subscribe(channel: string, runId: string): TailSubscription {
    const digest = runDigest(runId)
    const waiter: Waiter = { notified: false, wake: undefined }
    let byRun = this.waiters.get(channel)
    if (byRun === undefined) this.waiters.set(channel, (byRun = new Map()))
    let set = byRun.get(digest)
    if (set === undefined) byRun.set(digest, (set = new Set()))
    set.add(waiter)
    this.client.enter()
    let closed = false
    const ready = this.ensure(channel)
    return {
      ready,
      wait: async (ms, signal) => {
        if (waiter.notified || signal?.aborted) {
          waiter.notified = false
          return
        }
        await new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(timer)
            signal?.removeEventListener('abort', done)
            waiter.wake = undefined
            resolve()
          }
          const timer = setTimeout(done, ms)
          signal?.addEventListener('abort', done, { once: true })
          waiter.wake = done
        })
        waiter.notified = false
      },
      close: () => {
        if (closed) return
        closed = true
        set.delete(waiter)
        if (set.size === 0) byRun.delete(digest)
        if (byRun.size === 0) this.waiters.delete(channel)
        this.client.leave()
        if (this.waiters.size === 0) clearTimeout(this.reconnectTimer)
      },
    }
  }

  /** Stop for good (the pool is being ended): destroy the connection, never reconnect, wake every reader. */
  shutdown(): void {
    this.down = true
    clearTimeout(this.reconnectTimer)
    this.client.fail(new Error('the stores were closed'))
    this.wakeAll()
  }

  /** Wake every reader of `channel` (all channels when omitted): they re-query. */
  wakeAll(channel?: string): void {
    for (const [name, byRun] of this.waiters) if (channel === undefined || name === channel) for (const set of byRun.values()) for (const waiter of set) this.notify(waiter)
  }

  private deliver(channel: string, digest: string): void {
    const set = this.waiters.get(channel)?.get(digest)
    if (set) for (const waiter of set) this.notify(waiter)
  }

  private notify(waiter: Waiter): void {
    waiter.notified = true
    waiter.wake?.()
  }

  /** Open the connection if needed and LISTEN on `channel`; never rejects (a failure schedules a reconnect). */
  private async ensure(channel: string): Promise<void> {
    if (this.down) return
    try {
      const client = await this.client.connection()
      if (!this.listening.has(channel)) await this.listen(client, channel)
      this.reconnectDelay = RECONNECT_MIN_MS
    } catch {
      this.client.fail(new Error('LISTEN failed'))
      this.scheduleReconnect()
    }
  }

  private async listen(client: { query: (text: string) => Promise<unknown> }, channel: string): Promise<void> {
    await client.query(`LISTEN "${channel}"`)
    this.listening.add(channel)
  }

  private scheduleReconnect(): void {
    if (this.down || this.waiters.size === 0 || this.reconnectTimer !== undefined) return
    const delay = this.reconnectDelay
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, RECONNECT_MAX_MS)
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined
      if (this.waiters.size === 0) return
      // ensure() catches its own failures; the catch keeps any other one from rejecting unhandled.
      Promise.all([...this.waiters.keys()].map((channel) => this.ensure(channel)))
        .then(() => this.wakeAll())
        .catch(() => this.scheduleReconnect())
    }, delay)
    this.reconnectTimer.unref()
  }
}

const notifiers = new WeakMap<PostgresPool, Notifier>()

/** The shared listener of `ctx.pool`, created on first use. Internal. */
export function notifierOf(ctx: PostgresContext): Notifier {
  let notifier = notifiers.get(ctx.pool)
  if (notifier === undefined) notifiers.set(ctx.pool, (notifier = new Notifier(ctx)))
  return notifier
}
