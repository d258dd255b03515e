/**
 * The tables of `pnpm bench`, in the order they run: each names its sizes
 * (a default that keeps the whole run under 15 minutes on a 2-core machine,
 * and the full count behind `--full` or BENCH_FULL=1; an environment variable
 * overrides either), prints its own table and returns its JSON and its
 * figures as ratios against the reference measured beside them in the same
 * run. Owns no measuring: the table modules do. Invariant: every table
 * returns at least one ratio row; a figure without a measured reference is
 * held against its stated goal instead (the `reference` column says which).
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { OFFLINE_STREAMING } from '@example/quickstart'
import type { SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { benchAlignment } from './alignment.js'
import { benchCancelSurvivors } from './cancel-survivors.js'
import { benchDaytonaProvider } from './daytona-provider.js'
import { benchDemoWallTime, benchTranslatorThroughput, loadTranscript, repeatTranscript } from './claude-code.js'
import { benchConfinementRaces } from './confinement-races.js'
import { benchDockerHardening } from './docker-hardening.js'
import { benchDurableOverhead, printDurableOverhead } from './durable-overhead.js'
import { benchEdgeLatency, printEdgeLatency } from './edge-latency.js'
import { benchExecRoundTrip } from './exec-round-trip.js'
import { benchFileEventLatency } from './file-events.js'
import { benchJournalReplay } from './journal-replay.js'
import { benchJournaledRun } from './journaled-run.js'
import { benchMemoryBounds, benchWatcherBurst } from './memory-bounds.js'
import { benchNdjsonThroughput } from './ndjson-throughput.js'
import { benchPostgresStores, benchPostgresTakeoverLatency, printPostgresStores } from './postgres-stores.js'
import { benchReaper } from './reaper.js'
import { benchRunDriver } from './run-driver.js'
import { benchSecretScrubbing } from './secret-scrubbing.js'
import { benchSnapshots } from './snapshots.js'
import { benchSqliteStores } from './sqlite-stores.js'
import { envInt, round } from './stats.js'
import { benchTakeoverLatency, type TakeoverLatencyRow } from './takeover-latency.js'
import { benchToolBridgeRoundTrip } from './tool-bridge.js'

/** One figure held against its reference: `ratio` is value / refValue. */
export interface RatioRow {
  readonly table: string
  readonly figure: string
  readonly value: number
  readonly reference: string
  readonly refValue: number
  readonly unit: string
  /** value / refValue, or null when the reference is 0 (a goal of 0: then the value itself must be 0). */
  readonly ratio: number | null
}

/** What a table's run hands back to the runner. */
export interface TableResult {
  /** The table's measurements, written under its name in the JSON. */
  readonly json: unknown
  readonly ratios: RatioRow[]
}

/** What every table gets from the runner. */
export interface TableContext {
  /** A local-process provider over the run's temp root. */
  readonly provider: SandboxProvider
  /** The run's temp root, removed at the end. */
  readonly root: string
  /** `--full` or BENCH_FULL=1: every size at its full count. */
  readonly full: boolean
}

/** A table of the bench. */
export interface BenchTable {
  /** The name `--only` takes, and the key in the JSON. */
  readonly name: string
  /** Default and full sizes, for `--help` and the docs: `VARIABLE default/full`. */
  readonly sizes: string
  readonly run: (ctx: TableContext) => Promise<TableResult>
}

/** The size `variable` names: its value when set, else `full` under `--full`, else `fallback`. */
function size(ctx: TableContext, variable: string, fallback: number, full: number): number {
  return envInt(variable, ctx.full ? full : fallback)
}

/** A figure against a reference. */
function ratio(table: string, figure: string, value: number, reference: string, refValue: number, unit: string): RatioRow {
  return { table, figure, value: round(value, 3), reference, refValue: round(refValue, 3), unit, ratio: refValue === 0 ? null : round(value / refValue, 3) }
}

/** The one row of `rows` matching `pick`, or a bench error naming what was missing. */
function find<T>(rows: readonly T[], pick: (row: T) => boolean, what: string): T {
  const row = rows.find(pick)
  if (row === undefined) throw new Error(`bench: no ${what} row to hold the figures against`)
  return row
}

/** Print a table's heading. */
function heading(title: string): void {
  console.log(`\n${title}`)
}

