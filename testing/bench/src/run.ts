/**
 * Entry point of `pnpm --filter @testing/bench bench`: runs every benchmark
 * against the built packages, prints one table per benchmark and writes
 * `bench-results/results.json`. Sandboxes live in a temp root removed at the
 * end. Sizes: BENCH_EXEC_ITERATIONS (200), BENCH_NDJSON_MB (50), BENCH_NDJSON_RUNS (3),
 * BENCH_TRANSLATOR_LINES (10000), BENCH_TRANSLATOR_RUNS (20), BENCH_DEMO_RUNS (3),
 * BENCH_BRIDGE_ITERATIONS (500), BENCH_FILE_EVENT_ITERATIONS (50), BENCH_FILE_EVENT_DOCKER_ITERATIONS (20),
 * BENCH_CONFINEMENT_RACES (100), BENCH_CANCEL_ITERATIONS (10), BENCH_WATCH_BURST_FILES (10000),
 * BENCH_DOCKER_CREATE_ITERATIONS (10), BENCH_ALIGNMENT_RUNS (3), BENCH_JOURNAL_MB (256), BENCH_JOURNALED_RUNS (20), BENCH_RUN_DRIVER_RUNS (5), BENCH_TAKEOVER_RUNS (3), BENCH_DURABLE_TURNS (4), BENCH_SQLITE_LOCKS (2000), BENCH_SQLITE_APPEND_CHUNKS (10000), BENCH_SQLITE_TAIL_SAMPLES (200), BENCH_REAPER_RUNS (10),
 * BENCH_PG_LOCKS (2000), BENCH_PG_APPEND_CHUNKS (10000), BENCH_PG_TAIL_SAMPLES (200), BENCH_PG_TAKEOVER_RUNS (3).
 * The takeover soaks and the other long randomized trials are `pnpm soak` (src/soak.ts). The PostgreSQL benches use TANSTACK_SANDBOX_PG_URL or start a
 * throwaway server with scripts/postgres/start.sh (a fresh schema each, dropped at the end).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { OFFLINE_STREAMING } from '@example/quickstart'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { benchDemoWallTime, benchTranslatorThroughput, loadTranscript, repeatTranscript } from './claude-code.js'
import { benchCancelSurvivors } from './cancel-survivors.js'
import { benchDockerHardening } from './docker-hardening.js'
import { benchExecRoundTrip } from './exec-round-trip.js'
import { benchNdjsonThroughput } from './ndjson-throughput.js'
import { benchFileEventLatency } from './file-events.js'
import { benchConfinementRaces } from './confinement-races.js'
import { envInt, round } from './stats.js'
import { benchToolBridgeRoundTrip } from './tool-bridge.js'
import { benchSecretScrubbing } from './secret-scrubbing.js'
import { benchMemoryBounds, benchWatcherBurst } from './memory-bounds.js'
import { benchAlignment } from './alignment.js'
import { benchJournalReplay } from './journal-replay.js'
import { benchJournaledRun } from './journaled-run.js'
import { benchRunDriver } from './run-driver.js'
import { benchTakeoverLatency } from './takeover-latency.js'
import { benchDurableOverhead, printDurableOverhead } from './durable-overhead.js'
import { benchSqliteStores } from './sqlite-stores.js'
import { benchReaper } from './reaper.js'
import { benchPostgresStores, benchPostgresTakeoverLatency, printPostgresStores } from './postgres-stores.js'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url))

/** When the run started, for {@link heading}. */
const runStarted = performance.now()

/** Whole seconds since the run started. */
function secondsSinceStart(): number {
  return Math.round((performance.now() - runStarted) / 1000)
}

