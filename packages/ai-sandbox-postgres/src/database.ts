/**
 * The connection side of the stores: where the tables live (one PostgreSQL
 * schema per app), the versioned migrations in `<schema>.schema_migrations`,
 * and the one path every query takes (closed check, driver errors mapped to
 * `PostgresDatabaseError`, transactions). The stores own their statements.
 * Invariant: migrations run under `pg_advisory_xact_lock`, so processes that
 * migrate at once apply each version exactly once.
 */
import pg from 'pg'
import { parseOptions } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { PostgresDatabaseError } from './errors.js'

/** A node-postgres pool, as the store factories take it. */
export type PostgresPool = pg.Pool

/** A pooled connection, checked out for a transaction or a LISTEN. */
export type PostgresClient = pg.PoolClient

/** The schema the tables live in when none is given. A schema of its own keeps them clear of your tables (`runs` is a common name). */
export const DEFAULT_SCHEMA = 'tanstack_sandbox'

/** A schema name the stores accept: lowercase letters, digits and `_`, starting with a letter or `_` but not `pg_` (reserved by PostgreSQL), at most 48 characters (so derived names stay under PostgreSQL's 63-byte limit). */
export const schemaName = z
  .string({ error: 'expected a PostgreSQL schema name as a string, e.g. "tanstack_sandbox"' })
  .regex(/^[a-z_][a-z0-9_]{0,47}$/, 'expected a lowercase schema name of letters, digits and _ (at most 48 characters, not starting with a digit), e.g. "tanstack_sandbox"')
  .refine((name) => !name.startsWith('pg_') && name !== 'information_schema', 'must not be "information_schema" or start with "pg_": PostgreSQL keeps those for itself; e.g. "tanstack_sandbox"')

/** The qualified, quoted names of the package's tables in one schema, and the NOTIFY channel of its stream logs. */
export interface PostgresTables {
  readonly schema: string
  readonly runs: string
  readonly locks: string
  readonly instances: string
  readonly streamLogs: string
  readonly streamChunks: string
  readonly migrations: string
  /** The LISTEN/NOTIFY channel that announces appends and closes of this schema's logs (payload: a digest of the run id). */
  readonly channel: string
}

/**
 * Default ms the server lets one of the stores' transactions sit idle between
 * two of its statements before it ends the session (`SET LOCAL
 * idle_in_transaction_session_timeout`). The stores send a transaction's
 * statements back to back, so only a paused or cut-off process reaches it;
 * it bounds how long such a process can keep a successor waiting on the row
 * locks it holds.
 */
export const DEFAULT_TRANSACTION_IDLE_TIMEOUT_MS = 5000

/** What every store holds: the pool, the tables, and whether the store set was closed. Internal. */
export interface PostgresContext {
  readonly pool: PostgresPool
  readonly tables: PostgresTables
  /** See {@link DEFAULT_TRANSACTION_IDLE_TIMEOUT_MS}. */
  readonly transactionIdleTimeoutMs: number
  /** True once `close()` of the store set ran (or the pool was ended). */
  readonly isClosed: () => boolean
}

/** Options every factory takes. */
export interface PostgresSchemaOptions {
  /** The schema the tables live in (default {@link DEFAULT_SCHEMA}); two apps sharing a database give each its own. */
  schema?: string
}

function tablesOf(schema: string): PostgresTables {
  const q = (name: string): string => `"${schema}"."${name}"`
  return {
    schema,
    runs: q('runs'),
    locks: q('locks'),
    instances: q('instances'),
    streamLogs: q('stream_logs'),
    streamChunks: q('stream_chunks'),
    migrations: q('schema_migrations'),
    channel: `${schema}__stream`,
  }
}

