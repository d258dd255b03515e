/**
 * The PostgreSQL a takeover suite or soak runs on, and its own schema there.
 * `TANSTACK_SANDBOX_PG_URL` when set (CI starts a server and sets it);
 * otherwise a throwaway server started with `scripts/postgres/start.sh` and
 * stopped by `release()`. It never decides skip or fail: it returns the stores
 * on a fresh schema, or why there are none, and the caller judges (a suite
 * fails under `REQUIRE_POSTGRES=1`, skips otherwise; a bench throws).
 * Invariant: `release()` drops the schema it created and stops only a server
 * it started.
 */
import { randomBytes } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createPostgresStores, type PostgresStores } from '@tanstack/ai-sandbox-postgres'

const SCRIPTS = fileURLToPath(new URL('../../../scripts/postgres/', import.meta.url))

/** A schema of the suite's own on a reachable PostgreSQL. */
export interface SuitePostgres {
  readonly url: string
  readonly schema: string
  /** Stores on that schema (migrated), for the suite's own reads. */
  readonly stores: PostgresStores
  /** Drop the schema, close the stores, stop the server if this call started it. Idempotent. */
  release(): Promise<void>
}

/** Start a throwaway server, or say why it did not start. */
function startServer(install: boolean): { url: string; stop: () => void } | { missing: string } {
  const dir = mkdtempSync(join(tmpdir(), 'pg-takeover-'))
  const envFile = join(dir, 'postgres.env')
  const started = spawnSync('bash', [join(SCRIPTS, 'start.sh'), envFile], { encoding: 'utf8', env: { ...process.env, ...(install ? {} : { PG_NO_INSTALL: '1' }) }, timeout: 300_000 })
  const stop = (): void => {
    spawnSync('bash', [join(SCRIPTS, 'stop.sh'), envFile], { encoding: 'utf8', timeout: 60_000 })
    rmSync(dir, { recursive: true, force: true })
  }
  const url = started.status === 0 ? /TANSTACK_SANDBOX_PG_URL=(\S+)/.exec(readFileSync(envFile, 'utf8'))?.[1] : undefined
  if (url !== undefined) return { url, stop }
  stop()
  const why = (started.stderr || started.error?.message || '').trim().split('\n').filter((line) => /ERROR|not found|refuse/i.test(line)).join('; ')
  return { missing: `TANSTACK_SANDBOX_PG_URL is unset and scripts/postgres/start.sh failed (${why || `exit ${started.status}`}); install PostgreSQL 13+ (apt-get install postgresql) or set TANSTACK_SANDBOX_PG_URL` }
}

/**
 * Find or start a PostgreSQL and open stores on a fresh schema named
 * `<prefix>_<random hex>` (PostgreSQL reserves names starting with `pg_`).
 * @param options.install - Let start.sh install PostgreSQL with apt when it is missing (default: only under `REQUIRE_POSTGRES=1`).
 * @returns The schema and its stores, or `{ missing }` naming what is not there.
 */
export async function suitePostgres(prefix: string, options: { install?: boolean } = {}): Promise<SuitePostgres | { missing: string }> {
  const given = process.env.TANSTACK_SANDBOX_PG_URL
  const server = given ? { url: given, stop: () => undefined } : startServer(options.install ?? process.env.REQUIRE_POSTGRES === '1')
  if ('missing' in server) return server
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`
  let stores: PostgresStores
  try {
    stores = await createPostgresStores({ connectionString: server.url, schema, maxConnections: 4 })
  } catch (error) {
    server.stop()
    // Only an unreachable server is "missing"; a server that refuses the schema is a failure.
    if ((error as { reason?: unknown }).reason !== 'connect-failed') throw error
    return { missing: `PostgreSQL at ${given ? 'TANSTACK_SANDBOX_PG_URL' : 'the server start.sh started'} does not answer (${(error as Error).message})` }
  }
  let released: Promise<void> | undefined
  return {
    url: server.url,
    schema,
    stores,
    release: () =>
      (released ??= (async () => {
        try {
          await stores.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        } finally {
          await stores.close()
          server.stop()
        }
      })()),
  }
}
