/**
 * The store target: what a store package (SQLite, PostgreSQL) hands the
 * shared store suites of this folder. It says how to open the package's
 * stores on a fresh or a shared place (a database file, a schema), which
 * words its test names use, and which error classes it throws. Each package
 * builds one in its tests/helpers; every suite here takes it, so a case's
 * body is written once and runs against both stores.
 */
import type { RunStore, UpsertableStreamDurability } from '@tanstack/ai'
import type { LockStore } from '@tanstack/ai/locks'
import type { EpochFencedRunStore, EpochFencedStreamDurability, LockProbe, SandboxError, SandboxInstanceStore, SandboxSnapshotPersistence } from '@tanstack/ai-sandbox'

/** The stores the suites work on: what `createSqliteStores` and `createPostgresStores` both return. */
export interface SuiteStores {
  readonly runs: Required<RunStore> & EpochFencedRunStore
  readonly locks: LockStore & LockProbe
  readonly instances: SandboxInstanceStore
  /** The portable-snapshot persistence (messages, artifacts, blobs, checkpoints). */
  readonly snapshots: SandboxSnapshotPersistence
  stream(source: Request | { runId: string; offset?: string }): UpsertableStreamDurability & EpochFencedStreamDurability
  close(): void | Promise<void>
}

/** The options a suite opens stores with; each package's `open` takes these and its own. */
export interface SuiteOpenOptions {
  /** A place from `place()` (to open a second store set on it); a new place when omitted. */
  place?: string
  leaseMs?: number
  detectDeadHolders?: boolean
  firstChunkDeadlineMs?: number
}

/** The places of one describe block: removed after it, every store set opened on them closed after its test. */
export interface StorePlaces<S extends SuiteStores> {
  /** A new place: a database file name, a schema name. */
  place(): string
  /** Stores on a new place, or on `options.place`. */
  open(options?: SuiteOpenOptions): S | Promise<S>
}

/** One of the package's error classes: `isInstance` recognises its errors across copies, and they carry a `reason`. */
export interface StoreErrorClass {
  isInstance(value: unknown): value is SandboxError
}

/**
 * A store package as the suites see it. `P` is the package's own places
 * object (it may offer more than {@link StorePlaces}, for the cases that
 * stay in the package's file).
 */
export interface StoreTarget<S extends SuiteStores, P extends StorePlaces<S> = StorePlaces<S>> {
  /** In suite names: 'SQLite', 'PostgreSQL'. */
  readonly label: string
  /** The prefix of the package's factories, in suite names ('sqliteRunStore') and ids: 'sqlite', 'postgres'. */
  readonly prefix: string
  /** The words test names use for the package's way of sharing one database. */
  readonly words: {
    /** What several processes share: 'one database file', 'one PostgreSQL schema'. */
    readonly place: string
    /** Two store sets on one place: 'two connections to one file', 'two pools on one schema'. */
    readonly peers: string
    /** A second store set on the place: 'another connection', 'another pool'. */
    readonly peer: string
  }
  /** Its error classes: the database can no longer serve (`closed`, `corrupt-row`), a stream call was refused, a held lock was lost. */
  readonly errors: { readonly database: StoreErrorClass; readonly stream: StoreErrorClass; readonly lockLost: StoreErrorClass }
  /**
   * Register `body` as the describe block `name`, handing it the block's
   * places (PostgreSQL's need the server URL, known only inside its gate, and
   * register a skipped or failing test instead when there is none).
   */
  describe(name: string, body: (places: P) => void): void
}