/** Takeover latency rows as ratios of their fence window (the goal: window + 300 ms). */
function takeoverRatios(table: string, rows: readonly TakeoverLatencyRow[]): RatioRow[] {
  return rows.map((row) => ratio(table, `${row.stores}, ${row.attaches} attach(es): attach -> first new chunk`, row.medianMs, `fenceQuietMs ${row.fenceQuietMs}`, row.fenceQuietMs, 'ms'))
}

export const TABLES: readonly BenchTable[] = [
  {
    name: 'exec-round-trip',
    sizes: 'BENCH_EXEC_ITERATIONS 200/200',
    run: async (ctx) => {
      const rows = await benchExecRoundTrip(ctx.provider, size(ctx, 'BENCH_EXEC_ITERATIONS', 200, 200))
      heading('(a) exec round trip of `true`')
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))
      const [exec, node] = [rows[0]!, rows[1]!]
      return { json: rows, ratios: [ratio('exec-round-trip', exec.name, exec.medianMs, node.name, node.medianMs, 'ms')] }
    },
  },
  {
    name: 'daytona-provider',
    sizes: 'BENCH_DAYTONA_CREATES 5/10, BENCH_DAYTONA_EXECS 30/100, BENCH_DAYTONA_FILES 3/5',
    run: async (ctx) => {
      const rows = await benchDaytonaProvider({ creates: size(ctx, 'BENCH_DAYTONA_CREATES', 5, 10), execs: size(ctx, 'BENCH_DAYTONA_EXECS', 30, 100), files: size(ctx, 'BENCH_DAYTONA_FILES', 3, 5) })
      heading('Daytona provider beside the bare @daytona/sdk, on the stand-in (goal: at most 1.1x)')
      console.table(rows.map((row) => ({ ...row, providerMs: round(row.providerMs, 1), sdkMs: round(row.sdkMs, 1), ratio: round(row.providerMs / row.sdkMs, 2) })))
      return { json: rows, ratios: rows.map((row) => ratio('daytona-provider', `provider ${row.figure}`, row.providerMs, `bare SDK ${row.figure}`, row.sdkMs, 'ms')) }
    },
  },
  {
    name: 'ndjson-throughput',
    sizes: 'BENCH_NDJSON_MB 50/50, BENCH_NDJSON_RUNS 3/3',
    run: async (ctx) => {
      const row = await benchNdjsonThroughput(ctx.provider, size(ctx, 'BENCH_NDJSON_MB', 50, 50), size(ctx, 'BENCH_NDJSON_RUNS', 3, 3))
      heading('(b) spawnNdjson throughput')
      console.table([{ ...row, medianMs: round(row.medianMs, 1), mbPerSecond: round(row.mbPerSecond, 1), linesPerSecond: Math.round(row.linesPerSecond) }])
      // Goal of the original bench: 100 MB/s through `cat`.
      return { json: row, ratios: [ratio('ndjson-throughput', row.name, row.mbPerSecond, 'goal 100 MB/s', 100, 'MB/s')] }
    },
  },
  {
    name: 'claude-code-translator',
    sizes: 'BENCH_TRANSLATOR_LINES 10000/10000, BENCH_TRANSLATOR_RUNS 20/20',
    run: async (ctx) => {
      const transcript = await loadTranscript(ctx.provider, ctx.root)
      const lines = repeatTranscript(transcript, size(ctx, 'BENCH_TRANSLATOR_LINES', 10_000, 10_000))
      const rows = await benchTranslatorThroughput(lines, size(ctx, 'BENCH_TRANSLATOR_RUNS', 20, 20))
      heading(`(c) Claude Code translator throughput (transcript: ${transcript.source})`)
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 2), chunksPerSecond: Math.round(row.chunksPerSecond), linesPerSecond: Math.round(row.linesPerSecond) })))
      const [parsed, raw] = [rows[0]!, rows[1]!]
      return { json: { transcript: transcript.source, rows }, ratios: [ratio('claude-code-translator', parsed.name, parsed.medianMs, `${raw.name} (JSON.parse included)`, raw.medianMs, 'ms')] }
    },
  },
  {
    name: 'quickstart-demo',
    sizes: 'BENCH_DEMO_RUNS 2/3',
    run: async (ctx) => {
      const rows = await benchDemoWallTime(size(ctx, 'BENCH_DEMO_RUNS', 2, 3))
      heading(`(d) quickstart demo wall time, offline (ms since runDemo started; aimock paced at ${OFFLINE_STREAMING.ttft} ms to first chunk, ${OFFLINE_STREAMING.tps} chunks/s)`)
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 0), minMs: round(row.minMs, 0), maxMs: round(row.maxMs, 0) })))
      const total = find(rows, (row) => row.milestone === 'total', 'total')
      return { json: rows, ratios: rows.filter((row) => row !== total).map((row) => ratio('quickstart-demo', row.milestone, row.medianMs, 'total', total.medianMs, 'ms')) }
    },
  },
  {
    name: 'tool-bridge',
    sizes: 'BENCH_BRIDGE_ITERATIONS 500/500',
    run: async (ctx) => {
      const rows = await benchToolBridgeRoundTrip(size(ctx, 'BENCH_BRIDGE_ITERATIONS', 500, 500))
      heading('(e) tool bridge round trip, one tools/call of a no-op tool')
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))
      const inProcess = rows[rows.length - 1]!
      return { json: rows, ratios: rows.slice(0, -1).map((row) => ratio('tool-bridge', row.name, row.medianMs, inProcess.name, inProcess.medianMs, 'ms')) }
    },
  },
  {
    name: 'file-events',
    sizes: 'BENCH_FILE_EVENT_ITERATIONS 20/50, BENCH_FILE_EVENT_DOCKER_ITERATIONS 10/20',
    run: async (ctx) => {
      const rows = await benchFileEventLatency(ctx.provider, { iterations: size(ctx, 'BENCH_FILE_EVENT_ITERATIONS', 20, 50), dockerIterations: size(ctx, 'BENCH_FILE_EVENT_DOCKER_ITERATIONS', 10, 20) })
      heading('(f) file-event latency, from calling fs.write to the create event (writeMedianMs: the write itself)')
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), p95Ms: round(row.p95Ms, 1), writeMedianMs: round(row.writeMedianMs, 1) })))
      const local = rows[0]!
      return { json: rows, ratios: rows.slice(1).filter((row) => row.mode !== 'skipped').map((row) => ratio('file-events', row.name, row.medianMs, local.name, local.medianMs, 'ms')) }
    },
  },
  {
    name: 'confinement-races',
    sizes: 'BENCH_CONFINEMENT_RACES 20/100',
    run: async (ctx) => {
      const rows = await benchConfinementRaces(ctx.provider, size(ctx, 'BENCH_CONFINEMENT_RACES', 20, 100))
      heading('(g) confinement under symlink-swap races: host calls under a directory flipped to an outside symlink (escapes and hangs: goal 0)')
      console.table(rows)
      const races = rows.reduce((sum, row) => sum + row.races, 0)
      const bad = rows.reduce((sum, row) => sum + row.escapes + row.hangs, 0)
      return { json: rows, ratios: [ratio('confinement-races', `escapes + hangs over ${races} races`, bad, 'goal 0', 0, 'count')] }
    },
  },
  {
    name: 'secret-scrubbing',
    sizes: 'BENCH_SCRUB_CHUNKS 20000/20000, BENCH_SCRUB_DIFF_KIB 1024/1024, BENCH_SCRUB_RUNS 5/5',
    run: async (ctx) => {
      const rows = await benchSecretScrubbing(size(ctx, 'BENCH_SCRUB_CHUNKS', 20_000, 20_000), size(ctx, 'BENCH_SCRUB_DIFF_KIB', 1024, 1024), size(ctx, 'BENCH_SCRUB_RUNS', 5, 5))
      heading('(h) secret scrubbing: every chunk of a harness run, and a file.changed diff')
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 2) })))
      const noSecrets = find(rows, (row) => row.secrets === 0, 'no-secrets')
      return { json: rows, ratios: rows.filter((row) => row !== noSecrets && row.case === noSecrets.case).map((row) => ratio('secret-scrubbing', `${row.case}, ${row.secrets} secrets`, row.medianMs, `${noSecrets.case}, no secrets`, noSecrets.medianMs, 'ms')) }
    },
  },
  {
    name: 'cancel-survivors',
    sizes: 'BENCH_CANCEL_ITERATIONS 3/10',
    run: async (ctx) => {
      const rows = await benchCancelSurvivors(ctx.provider, { iterations: size(ctx, 'BENCH_CANCEL_ITERATIONS', 3, 10) })
      heading('(i) survivors of a cancel: `sleep 300.N` / `sleep 301.N` processes left after cancelling `( setsid sleep 300.N & ) ; sleep 301.N` (goal 0)')
      console.table(rows)
      const started = rows.reduce((sum, row) => sum + row.started, 0)
      return { json: rows, ratios: [ratio('cancel-survivors', `survivors over ${started} started cancels`, rows.reduce((sum, row) => sum + row.survivors, 0), 'goal 0', 0, 'count')] }
    },
  },
  {
    name: 'memory-bounds',
    sizes: 'BENCH_WATCH_BURST_FILES 10000/10000',
    run: async (ctx) => {
      const memory = await benchMemoryBounds(ctx.root)
      const watcherBurst = await benchWatcherBurst(ctx.provider, size(ctx, 'BENCH_WATCH_BURST_FILES', 10_000, 10_000))
      heading('(j) memory bounds: peak RSS of a child process per case (before the bounds: exec 200 MB, unread yes 1.7 GB, 300 MB line 615 MB, 2 GB sparse file 2.2 GB)')
      console.table(memory)
      heading('(j) watcher burst: files written at once on local-process, creates delivered within 30 s (before: 6,388 of 10,000; goal: all)')
      console.table([watcherBurst])
      const baseline = find(memory, (row) => row.case === 'baseline', 'baseline')
      return {
        json: { memoryBounds: memory, watcherBurst },
        ratios: [
          ...memory.filter((row) => row !== baseline).map((row) => ratio('memory-bounds', `peak RSS: ${row.case}`, row.peakRssMiB, 'baseline child', baseline.peakRssMiB, 'MiB')),
          ratio('memory-bounds', 'watcher burst: creates delivered', watcherBurst.createsWithin30s, 'files written', watcherBurst.files, 'count'),
        ],
      }
    },
  },
  {
    name: 'docker-hardening',
    sizes: 'BENCH_DOCKER_CREATE_ITERATIONS 5/10',
    run: async (ctx) => {
      const rows = await benchDockerHardening(size(ctx, 'BENCH_DOCKER_CREATE_ITERATIONS', 5, 10))
      heading('(k) Docker create() and destroy(): hardened defaults against the old behaviour')
      console.table(rows.map((row) => ({ ...row, createMedianMs: round(row.createMedianMs, 0), createP95Ms: round(row.createP95Ms, 0), destroyMedianMs: round(row.destroyMedianMs, 0) })))
      const [hardened, old] = [rows[0]!, rows[1]!]
      return {
        json: rows,
        ratios: [
          ratio('docker-hardening', `${hardened.name}: create()`, hardened.createMedianMs, 'old behaviour: create()', old.createMedianMs, 'ms'),
          ratio('docker-hardening', `${hardened.name}: destroy()`, hardened.destroyMedianMs, 'old behaviour: destroy()', old.destroyMedianMs, 'ms'),
        ],
      }
    },
  },
  {
    name: 'journal-replay',
    sizes: 'BENCH_JOURNAL_MB 32/256',
    run: async (ctx) => {
      const megabytes = size(ctx, 'BENCH_JOURNAL_MB', 32, 256)
      const rows = [
        ...(await benchJournalReplay('local-process', ctx.provider, ['local-process', ctx.root], megabytes)),
        ...(await benchJournalReplay('docker (Debian)', dockerSandbox({ image: 'tanstack-sandbox-debian:bookworm' }), ['docker', ''], megabytes)),
      ]
      heading(`(m) journal replay: a ${megabytes} MiB run journal read by cat, readJournal follow and readJournal poll over the same transport (goals: peak RSS <= 64 MB, >= 50% of cat)`)
      console.table(rows)
      return {
        json: rows,
        ratios: rows
          .filter((row) => row.reader !== 'cat')
          .map((row) => {
            const cat = find(rows, (other) => other.provider === row.provider && other.reader === 'cat', `${row.provider} cat`)
            return ratio('journal-replay', `${row.provider}: readJournal ${row.reader}`, row.mbPerSecond, `${row.provider}: cat`, cat.mbPerSecond, 'MB/s')
          }),
      }
    },
  },
  {
    name: 'journaled-run',
    sizes: 'BENCH_JOURNALED_RUNS 8/20',
    run: async (ctx) => {
      const rows = await benchJournaledRun(ctx.provider, size(ctx, 'BENCH_JOURNALED_RUNS', 8, 20))
      heading('(n) what journaling costs a run: Claude Code replaying a recorded session through chat() + withSandbox on local-process, stdout through a pipe or through the run journal')
      console.table(rows.map((row) => ({ ...row, firstTextMedianMs: round(row.firstTextMedianMs, 0), endMedianMs: round(row.endMedianMs, 0), endP95Ms: round(row.endP95Ms, 0) })))
      const [pipe, journal] = [rows[0]!, rows[1]!]
      return {
        json: rows,
        ratios: [
          ratio('journaled-run', `${journal.mode}: first text`, journal.firstTextMedianMs, `${pipe.mode}: first text`, pipe.firstTextMedianMs, 'ms'),
          ratio('journaled-run', `${journal.mode}: end`, journal.endMedianMs, `${pipe.mode}: end`, pipe.endMedianMs, 'ms'),
        ],
      }
    },
  },
  {
    name: 'run-driver',
    sizes: 'BENCH_RUN_DRIVER_RUNS 5/5',
    run: async (ctx) => {
      const rows = await benchRunDriver({ runs: size(ctx, 'BENCH_RUN_DRIVER_RUNS', 5, 5) })
      heading('(o) the run driver: pipeToRunLog into memoryStream + InMemoryRunStore, beside a plain pass over the stream and a pump that awaits one append per chunk')
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 1) })))
      return {
        json: rows,
        ratios: rows
          .filter((row) => row.pump.startsWith('pipeToRunLog'))
          .map((row) => {
            const perChunk = find(rows, (other) => other.log === row.log && other.pump === 'append per chunk', `${row.log} append per chunk`)
            return ratio('run-driver', `${row.log}: ${row.pump}`, row.medianMs, `${row.log}: append per chunk`, perChunk.medianMs, 'ms')
          }),
      }
    },
  },
  {
    name: 'takeover-latency',
    sizes: 'BENCH_TAKEOVER_RUNS 3/3; fence windows 250 and 1000 ms / 250 and 5000 ms',
    run: async (ctx) => {
      const rows = await benchTakeoverLatency({ runs: size(ctx, 'BENCH_TAKEOVER_RUNS', 3, 3), windows: ctx.full ? [250, 5000] : [250, 1000], attaches: [1, 4] })
      heading('(p) takeover latency: attach to the first new chunk through resumeServerSentEventsResponse + sandboxRunDriver, 1,000 of 2,000 chunks stored (goal: <= fenceQuietMs + 300 ms; exactly one drive per run)')
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), p95Ms: round(row.p95Ms, 1), overQuietMs: round(row.overQuietMs, 1) })))
      return { json: rows, ratios: takeoverRatios('takeover-latency', rows) }
    },
  },
  {
    name: 'sqlite-stores',
    sizes: 'BENCH_SQLITE_LOCKS 2000/2000, BENCH_SQLITE_APPEND_CHUNKS 10000/10000, BENCH_SQLITE_TAIL_SAMPLES 200/200',
    run: async (ctx) => {
      const stores = await benchSqliteStores({ lockIterations: size(ctx, 'BENCH_SQLITE_LOCKS', 2000, 2000), appendChunks: size(ctx, 'BENCH_SQLITE_APPEND_CHUNKS', 10_000, 10_000), tailSamples: size(ctx, 'BENCH_SQLITE_TAIL_SAMPLES', 200, 200) })
      heading('(q) SQLite stores (@tanstack/ai-sandbox-sqlite) beside the in-memory ones: lock acquire+release, append throughput, tail latency (append called -> tailer received)')
      console.table(stores.locks.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))
      console.table(stores.appends.map((row) => ({ ...row, chunksPerSecond: Math.round(row.chunksPerSecond) })))
      console.table(stores.tails.map((row) => ({ ...row, medianMs: round(row.medianMs, 2), p95Ms: round(row.p95Ms, 2) })))
      return { json: stores, ratios: storeRatios('sqlite-stores', stores) }
    },
  },
  {
    name: 'durable-overhead',
    sizes: 'BENCH_DURABLE_TURNS 1/4',
    run: async (ctx) => {
      const result = await benchDurableOverhead({ turns: size(ctx, 'BENCH_DURABLE_TURNS', 1, 4) })
      printDurableOverhead(result)
      return { json: result, ratios: result.summary.map((row) => ratio('durable-overhead', `${row.provider}: ${row.mode} turn`, row.durableMedianMs, `${row.provider}: non-durable turn`, row.nonDurableMedianMs, 'ms')) }
    },
  },
  {
    name: 'edge-latency',
    sizes: 'BENCH_EDGE_RUNS 3/6, BENCH_EDGE_RECONNECTS 8/10 (per run), BENCH_EDGE_STEP_SECONDS 0/1',
    run: async (ctx) => {
      const result = await benchEdgeLatency({ runs: size(ctx, 'BENCH_EDGE_RUNS', 3, 6), reconnectsPerRun: size(ctx, 'BENCH_EDGE_RECONNECTS', 8, 10), stepSeconds: envInt('BENCH_EDGE_STEP_SECONDS', ctx.full ? 1 : 0, { zero: true }), trace: process.env.BENCH_EDGE_TRACE === '1' })
      printEdgeLatency(result)
      const [edge, node] = [result.hosts.miniflare, result.hosts.node]
      return {
        json: result,
        ratios: result.rows
          .filter((row) => row.host === edge)
          .map((row) => {
            const reference = find(result.rows, (other) => other.host === node && other.figure === row.figure, `${node} ${row.figure}`)
            return ratio('edge-latency', `${row.host}: ${row.figure}`, row.medianMs, `${reference.host}: ${row.figure}`, reference.medianMs, 'ms')
          }),
      }
    },
  },
  {
    name: 'postgres-stores',
    sizes: 'BENCH_PG_LOCKS 2000/2000, BENCH_PG_APPEND_CHUNKS 10000/10000, BENCH_PG_TAIL_SAMPLES 200/200, BENCH_PG_TAKEOVER_RUNS 3/3',
    run: async (ctx) => {
      const stores = await benchPostgresStores({ lockIterations: size(ctx, 'BENCH_PG_LOCKS', 2000, 2000), appendChunks: size(ctx, 'BENCH_PG_APPEND_CHUNKS', 10_000, 10_000), tailSamples: size(ctx, 'BENCH_PG_TAIL_SAMPLES', 200, 200) })
      const takeover = await benchPostgresTakeoverLatency({ runs: size(ctx, 'BENCH_PG_TAKEOVER_RUNS', 3, 3), windows: [250, 1000], attaches: [1, 4] })
      printPostgresStores(stores, takeover)
      return { json: { stores, takeover }, ratios: [...storeRatios('postgres-stores', stores), ...takeoverRatios('postgres-stores', takeover.filter((row) => row.stores !== 'in-memory'))] }
    },
  },
  {
    name: 'reaper',
    sizes: 'BENCH_REAPER_RUNS 5/10',
    run: async (ctx) => {
      const rows = await benchReaper(ctx.provider, join(ctx.root, 'reaper-journals'), size(ctx, 'BENCH_REAPER_RUNS', 5, 10))
      heading('(s) reaper on local-process: one probeRunExit (median / p95), a sweep over producing runs (probes only), a sweep that expires and reclaims every run (includes the 5 s quiescence window), pruneJournals')
      console.table(rows.map((row) => ({ ...row, totalMs: round(row.totalMs, 1), perRunMs: round(row.perRunMs, 1) })))
      const probe = find(rows, (row) => row.step === 'probeRunExit', 'probeRunExit')
      const producing = find(rows, (row) => row.step === 'sweep, producing runs', 'producing sweep')
      return { json: rows, ratios: [ratio('reaper', 'sweep over producing runs, per run', producing.perRunMs, 'one probeRunExit (median)', probe.totalMs, 'ms')] }
    },
  },
  {
    name: 'snapshots',
    sizes: 'BENCH_SNAPSHOT_FILES 1000/20000, BENCH_SNAPSHOT_MB 10/200, BENCH_SNAPSHOT_RUNS 3/3, BENCH_SNAPSHOT_SECOND_FILES 4000/5000, BENCH_SNAPSHOT_SECOND_MB 40/50 (local-process, one run), BENCH_SNAPSHOT_DOCKER 1/1',
    run: async (ctx) => {
      const tree = { files: size(ctx, 'BENCH_SNAPSHOT_FILES', 1000, 20_000), mib: size(ctx, 'BENCH_SNAPSHOT_MB', 10, 200) }
      // The second tree is 4x the default one by default and a quarter of the full one under --full: both compare two sizes 4x apart.
      const secondTree = { files: size(ctx, 'BENCH_SNAPSHOT_SECOND_FILES', 4000, 5000), mib: size(ctx, 'BENCH_SNAPSHOT_SECOND_MB', 40, 50) }
      const runs = size(ctx, 'BENCH_SNAPSHOT_RUNS', 3, 3)
      const result = await benchSnapshots({ root: ctx.root, provider: ctx.provider, size: tree, secondSize: secondTree, runs, docker: envInt('BENCH_SNAPSHOT_DOCKER', 1, { zero: true }) === 1 })
      heading(
        `(w) portable snapshots: captureSandboxWorkspace and restoreSandboxWorkspace of a generated tree (${tree.files} files / ${tree.mib} MiB, ${runs} runs; default 1000 / 10 MiB, --full 20000 / 200 MiB) beside tar of the same tree through the same provider's process API ` +
          `(capture: \`tar -cf - .\` drained on the host; restore: \`tar -xf -\` fed a host tar), one child process per figure (its peak RSS its own, the highest over its runs); blobs on disk (putBlob writes a file per blob, getBlob reads it). ` +
          `Then local-process once at ${secondTree.files} files / ${secondTree.mib} MiB for the RSS at a second size. Goals: within 2x tar; peak RSS bounded independently of the tree's size`,
      )
      console.table(result.rows)
      for (const skip of result.skipped) console.log(`  skipped ${skip.provider}: ${skip.reason}`)
      const ratios = result.rows.flatMap((row) => [
        ratio('snapshots', `${row.provider}, ${row.files} files / ${row.mib} MiB: ${row.op}`, row.medianMs, `same tree: ${row.op === 'capture' ? 'tar -cf - .' : 'tar -xf -'} through the process API (goal 2x)`, row.tarMedianMs, 'ms'),
        // Raw tar through the text stdout pays for decoding binary as UTF-8, which grows with the size: the base64 pipe is the engine's own transport.
        ...(row.tarBase64MedianMs === null ? [] : [ratio('snapshots', `${row.provider}, ${row.files} files / ${row.mib} MiB: ${row.op}`, row.medianMs, 'same tree: tar -cf - . | base64 through the process API', row.tarBase64MedianMs, 'ms')]),
      ])
      const local = result.rows.filter((row) => row.provider === 'local-process')
      for (const op of ['capture', 'restore'] as const) {
        const [smaller, larger] = local.filter((row) => row.op === op).sort((a, b) => a.files - b.files)
        if (smaller && larger && smaller !== larger) ratios.push(ratio('snapshots', `local-process ${op}: peak RSS at ${larger.files} files / ${larger.mib} MiB`, larger.peakRssMiB, `at ${smaller.files} files / ${smaller.mib} MiB (bounded: about 1)`, smaller.peakRssMiB, 'MiB'))
      }
      return { json: result, ratios }
    },
  },
  {
    // Last: the 1M-chunk log stays in memoryStream's process-wide map until the process exits.
    name: 'replay-alignment',
    sizes: 'BENCH_ALIGNMENT_RUNS 3/3 (10k, 100k and 1M stored chunks)',
    run: async (ctx) => {
      const rows = await benchAlignment(undefined, size(ctx, 'BENCH_ALIGNMENT_RUNS', 3, 3))
      heading('(l) replay alignment: alignToStoredLog over a memoryStream log, 1,000 new chunks past it (goal: linear, 100k under 500 ms)')
      console.table(rows.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), nsPerChunk: Math.round(row.nsPerChunk), perChunkVsSmallest: round(row.perChunkVsSmallest, 2), passthroughMs: round(row.passthroughMs, 1) })))
      const smallest = rows[0]!
      return {
        json: rows,
        ratios: rows.flatMap((row) => [
          ratio('replay-alignment', `${row.storedChunks} stored: alignToStoredLog`, row.medianMs, `${row.storedChunks} stored: plain pass over the log`, row.passthroughMs, 'ms'),
          ...(row === smallest ? [] : [ratio('replay-alignment', `${row.storedChunks} stored: ns per chunk`, row.nsPerChunk, `${smallest.storedChunks} stored: ns per chunk`, smallest.nsPerChunk, 'ns')]),
        ]),
      }
    },
  },
]

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))