/** The context of a factory called with a bare pool. Internal. */
export function contextOf(pool: PostgresPool, schema: string | undefined, factory: string, extra: { isClosed?: () => boolean; transactionIdleTimeoutMs?: number | undefined } = {}): PostgresContext {
  const name = parseOptions(z.object({ schema: schemaName.optional() }), { schema }, factory).schema ?? DEFAULT_SCHEMA
  const { isClosed } = extra
  return {
    pool,
    tables: tablesOf(name),
    transactionIdleTimeoutMs: extra.transactionIdleTimeoutMs ?? DEFAULT_TRANSACTION_IDLE_TIMEOUT_MS,
    isClosed: () => pool.ending || (isClosed?.() ?? false),
  }
}

/**
 * The schema, one entry per version: entry `i` migrates version `i` to `i + 1`.
 * Append new versions; never edit a shipped one. Times are epoch ms as the
 * records carry them (`double precision`, exact for every integer ms), except
 * the lease's `expires_at`, the database's own clock (`clock_timestamp()`), so
 * no process's clock is trusted.
 */
const MIGRATIONS: ReadonlyArray<(t: PostgresTables) => string> = [
  (t) => `
  CREATE TABLE ${t.runs} (
    run_id text NOT NULL PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    thread_id text NOT NULL,
    status text NOT NULL,
    started_at double precision NOT NULL,
    finished_at double precision,
    error jsonb,
    usage jsonb,
    sandbox_key text,
    detached_since double precision,
    cancel_requested boolean,
    driver_epoch bigint
  );
  CREATE INDEX runs_by_thread ON ${t.runs} (thread_id, started_at, seq);
  CREATE INDEX runs_detached ON ${t.runs} (detached_since) WHERE status = 'running' AND detached_since IS NOT NULL;
  CREATE TABLE ${t.locks} (
    key text NOT NULL PRIMARY KEY,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL
  );
  CREATE TABLE ${t.instances} (
    key text NOT NULL PRIMARY KEY,
    provider text NOT NULL,
    provider_sandbox_id text NOT NULL,
    latest_snapshot_id text,
    thread_id text NOT NULL,
    latest_run_id text,
    updated_at double precision NOT NULL
  );
  CREATE TABLE ${t.streamLogs} (
    run_id text NOT NULL PRIMARY KEY,
    next_seq bigint NOT NULL DEFAULT 0,
    closed_at double precision
  );
  CREATE TABLE ${t.streamChunks} (
    run_id text NOT NULL,
    seq bigint NOT NULL,
    chunk text NOT NULL,
    PRIMARY KEY (run_id, seq)
  );
  `,
  // 2: portable snapshots (snapshot-stores.ts). checkpoint_refs counts the checkpoints naming a blob (current
  // artifacts are counted from snapshot_artifacts); put_at is the blob's last put, whole epoch ms of the database
  // clock (bigint: never a record field), the age listUnreferenced and delete compare with olderThanMs; a lease row
  // outlives its release so the fence only grows, and its expires_at is epoch ms of the database clock.
  (t) => `
  CREATE TABLE "${t.schema}".snapshot_messages (
    thread_id text NOT NULL,
    seq integer NOT NULL,
    message text NOT NULL,
    PRIMARY KEY (thread_id, seq)
  );
  CREATE TABLE "${t.schema}".snapshot_blobs (
    sha256 text NOT NULL PRIMARY KEY,
    bytes bytea NOT NULL,
    checkpoint_refs bigint NOT NULL DEFAULT 0,
    put_at bigint NOT NULL DEFAULT 0
  );
  CREATE TABLE "${t.schema}".snapshot_artifacts (
    thread_id text NOT NULL,
    name text NOT NULL,
    media_type text NOT NULL,
    size bigint NOT NULL,
    sha256 text NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (thread_id, name)
  );
  CREATE INDEX snapshot_artifacts_by_blob ON "${t.schema}".snapshot_artifacts (sha256);
  CREATE TABLE "${t.schema}".snapshot_checkpoints (
    thread_id text NOT NULL,
    sequence integer NOT NULL,
    checkpoint_id text NOT NULL UNIQUE,
    parent_checkpoint_id text,
    kind text NOT NULL,
    run_id text,
    label text,
    manifest text NOT NULL,
    manifest_sha256 text NOT NULL,
    message_count integer NOT NULL,
    artifacts text NOT NULL,
    forked_from_thread_id text,
    forked_from_checkpoint_id text,
    created_at double precision NOT NULL,
    PRIMARY KEY (thread_id, sequence)
  );
  CREATE TABLE "${t.schema}".snapshot_leases (
    thread_id text NOT NULL PRIMARY KEY,
    fence bigint NOT NULL,
    owner text,
    token text,
    expires_at double precision
  );
  `,
]

