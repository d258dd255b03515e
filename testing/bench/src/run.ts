/**
 * Entry point of `pnpm bench` (and `pnpm --filter @testing/bench bench`): runs
 * the tables of src/tables.ts against the built packages in one process,
 * prints each table as it finishes, then one summary of every figure as a
 * ratio against the reference measured beside it in the same run, and writes
 * everything to `bench-results/results.json` (the path is printed last).
 *
 *   pnpm bench                            every table at its default size (under 15 minutes on 2 cores)
 *   pnpm bench --full                     every table at its full count (also BENCH_FULL=1)
 *   pnpm bench --only exec-round-trip     one table; repeat --only or give a comma-separated list
 *   pnpm bench --list                     the table names and their default/full sizes
 *
 * The last four tables (docker-provider, codex, opencode, grok-build) run the
 * bench script of that package in a child process and read its
 * bench-results/results.json back; their references are measured in that run.
 *
 * A BENCH_* variable (see each table's `sizes`) overrides one size. The
 * takeover soaks and the long randomized trials are `pnpm soak` (src/soak.ts).
 * Sandboxes live in a temp root removed at the end. The PostgreSQL table uses
 * TANSTACK_SANDBOX_PG_URL or starts a throwaway server with
 * scripts/postgres/start.sh (a fresh schema, dropped at the end).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { BenchError, round } from './stats.js'
import { PACKAGE_TABLES, TABLES as OWN_TABLES, type BenchTable, type RatioRow } from './tables.js'

/** Every table, in run order: this package's, then the other packages' own benches. */
const TABLES: readonly BenchTable[] = [...OWN_TABLES, ...PACKAGE_TABLES]

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url))

/** The tables `--only` names, in run order; every table without it. @throws BenchError on an unknown name. */
function selectTables(only: readonly string[]): BenchTable[] {
  const names = only.flatMap((value) => value.split(',')).map((name) => name.trim()).filter((name) => name !== '')
  if (names.length === 0) return [...TABLES]
  const unknown = names.filter((name) => !TABLES.some((table) => table.name === name))
  if (unknown.length > 0) throw new BenchError(`unknown table ${unknown.map((name) => JSON.stringify(name)).join(', ')}; the tables are: ${TABLES.map((table) => table.name).join(', ')}`)
  return TABLES.filter((table) => names.includes(table.name))
}

async function main(): Promise<void> {
  // pnpm forwards a leading `--` when called as `pnpm bench -- --only x`: drop it.
  const argv = process.argv.slice(2).filter((arg, index) => !(index === 0 && arg === '--'))
  const { values } = parseArgs({ args: argv, options: { only: { type: 'string', multiple: true }, full: { type: 'boolean' }, list: { type: 'boolean' } }, strict: true })
  if (values.list) {
    for (const table of TABLES) console.log(`${table.name.padEnd(24)} ${table.sizes}`)
    return
  }
  let tables: BenchTable[]
  try {
    tables = selectTables(values.only ?? [])
  } catch (error) {
    if (!(error instanceof BenchError)) throw error
    console.error(`bench: ${error.message}`)
    process.exitCode = 2
    return
  }
  const full = values.full === true || process.env.BENCH_FULL === '1'
  console.log(`bench: ${tables.length} table(s) at ${full ? 'full' : 'default'} sizes: ${tables.map((table) => table.name).join(', ')}`)
  const started = performance.now()
  const root = await mkdtemp(join(tmpdir(), 'tanstack-bench-'))
  const results: Record<string, unknown> = {}
  const seconds: Record<string, number> = {}
  const ratios: RatioRow[] = []
  try {
    const ctx = { provider: localProcessSandbox({ root }), root, full }
    for (const table of tables) {
      const tableStarted = performance.now()
      const result = await table.run(ctx)
      seconds[table.name] = round((performance.now() - tableStarted) / 1000, 1)
      results[table.name] = result.json
      ratios.push(...result.ratios)
      console.log(`[${table.name}: ${seconds[table.name]} s, done at ${Math.round((performance.now() - started) / 1000)} s]`)
    }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
  console.log('\nEvery figure against its reference, measured side by side in this run (ratio = value / reference; a goal of 0 has no ratio: the value must be 0)')
  console.table(ratios.map(({ table, figure, value, unit, reference, refValue, ratio }) => ({ table, figure, value, reference, refValue, unit, ratio })))
  console.table(tables.map((table) => ({ table: table.name, seconds: seconds[table.name] })))
  const totalSeconds = round((performance.now() - started) / 1000, 1)
  const file = join(resultsDir, 'results.json')
  const json = { date: new Date().toISOString(), node: process.version, platform: `${process.platform}-${process.arch}`, cpus: cpus().length, full, tables: tables.map((table) => table.name), totalSeconds, seconds, ratios, results }
  await mkdir(resultsDir, { recursive: true })
  await writeFile(file, JSON.stringify(json, null, 2) + '\n')
  console.log(`\nbench: ${tables.length} table(s) in ${totalSeconds} s; results and ratios written to ${file}`)
}

await main()
