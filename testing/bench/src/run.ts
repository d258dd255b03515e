/**
 * Entry point of `pnpm --filter @testing/bench bench`: runs every benchmark
 * against the built packages, prints one table per benchmark and writes
 * `bench-results/results.json`. Sandboxes live in a temp root removed at the
 * end. Sizes: BENCH_EXEC_ITERATIONS (200), BENCH_NDJSON_MB (50), BENCH_NDJSON_RUNS (3),
 * BENCH_TRANSLATOR_LINES (10000), BENCH_TRANSLATOR_RUNS (20), BENCH_DEMO_RUNS (3),
 * BENCH_BRIDGE_ITERATIONS (500), BENCH_FILE_EVENT_ITERATIONS (50), BENCH_FILE_EVENT_DOCKER_ITERATIONS (20).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { OFFLINE_STREAMING } from '@example/quickstart'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { benchDemoWallTime, benchTranslatorThroughput, loadTranscript, repeatTranscript } from './claude-code.js'
import { benchExecRoundTrip } from './exec-round-trip.js'
import { benchNdjsonThroughput } from './ndjson-throughput.js'
import { benchFileEventLatency } from './file-events.js'
import { envInt, round } from './stats.js'
import { benchToolBridgeRoundTrip } from './tool-bridge.js'

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url))

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'tanstack-bench-'))
  try {
    const provider = localProcessSandbox({ root })

    const exec = await benchExecRoundTrip(provider, envInt('BENCH_EXEC_ITERATIONS', 200))
    console.log('\n(a) exec round trip of `true`')
    console.table(exec.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))

    const ndjson = await benchNdjsonThroughput(provider, envInt('BENCH_NDJSON_MB', 50), envInt('BENCH_NDJSON_RUNS', 3))
    console.log('\n(b) spawnNdjson throughput')
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
    console.log(`\n(c) Claude Code translator throughput (transcript: ${transcript.source})`)
    console.table(
      translator.map((row) => ({
        ...row,
        medianMs: round(row.medianMs, 2),
        chunksPerSecond: Math.round(row.chunksPerSecond),
        linesPerSecond: Math.round(row.linesPerSecond),
      })),
    )

    const demo = await benchDemoWallTime(envInt('BENCH_DEMO_RUNS', 3))
    console.log(`\n(d) quickstart demo wall time, offline (ms since runDemo started; aimock paced at ${OFFLINE_STREAMING.ttft} ms to first chunk, ${OFFLINE_STREAMING.tps} chunks/s)`)
    console.table(demo.map((row) => ({ ...row, medianMs: round(row.medianMs, 0), minMs: round(row.minMs, 0), maxMs: round(row.maxMs, 0) })))

    const bridge = await benchToolBridgeRoundTrip(envInt('BENCH_BRIDGE_ITERATIONS', 500))
    console.log('\n(e) tool bridge round trip, one tools/call of a no-op tool')
    console.table(bridge.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))

    const fileEvents = await benchFileEventLatency(provider, { iterations: envInt('BENCH_FILE_EVENT_ITERATIONS', 50), dockerIterations: envInt('BENCH_FILE_EVENT_DOCKER_ITERATIONS', 20) })
    console.log('\n(f) file-event latency, from calling fs.write to the create event (writeMedianMs: the write itself)')
    console.table(fileEvents.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), p95Ms: round(row.p95Ms, 1), writeMedianMs: round(row.writeMedianMs, 1) })))

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
    }
    await mkdir(resultsDir, { recursive: true })
    await writeFile(join(resultsDir, 'results.json'), JSON.stringify(results, null, 2) + '\n')
    console.log(`\nwrote ${join(resultsDir, 'results.json')}`)
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

await main()