/** A row of another package's bench JSON: a label and a median. */
interface MedianRow {
  readonly name?: string
  readonly what?: string
  readonly milestone?: string
  readonly phase?: string
  readonly medianMs: number
}

const label = (row: MedianRow): string => [row.phase, row.name ?? row.what ?? row.milestone].filter(Boolean).join(': ')

/**
 * A bench of another workspace package (its own `bench` script, in its own
 * process: its references are measured beside its figures in that run), read
 * back from its `bench-results/results.json`. `pick` names the figure and
 * reference pairs in that JSON by index.
 */
function packageBench(name: string, pkg: string, dir: string, pick: (json: Record<string, MedianRow[] | { rows: MedianRow[] }>) => [figure: MedianRow, reference: MedianRow][]): BenchTable {
  return {
    name,
    sizes: `its own (${dir}, \`pnpm --filter ${pkg} bench\`)`,
    run: async () => {
      console.log(`\n(${name}) ${pkg}: its own bench, in a child process`)
      const code = await new Promise<number | null>((resolve, reject) => {
        const child = spawn('pnpm', ['--silent', '--filter', pkg, 'run', 'bench'], { cwd: repoRoot, stdio: 'inherit' })
        child.on('error', reject)
        child.on('exit', resolve)
      })
      if (code !== 0) throw new Error(`bench: ${pkg} bench exited ${code}`)
      const json = JSON.parse(await readFile(join(repoRoot, dir, 'bench-results', 'results.json'), 'utf8')) as Record<string, MedianRow[] | { rows: MedianRow[] }>
      return { json, ratios: pick(json).map(([figure, reference]) => ratio(name, label(figure), figure.medianMs, label(reference), reference.medianMs, 'ms')) }
    },
  }
}

