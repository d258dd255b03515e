// Once per test run: the PostgreSQL the suites use. TANSTACK_SANDBOX_PG_URL
// when set (checked to answer); otherwise a temporary cluster started with
// scripts/postgres/start.sh and stopped (its folder removed) at teardown.
// When neither works, the reason is handed to the suites, which skip naming
// it, or fail under REQUIRE_POSTGRES=1 (CI). Never installs PostgreSQL
// unless REQUIRE_POSTGRES=1.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL URL the suites create their schemas in, or `null` when there is none. */
    postgresUrl: string | null
    /** Why there is no PostgreSQL (`null` when there is one). */
    postgresMissing: string | null
  }
}

const SCRIPTS = fileURLToPath(new URL('../../../scripts/postgres/', import.meta.url))

async function answers(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return null
  } catch (error) {
    return (error as Error).message
  } finally {
    await client.end().catch(() => undefined)
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const given = process.env.TANSTACK_SANDBOX_PG_URL
  if (given) {
    const problem = await answers(given)
    project.provide('postgresUrl', problem === null ? given : null)
    project.provide('postgresMissing', problem === null ? null : `PostgreSQL at TANSTACK_SANDBOX_PG_URL does not answer (${problem})`)
    return () => undefined
  }
  const dir = mkdtempSync(join(tmpdir(), 'pg-suite-'))
  const envFile = join(dir, 'postgres.env')
  const started = spawnSync('bash', [join(SCRIPTS, 'start.sh'), envFile], {
    encoding: 'utf8',
    env: { ...process.env, ...(process.env.REQUIRE_POSTGRES === '1' ? {} : { PG_NO_INSTALL: '1' }) },
    timeout: 300_000,
  })
  const url = started.status === 0 ? /TANSTACK_SANDBOX_PG_URL=(\S+)/.exec(readFileSync(envFile, 'utf8'))?.[1] : undefined
  const stop = (): void => {
    spawnSync('bash', [join(SCRIPTS, 'stop.sh'), envFile], { encoding: 'utf8', timeout: 60_000 })
    rmSync(dir, { recursive: true, force: true })
  }
  if (url === undefined) {
    const why = (started.stderr || started.error?.message || '').trim().split('\n').filter((line) => /ERROR|not found|refuse/i.test(line)).join('; ')
    project.provide('postgresUrl', null)
    project.provide('postgresMissing', `no PostgreSQL: TANSTACK_SANDBOX_PG_URL is unset and scripts/postgres/start.sh failed (${why || `exit ${started.status}`}); install PostgreSQL (apt-get install postgresql) or set TANSTACK_SANDBOX_PG_URL`)
    stop()
    return () => undefined
  }
  project.provide('postgresUrl', url)
  project.provide('postgresMissing', null)
  return stop
}
