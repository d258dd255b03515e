/**
 * Entry point of `pnpm soak`: every randomized suite at its full trial count,
 * which `pnpm test` and CI run at a smaller, named count (each suite's header
 * gives both). It runs, in order:
 *   - the takeover soak: SOAK_TAKEOVER_KILLS (200) SIGKILLs of the server
 *     driving a real Claude Code run on local-process + SQLite;
 *   - the PostgreSQL takeover soak: SOAK_PG_TAKEOVER_KILLS (200) kills with
 *     three servers racing for each claim;
 *   - the randomized vitest suites with their full counts in the environment:
 *     the PostgreSQL epoch fence (FENCE_TRIALS 50), the reaper race
 *     (REAPER_SWEEPS 100), the driver takeover across processes on
 *     local-process and Docker (TAKEOVER_TRIALS 10, TAKEOVER_CONCURRENT 3,
 *     TAKEOVER_REFRESHES 3, TAKEOVER_CANCELS 25), the PostgreSQL takeover
 *     suite (PG_TAKEOVER_TRIALS 20) and the chaos suite on local-process +
 *     SQLite and Docker + PostgreSQL (every case, CHAOS_REPEAT 10 times,
 *     and CHAOS_TRIALS 20 seeded random kills per setting: 200 kills),
 *     whose takeover latency with the default configuration (host death to
 *     the first event the successor stored, at the client) is tabulated too;
 *     and the Daytona and Cloudflare provider conformance suites with their
 *     fs races at the kit's defaults: at least CONFORMANCE_FS_RACE_CALLS (30)
 *     calls per operation, more for CONFORMANCE_FS_RACE_BUDGET_MS (2 000)
 *     (CI: 10 and 0; Docker and local-process always race at the defaults).
 * Each count is read from the variable named above; 0 skips that item (for
 * example SOAK_TAKEOVER_KILLS=0 SOAK_PG_TAKEOVER_KILLS=0 runs only the suites).
 * Each item's seed is printed and passed on, so a failure replays. It never
 * stops at a failure; it prints one table of every item and writes
 * `bench-results/soak.json`, and exits non-zero when any item failed.
 * PostgreSQL comes from TANSTACK_SANDBOX_PG_URL or scripts/postgres/start.sh;
 * the Docker parts need the engine and images of scripts/docker/.
 */
import { spawn } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchPostgresTakeoverSoak, printPostgresTakeoverSoak } from './postgres-takeover-soak.js'
import { envInt, round } from './stats.js'
import { benchTakeoverSoak, printTakeoverSoak } from './takeover-soak.js'

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url))

/** One line of the soak's table. */
interface SoakRow {
  soak: string
  /** Kills, trials or sweeps, as the item counts them. */
  trials: number
  passed: number
  failed: number
  seconds: number
  /** The environment that replays the item. */
  replay: string
}

/** A randomized vitest suite and the environment that gives it its full count. */
interface SuiteSoak {
  name: string
  project: string
  file: string
  trials: number
  env: Record<string, string>
}

/** Per chaos setting: host death to the first event the successor stored, at the client, in ms (`chaos-suite.ts` writes it). */
interface ChaosLatency {
  setting: string
  kills: number
  medianMs: number
  p95Ms: number
  maxMs: number
}