/** Translator rows (raw against parsed) and each offline-turn milestone against that phase's total. */
function harnessPairs(turnKey: string): (json: Record<string, MedianRow[] | { rows: MedianRow[] }>) => [MedianRow, MedianRow][] {
  return (json) => {
    const translator = json.translator as MedianRow[]
    const turn = json[turnKey] as MedianRow[]
    const pairs: [MedianRow, MedianRow][] = [[translator[1]!, translator[0]!]]
    for (const row of turn) {
      const total = turn.find((other) => other.milestone === 'total' && other.phase === row.phase)
      if (total && row !== total) pairs.push([row, total])
    }
    return pairs
  }
}

/** The other packages' benches, run after the tables above. */
export const PACKAGE_TABLES: readonly BenchTable[] = [
  packageBench('docker-provider', '@tanstack/ai-sandbox-docker', 'packages/ai-sandbox-docker', (json) => {
    const exec = json.execRoundTrip as MedianRow[]
    const ready = (json.readyFromSnapshot as { rows: MedianRow[] }).rows
    return [[exec[0]!, exec[2]!], [exec[1]!, exec[2]!], [ready[1]!, ready[0]!]]
  }),
  packageBench('codex', '@testing/codex-e2e', 'testing/codex-e2e', harnessPairs('offlineTurn')),
  packageBench('opencode', '@testing/opencode-e2e', 'testing/opencode-e2e', harnessPairs('offlineTurn')),
  packageBench('grok-build', '@testing/grok-build-e2e', 'testing/grok-build-e2e', harnessPairs('turn')),
]