/** Print a benchmark's title with the seconds since the run started (each is printed once that benchmark is done). */
function heading(title: string): void {
  console.log(`\n${title}  [done at ${secondsSinceStart()} s]`)
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'tanstack-bench-'))
  try {
    const provider = localProcessSandbox({ root })

    const exec = await benchExecRoundTrip(provider, envInt('BENCH_EXEC_ITERATIONS', 200))
    heading('(a) exec round trip of `true`')
    console.table(exec.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))

    const ndjson = await benchNdjsonThroughput(provider, envInt('BENCH_NDJSON_MB', 50), envInt('BENCH_NDJSON_RUNS', 3))
    heading('(b) spawnNdjson throughput')
    console.table([
      {
        ...ndjson,
        medianMs: round(ndjson.medianMs, 1),
        mbPerSecond: round(ndjson.mbPerSecond, 1),
        linesPerSecond: Math.round(ndjson.linesPerSecond),
      },
    ])

    const transcript = await loadTranscript(provider, root)
    const translatorLines = repeatTranscript(transcript, envInt('BENCH_TRANSLATOR_LINES', 10_000))
    const translator = await benchTranslatorThroughput(translatorLines, envInt('BENCH_TRANSLATOR_RUNS', 20))
    heading(`(c) Claude Code translator throughput (transcript: ${transcript.source})`)
    console.table(
      translator.map((row) => ({
        ...row,
        medianMs: round(row.medianMs, 2),
        chunksPerSecond: Math.round(row.chunksPerSecond),
        linesPerSecond: Math.round(row.linesPerSecond),
      })),
    )

    const demo = await benchDemoWallTime(envInt('BENCH_DEMO_RUNS', 3))
    heading(`(d) quickstart demo wall time, offline (ms since runDemo started; aimock paced at ${OFFLINE_STREAMING.ttft} ms to first chunk, ${OFFLINE_STREAMING.tps} chunks/s)`)
    console.table(demo.map((row) => ({ ...row, medianMs: round(row.medianMs, 0), minMs: round(row.minMs, 0), maxMs: round(row.maxMs, 0) })))

    const bridge = await benchToolBridgeRoundTrip(envInt('BENCH_BRIDGE_ITERATIONS', 500))
    heading('(e) tool bridge round trip, one tools/call of a no-op tool')
    console.table(bridge.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))

    const fileEvents = await benchFileEventLatency(provider, { iterations: envInt('BENCH_FILE_EVENT_ITERATIONS', 50), dockerIterations: envInt('BENCH_FILE_EVENT_DOCKER_ITERATIONS', 20) })
    heading('(f) file-event latency, from calling fs.write to the create event (writeMedianMs: the write itself)')
    console.table(fileEvents.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), p95Ms: round(row.p95Ms, 1), writeMedianMs: round(row.writeMedianMs, 1) })))

    const confinement = await benchConfinementRaces(provider, envInt('BENCH_CONFINEMENT_RACES', 100))
    heading('(g) confinement under symlink-swap races: host calls under a directory flipped to an outside symlink (escapes and hangs: goal 0)')
    console.table(confinement)

    const scrubbing = await benchSecretScrubbing(envInt('BENCH_SCRUB_CHUNKS', 20_000), envInt('BENCH_SCRUB_DIFF_KIB', 1024), envInt('BENCH_SCRUB_RUNS', 5))
    heading('(h) secret scrubbing: every chunk of a harness run, and a file.changed diff')
    console.table(scrubbing.map((row) => ({ ...row, medianMs: round(row.medianMs, 2) })))

    const cancels = await benchCancelSurvivors(provider, { iterations: envInt('BENCH_CANCEL_ITERATIONS', 10) })
    heading('(i) survivors of a cancel: `sleep 300.N` / `sleep 301.N` processes left after cancelling `( setsid sleep 300.N & ) ; sleep 301.N` (goal 0)')
    console.table(cancels)

    const memory = await benchMemoryBounds(root)
    const watcherBurst = await benchWatcherBurst(provider, envInt('BENCH_WATCH_BURST_FILES', 10_000))
    heading('(j) memory bounds: peak RSS of a child process per case (before the bounds: exec 200 MB, unread yes 1.7 GB, 300 MB line 615 MB, 2 GB sparse file 2.2 GB)')
    console.table(memory)
    heading('(j) watcher burst: files written at once on local-process, creates delivered within 30 s (before: 6,388 of 10,000; goal: all)')
    console.table([watcherBurst])

    const hardening = await benchDockerHardening(envInt('BENCH_DOCKER_CREATE_ITERATIONS', 10))
    heading('(k) Docker create() and destroy(): hardened defaults against the old behaviour')
    console.table(hardening.map((row) => ({ ...row, createMedianMs: round(row.createMedianMs, 0), createP95Ms: round(row.createP95Ms, 0), destroyMedianMs: round(row.destroyMedianMs, 0) })))

    const journalMb = envInt('BENCH_JOURNAL_MB', 256)
    const journalReplay = [
      ...(await benchJournalReplay('local-process', provider, ['local-process', root], journalMb)),
      ...(await benchJournalReplay('docker (Debian)', dockerSandbox({ image: 'tanstack-sandbox-debian:bookworm' }), ['docker', ''], journalMb)),
    ]
    heading(`(m) journal replay: a ${journalMb} MiB run journal read by cat, readJournal follow and readJournal poll over the same transport (goals: peak RSS <= 64 MB, >= 50% of cat)`)
    console.table(journalReplay)

    const journaledRun = await benchJournaledRun(provider, envInt('BENCH_JOURNALED_RUNS', 20))
    heading('(n) what journaling costs a run: Claude Code replaying a recorded session through chat() + withSandbox on local-process, stdout through a pipe or through the run journal')
    console.table(journaledRun.map((row) => ({ ...row, firstTextMedianMs: round(row.firstTextMedianMs, 0), endMedianMs: round(row.endMedianMs, 0), endP95Ms: round(row.endP95Ms, 0) })))

    const runDriver = await benchRunDriver({ runs: envInt('BENCH_RUN_DRIVER_RUNS', 5) })
    heading('(o) the run driver: pipeToRunLog into memoryStream + InMemoryRunStore, beside a plain pass over the stream and a pump that awaits one append per chunk')
    console.table(runDriver.map((row) => ({ ...row, medianMs: round(row.medianMs, 1) })))

    const takeover = await benchTakeoverLatency({ runs: envInt('BENCH_TAKEOVER_RUNS', 3), windows: [250, 5000], attaches: [1, 4] })
    heading('(p) takeover latency: attach to the first new chunk through resumeServerSentEventsResponse + sandboxRunDriver, 1,000 of 2,000 chunks stored (goal: <= fenceQuietMs + 300 ms; exactly one drive per run)')
    console.table(takeover.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), p95Ms: round(row.p95Ms, 1), overQuietMs: round(row.overQuietMs, 1) })))

    const sqliteStores = await benchSqliteStores({ lockIterations: envInt('BENCH_SQLITE_LOCKS', 2000), appendChunks: envInt('BENCH_SQLITE_APPEND_CHUNKS', 10_000), tailSamples: envInt('BENCH_SQLITE_TAIL_SAMPLES', 200) })
    heading('(q) SQLite stores (@tanstack/ai-sandbox-sqlite) beside the in-memory ones: lock acquire+release, append throughput, tail latency (append called -> tailer received)')
    console.table(sqliteStores.locks.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))
    console.table(sqliteStores.appends.map((row) => ({ ...row, chunksPerSecond: Math.round(row.chunksPerSecond) })))
    console.table(sqliteStores.tails.map((row) => ({ ...row, medianMs: round(row.medianMs, 2), p95Ms: round(row.p95Ms, 2) })))

    const durableOverhead = await benchDurableOverhead({ turns: envInt('BENCH_DURABLE_TURNS', 4) })
    printDurableOverhead(durableOverhead)
    console.log(`[(r) done at ${secondsSinceStart()} s]`)

    const postgresStores = await benchPostgresStores({ lockIterations: envInt('BENCH_PG_LOCKS', 2000), appendChunks: envInt('BENCH_PG_APPEND_CHUNKS', 10_000), tailSamples: envInt('BENCH_PG_TAIL_SAMPLES', 200) })
    const postgresTakeover = await benchPostgresTakeoverLatency({ runs: envInt('BENCH_PG_TAKEOVER_RUNS', 3), windows: [250, 1000], attaches: [1, 4] })
    printPostgresStores(postgresStores, postgresTakeover)
    console.log(`[(t) done at ${secondsSinceStart()} s]`)

    const reaper = await benchReaper(provider, join(root, 'reaper-journals'), envInt('BENCH_REAPER_RUNS', 10))
    heading('(s) reaper on local-process: one probeRunExit (median / p95), a sweep over producing runs (probes only), a sweep that expires and reclaims every run (includes the 5 s quiescence window), pruneJournals')
    console.table(reaper.map((row) => ({ ...row, totalMs: round(row.totalMs, 1), perRunMs: round(row.perRunMs, 1) })))

    // Last: the 1M-chunk log stays in memoryStream's process-wide map until the process exits.
    const alignment = await benchAlignment(undefined, envInt('BENCH_ALIGNMENT_RUNS', 3))
    heading('(l) replay alignment: alignToStoredLog over a memoryStream log, 1,000 new chunks past it (goal: linear, 100k under 500 ms)')
    console.table(alignment.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), nsPerChunk: Math.round(row.nsPerChunk), perChunkVsSmallest: round(row.perChunkVsSmallest, 2), passthroughMs: round(row.passthroughMs, 1) })))

    const results = {
      date: new Date().toISOString(),
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpus: cpus().length,
      execRoundTrip: exec,
      ndjsonThroughput: ndjson,
      claudeCodeTranslator: { transcript: transcript.source, rows: translator },
      quickstartDemo: demo,
      fileEventLatency: fileEvents,
      toolBridgeRoundTrip: bridge,
      dockerHardening: hardening,
      cancelSurvivors: cancels,
      confinementRaces: confinement,
      secretScrubbing: scrubbing,
      memoryBounds: memory,
      watcherBurst,
      replayAlignment: alignment,
      journalReplay,
      journaledRun,
      runDriver,
      takeoverLatency: takeover,
      durableOverhead,
      sqliteStores,
      postgresStores,
      postgresTakeover,
      reaper,
    }
    await mkdir(resultsDir, { recursive: true })
    await writeFile(join(resultsDir, 'results.json'), JSON.stringify(results, null, 2) + '\n')
    console.log(`\nwrote ${join(resultsDir, 'results.json')}`)
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

await main()