function suites(seed: number, reportDir: string): SuiteSoak[] {
  const fence = envInt('FENCE_TRIALS', 50, { zero: true })
  const sweeps = envInt('REAPER_SWEEPS', 100, { zero: true })
  const takeovers = envInt('TAKEOVER_TRIALS', 10, { zero: true })
  const pgTakeovers = envInt('PG_TAKEOVER_TRIALS', 20, { zero: true })
  const chaosRepeat = envInt('CHAOS_REPEAT', 10, { zero: true })
  const chaosTrials = envInt('CHAOS_TRIALS', 20, { zero: true })
  const raceCalls = envInt('CONFORMANCE_FS_RACE_CALLS', 30, { zero: true })
  const all: SuiteSoak[] = [
    { name: `PostgreSQL epoch fence, ${fence} trials`, project: 'ai-sandbox-postgres', file: 'tests/fencing.test.ts', trials: fence, env: { FENCE_TRIALS: String(fence), FENCE_SEED: String(seed) } },
    { name: `reaper race, ${sweeps} sweeps`, project: 'claude-code-e2e', file: 'tests/reaper-race.e2e.test.ts', trials: sweeps, env: { REAPER_SWEEPS: String(sweeps), REAPER_SEED: String(seed) } },
    {
      name: `driver takeover, ${takeovers} kills per provider`,
      project: 'claude-code-e2e',
      file: 'tests/driver-takeover', // the three files: local-process, Docker and Daytona
      trials: takeovers,
      env: {
        TAKEOVER_TRIALS: String(takeovers),
        TAKEOVER_CONCURRENT: String(envInt('TAKEOVER_CONCURRENT', 3)),
        TAKEOVER_REFRESHES: String(envInt('TAKEOVER_REFRESHES', 3)),
        TAKEOVER_CANCELS: String(envInt('TAKEOVER_CANCELS', 25)),
        TAKEOVER_SEED: String(seed),
      },
    },
    { name: `PostgreSQL takeover, ${pgTakeovers} kills`, project: 'claude-code-e2e', file: 'tests/postgres-takeover.e2e.test.ts', trials: pgTakeovers, env: { PG_TAKEOVER_TRIALS: String(pgTakeovers), TAKEOVER_SEED: String(seed) } },
    {
      // 8 named cases x CHAOS_REPEAT + CHAOS_TRIALS random kills, on local-process + SQLite and Docker + PostgreSQL.
      name: `chaos, ${chaosRepeat} x 8 cases + ${chaosTrials} random kills per setting`,
      project: 'claude-code-e2e',
      file: 'tests/chaos', // both files
      trials: 2 * (8 * chaosRepeat + chaosTrials),
      env: { CHAOS_CASES: 'all', CHAOS_REPEAT: String(chaosRepeat), CHAOS_TRIALS: String(chaosTrials), CHAOS_SEED: String(seed), CHAOS_LATENCY_FILE: join(reportDir, 'chaos-latency') },
    },
    // The provider kit's fs races at the kit's defaults (CI runs the Daytona and Cloudflare suites at exactly 10 calls per operation, Docker BusyBox at exactly 30).
    ...([
      ['daytona', 'ai-sandbox-daytona', 'tests/conformance.test.ts'],
      ['cloudflare', 'ai-sandbox-cloudflare', 'tests/conformance.test.ts'],
      ['docker busybox', 'ai-sandbox-docker', 'tests/conformance.busybox.test.ts'],
    ] as const).map(([provider, project, file]) => ({
      name: `${provider} provider conformance, fs races of at least ${raceCalls} calls per operation`,
      project,
      file,
      trials: raceCalls,
      env: { CONFORMANCE_FS_RACE_CALLS: String(raceCalls), CONFORMANCE_FS_RACE_BUDGET_MS: String(envInt('CONFORMANCE_FS_RACE_BUDGET_MS', 2_000, { zero: true })) },
    })),
  ]
  return all.filter((suite) => suite.trials > 0)
}

/** Run one vitest file at its full count; its output streams through, its JSON report is tallied. */
async function runSuite(suite: SuiteSoak, reportDir: string): Promise<SoakRow> {
  const report = join(reportDir, `${suite.project}-${suite.file.replace(/\W+/g, '-')}.json`)
  const started = performance.now()
  const vitest = join(repoRoot, 'node_modules/vitest/vitest.mjs')
  const exit = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [vitest, 'run', '--project', suite.project, suite.file, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], {
      cwd: repoRoot,
      // A soak that skipped for a missing engine or database would prove nothing: make those suites fail instead.
      env: { ...process.env, REQUIRE_DOCKER: '1', REQUIRE_POSTGRES: '1', ...suite.env },
      stdio: 'inherit',
    })
    child.on('close', (code) => resolve(code ?? 1))
  })
  const replay = Object.entries(suite.env).filter(([key]) => key !== 'CHAOS_LATENCY_FILE').map(([key, value]) => `${key}=${value}`).join(' ')
  const row = { soak: suite.name, trials: suite.trials, seconds: Math.round((performance.now() - started) / 1000), replay }
  try {
    const result = JSON.parse(await readFile(report, 'utf8')) as { numPassedTests: number; numFailedTests: number }
    // A non-zero exit with no failed test, or a run where nothing passed, counts as one failure.
    const unexplained = (exit !== 0 && result.numFailedTests === 0) || result.numPassedTests === 0 ? 1 : 0
    return { ...row, passed: result.numPassedTests, failed: result.numFailedTests + unexplained }
  } catch {
    return { ...row, passed: 0, failed: 1 }
  }
}