/** The schema version this package writes (the highest `version` in `schema_migrations` after migrating). */
export const SCHEMA_VERSION = MIGRATIONS.length

/** What {@link migratePostgres} did: the version it found and the version it left. */
export interface MigrationResult {
  /** The schema version before (0: the schema had no tables of this package). */
  from: number
  /** The schema version now, {@link SCHEMA_VERSION}. */
  to: number
}

/**
 * Create or upgrade the package's tables in `schema` to {@link SCHEMA_VERSION}:
 * creates the schema if missing and records each applied version in
 * `<schema>.schema_migrations`. One transaction under
 * `pg_advisory_xact_lock`, so several processes migrating at once apply each
 * version exactly once; running it again is a no-op. Needs `CREATE` on the
 * database (or an existing schema you own).
 *
 * @param pool - A node-postgres `Pool`.
 * @param options - `schema` (default {@link DEFAULT_SCHEMA}).
 * @returns `{ from, to }`, the versions before and after.
 * @throws SandboxConfigError naming `migratePostgres.schema` when the schema name is invalid.
 * @throws PostgresDatabaseError `schema-too-new` when a newer version of this package migrated the schema, `schema-conflict` when the schema holds another tool's `schema_migrations` table, `connect-failed` or `query-failed` when the server refused.
 * @example
 * ```ts
 * import pg from 'pg'
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * const { from, to } = await migratePostgres(pool, { schema: 'agent_runs' })
 * ```
 */
export async function migratePostgres(pool: PostgresPool, options: PostgresSchemaOptions = {}): Promise<MigrationResult> {
  const ctx = contextOf(pool, options.schema, 'migratePostgres')
  const t = ctx.tables
  return transaction(ctx, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`@tanstack/ai-sandbox-postgres:migrate:${t.schema}`])
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${t.schema}"`)
    await client.query(`CREATE TABLE IF NOT EXISTS ${t.migrations} (version integer NOT NULL PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
    await assertOwnLedger(client, t.schema)
    const { rows } = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${t.migrations}`)
    const from = rows[0]?.version ?? 0
    if (from > SCHEMA_VERSION) {
      throw new PostgresDatabaseError(
        'schema-too-new',
        t.schema,
        `The PostgreSQL schema "${t.schema}" has version ${from}, newer than the ${SCHEMA_VERSION} this version of @tanstack/ai-sandbox-postgres knows. Upgrade @tanstack/ai-sandbox-postgres in every process that uses it.`,
      )
    }
    for (let next = from; next < SCHEMA_VERSION; next++) {
      await client.query(MIGRATIONS[next]!(t))
      await client.query(`INSERT INTO ${t.migrations} (version) VALUES ($1)`, [next + 1])
    }
    return { from, to: SCHEMA_VERSION }
  })
}

/**
 * Refuse a `schema_migrations` table another tool made (Rails, Knex, Flyway…
 * keep theirs under the same name, with a text `version` and no
 * `applied_at`): its versions are not ours, and reading them as ours would
 * report the schema as too new, or skip migrations.
 */
async function assertOwnLedger(client: PostgresClient, schema: string): Promise<void> {
  const { rows } = await client.query<{ column_name: string; data_type: string }>(
    `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'schema_migrations'`,
    [schema],
  )
  const types = new Map(rows.map((row) => [row.column_name, row.data_type]))
  if (types.get('version') === 'integer' && types.has('applied_at')) return
  const found = rows.map((row) => `${row.column_name} ${row.data_type}`).join(', ')
  throw new PostgresDatabaseError(
    'schema-conflict',
    schema,
    `The PostgreSQL schema "${schema}" already has a schema_migrations table that is not this package's (columns: ${found}), most likely another tool's migrations. Give the stores a schema of their own, e.g. createPostgresStores({ schema: "${DEFAULT_SCHEMA}" }) or migratePostgres(pool, { schema: "${DEFAULT_SCHEMA}" }); nothing was changed.`,
  )
}