/** Lock, append and tail rows of a store bench against the in-memory store beside them. */
function storeRatios(table: string, stores: Awaited<ReturnType<typeof benchSqliteStores>>): RatioRow[] {
  const lockRef = stores.locks[0]!
  const out = stores.locks.slice(1).map((row) => ratio(table, `${row.store}: lock acquire+release`, row.medianMs, `${lockRef.store}`, lockRef.medianMs, 'ms'))
  for (const row of stores.appends.filter((row) => row.store !== 'memoryStream')) {
    const ref = find(stores.appends, (other) => other.store === 'memoryStream' && other.batch === row.batch, `memoryStream batch ${row.batch}`)
    out.push(ratio(table, `${row.store}: append, batch ${row.batch}`, row.chunksPerSecond, `memoryStream, batch ${row.batch}`, ref.chunksPerSecond, 'chunks/s'))
  }
  const tailRef = find(stores.tails, (row) => row.store === 'memoryStream', 'memoryStream tail')
  for (const row of stores.tails.filter((row) => row !== tailRef)) out.push(ratio(table, `${row.store}: tail, ${row.reader}${row.pollMs === null ? '' : `, poll ${row.pollMs} ms`}`, row.medianMs, 'memoryStream, same process', tailRef.medianMs, 'ms'))
  return out
}