/** Run one kill soak; a soak that throws (a server that never started) becomes a failed row, so the other items still run. */
async function killSoak(name: string, kills: number, run: () => Promise<{ equal: number; replay: string }>): Promise<SoakRow> {
  const started = performance.now()
  const seconds = (): number => Math.round((performance.now() - started) / 1000)
  try {
    const { equal, replay } = await run()
    return { soak: name, trials: kills, passed: equal, failed: kills - equal, seconds: seconds(), replay }
  } catch (error) {
    console.error(`[soak] ${name} stopped: ${error instanceof Error ? error.message : String(error)}`)
    return { soak: `${name} (stopped: see the error above)`, trials: kills, passed: 0, failed: kills, seconds: seconds(), replay: 'SOAK_SEED as printed' }
  }
}

async function main(): Promise<void> {
  const seed = Number(process.env.SOAK_SEED ?? randomInt(2 ** 30))
  console.log(`[soak] seed ${seed}: SOAK_SEED=${seed} replays every item`)
  const rows: SoakRow[] = []
  const latency: ChaosLatency[] = []
  const reportDir = join(tmpdir(), `tanstack-soak-${process.pid}`)
  await mkdir(reportDir, { recursive: true })
  try {
    const kills = envInt('SOAK_TAKEOVER_KILLS', 200, { zero: true })
    if (kills > 0) {
      rows.push(
        await killSoak(`takeover kills, local-process + SQLite`, kills, async () => {
          const soak = await benchTakeoverSoak({ kills, baseSeed: seed })
          printTakeoverSoak(soak)
          return { equal: soak.equal, replay: `TAKEOVER_SEED=${soak.baseSeed} (kill i draws seed base + i)` }
        }),
      )
    }
    const pgKills = envInt('SOAK_PG_TAKEOVER_KILLS', 200, { zero: true })
    if (pgKills > 0) {
      rows.push(
        await killSoak(`takeover kills, local-process + PostgreSQL, 3 racing`, pgKills, async () => {
          const soak = await benchPostgresTakeoverSoak({ kills: pgKills, baseSeed: seed })
          printPostgresTakeoverSoak(soak)
          return { equal: soak.equal, replay: `TAKEOVER_SEED=${soak.baseSeed} (kill i draws seed base + i)` }
        }),
      )
    }
    for (const suite of suites(seed, reportDir)) rows.push(await runSuite(suite, reportDir))
    for (const file of (await readdir(reportDir)).filter((name) => name.startsWith('chaos-latency.'))) {
      const { setting, kills, medianMs, p95Ms, maxMs } = JSON.parse(await readFile(join(reportDir, file), 'utf8')) as ChaosLatency
      latency.push({ setting, kills, medianMs, p95Ms, maxMs })
    }
  } finally {
    await rm(reportDir, { recursive: true, force: true })
  }

  console.log(`\nsoak (seed ${seed}): passed and failed count trials for the kill soaks, tests for the suites`)
  console.table(rows)
  if (latency.length > 0) {
    console.log('\nchaos takeover latency with the default configuration: host death to the first event the successor stored, at the client (ms)')
    console.table(latency)
  }
  await mkdir(resultsDir, { recursive: true })
  const file = join(resultsDir, 'soak.json')
  await writeFile(file, JSON.stringify({ date: new Date().toISOString(), node: process.version, cpus: cpus().length, seed, rows, chaosLatency: latency, totalSeconds: round(rows.reduce((sum, row) => sum + row.seconds, 0), 0) }, null, 2) + '\n')
  console.log(`wrote ${file}`)
  if (rows.some((row) => row.failed > 0)) process.exitCode = 1
}

await main()