/** Throw {@link PostgresDatabaseError} `closed` when the store set or its pool was closed. Internal. */
export function assertOpen(ctx: PostgresContext): void {
  if (ctx.isClosed()) {
    throw new PostgresDatabaseError('closed', ctx.tables.schema, `The PostgreSQL stores on schema "${ctx.tables.schema}" are closed (or their pool was ended). Create new stores to keep using the database.`)
  }
}

/** One statement on a pooled connection, its failure mapped to {@link PostgresDatabaseError}. Internal. */
export async function query<R extends pg.QueryResultRow = pg.QueryResultRow>(ctx: PostgresContext, text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
  assertOpen(ctx)
  try {
    return await ctx.pool.query<R>(text, values)
  } catch (cause) {
    throw databaseError(ctx, cause)
  }
}

/**
 * Run `fn` in one transaction on one checked-out connection: COMMIT when it
 * resolves, ROLLBACK when it throws (its error is rethrown; driver errors are
 * mapped to {@link PostgresDatabaseError}). Internal.
 */
export async function transaction<T>(ctx: PostgresContext, fn: (client: PostgresClient) => Promise<T>): Promise<T> {
  assertOpen(ctx)
  let client: PostgresClient
  try {
    client = await ctx.pool.connect()
  } catch (cause) {
    throw databaseError(ctx, cause)
  }
  let broken: unknown
  // The server may end the session between two statements (idle timeout, pg_terminate_backend): without a listener the
  // client's 'error' event would crash the process. The next statement then rejects, and the client is destroyed.
  const onError = (error: Error): void => {
    broken = error
  }
  client.on('error', onError)
  try {
    // One round trip: the simple-query protocol runs both statements.
    await client.query(`BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${Math.floor(ctx.transactionIdleTimeoutMs)}`)
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    try {
      await client.query('ROLLBACK')
    } catch (rollback) {
      // The connection itself failed: destroy it rather than return it to the pool.
      broken = rollback
    }
    throw databaseError(ctx, error)
  } finally {
    client.off('error', onError)
    client.release(broken instanceof Error ? broken : undefined)
  }
}

/** Map a driver error to {@link PostgresDatabaseError}; errors of this package and core pass through. Internal. */
export function databaseError(ctx: PostgresContext, cause: unknown): unknown {
  if (cause instanceof Error && 'reason' in cause && typeof (cause as { reason?: unknown }).reason === 'string') return cause
  const schema = ctx.tables.schema
  if (ctx.isClosed()) return new PostgresDatabaseError('closed', schema, `The PostgreSQL stores on schema "${schema}" are closed (or their pool was ended). Create new stores to keep using the database.`, { cause })
  const code = (cause as { code?: unknown } | null)?.code
  const message = cause instanceof Error ? cause.message : String(cause)
  if (code === '42P01' || code === '3F000') {
    return new PostgresDatabaseError('schema-missing', schema, `The tables of @tanstack/ai-sandbox-postgres are missing in schema "${schema}" (${message}). Run migratePostgres(pool, { schema: "${schema}" }) or create the stores with migrate: true.`, { cause })
  }
  // A SQLSTATE (five characters) is the server refusing a statement; anything else never reached it.
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08') && !code.startsWith('57P') && code !== '28P01' && code !== '28000' && code !== '3D000') {
    return new PostgresDatabaseError('query-failed', schema, `PostgreSQL refused a statement of the stores on schema "${schema}": ${message} (SQLSTATE ${code}).`, { cause })
  }
  return new PostgresDatabaseError('connect-failed', schema, `Cannot reach PostgreSQL for the stores on schema "${schema}": ${message}. Check the connection string and that the server is running.`, { cause })
}
