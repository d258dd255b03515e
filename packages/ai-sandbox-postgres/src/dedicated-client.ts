/**
 * One pooled connection kept checked out while anyone needs it: the lease
 * connection of a lock store and the LISTEN connection of the stream tails.
 * Owns opening it lazily, returning it to the pool when the last user leaves
 * (so `pool.end()` is never kept waiting by an idle store), and telling its
 * users at once when the server or the network drops it. Invariant: a client
 * that failed is destroyed, never handed back to the pool or reused.
 */
import { databaseError, type PostgresClient, type PostgresContext } from './database.js'

/** A lazily opened, shared, checked-out connection. Internal. */
export class DedicatedClient {
  private client: Promise<PostgresClient> | null = null
  private users = 0
  private readonly lostListeners = new Set<(cause: unknown) => void>()
  private readonly detach = new WeakMap<PostgresClient, () => void>()
  /** The tail of the statements sent on this connection: one at a time, in call order (pg 9 refuses overlapping queries on a client). */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly ctx: PostgresContext,
    /** Runs on every fresh connection before it is used (e.g. LISTEN). */
    private readonly setup: (client: PostgresClient) => Promise<void> = async () => undefined,
    /** Whether a healthy connection goes back to the pool when the last user leaves (`false`: it holds session state such as LISTEN, so it is destroyed). */
    private readonly reusable = true,
  ) {}

  /** Count a user in; the connection stays checked out until every user called {@link leave}. */
  enter(): void {
    this.users++
  }

  /** Count a user out; the last one returns the connection to the pool. */
  leave(): void {
    this.users = Math.max(0, this.users - 1)
    if (this.users === 0) this.drop(undefined)
  }

  /** Call `listener` (until the returned function is called) whenever the open connection is lost. */
  onLost(listener: (cause: unknown) => void): () => void {
    this.lostListeners.add(listener)
    return () => this.lostListeners.delete(listener)
  }

  /** The open connection, opening (and setting up) one when there is none. */
  async connection(): Promise<PostgresClient> {
    if (this.client === null) {
      const opening = this.open()
      this.client = opening
      // A failed open is forgotten, so the next call tries again.
      opening.catch(() => {
        if (this.client === opening) this.client = null
      })
    }
    return this.client
  }

  /** One statement on the dedicated connection, after the ones called before it; its failure mapped to `PostgresDatabaseError`. */
  async query<R extends Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]> {
    const run = async (): Promise<R[]> => {
      const client = await this.connection()
      try {
        return (await client.query<R>(text, values)).rows
      } catch (cause) {
        throw databaseError(this.ctx, cause)
      }
    }
    const result = this.queue.then(run, run)
    this.queue = result.catch(() => undefined)
    return result
  }

  /** Destroy the connection (if open) and tell the users it is gone. */
  fail(cause: unknown): void {
    if (this.client === null) return
    this.drop(cause ?? new Error('the dedicated connection was closed'))
  }

  private async open(): Promise<PostgresClient> {
    let client: PostgresClient
    try {
      client = await this.ctx.pool.connect()
    } catch (cause) {
      throw databaseError(this.ctx, cause)
    }
    const opening = this.client
    // A checked-out client that errors with no listener would crash the process.
    const onError = (cause: Error): void => {
      if (this.client === opening) this.drop(cause)
    }
    const onEnd = (): void => {
      if (this.client === opening) this.drop(new Error('the server closed the connection'))
    }
    client.on('error', onError)
    client.on('end', onEnd)
    this.detach.set(client, () => {
      client.off('error', onError)
      client.off('end', onEnd)
    })
    try {
      await this.setup(client)
    } catch (cause) {
      client.release(cause instanceof Error ? cause : true)
      throw databaseError(this.ctx, cause)
    }
    return client
  }

  private drop(cause: unknown): void {
    const current = this.client
    if (current === null) return
    this.client = null
    current.then(
      (client) => {
        this.detach.get(client)?.()
        if (cause === undefined && this.reusable) return client.release()
        // Keep swallowing late socket errors of a destroyed client.
        client.on('error', () => undefined)
        client.release(true)
      },
      () => undefined,
    )
    if (cause !== undefined) for (const listener of [...this.lostListeners]) listener(cause)
  }
}
