/**
 * Benchmark (b): `spawnNdjson` throughput on a ~50 MB NDJSON stream produced
 * by `cat file` in a local-process sandbox. Owns the generated file (written
 * into the sandbox workspace, so destroying the sandbox removes it).
 * Invariant: every run must parse exactly the generated number of lines.
 */
import { createWriteStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { once } from 'node:events'
import { spawnNdjson, type SandboxProvider } from '@tanstack/ai-sandbox'
import { Bench } from 'tinybench'
import { BenchError, median } from './stats.js'

/** The result of the NDJSON throughput benchmark. */
export interface NdjsonThroughputRow {
  readonly name: string
  readonly runs: number
  /** Size of the stream in bytes. */
  readonly bytes: number
  readonly lines: number
  /** Median wall time of one full read, in ms. */
  readonly medianMs: number
  /** 10^6 bytes per second, from the median run. */
  readonly mbPerSecond: number
  /** Parsed lines per second, from the median run. */
  readonly linesPerSecond: number
}

/**
 * Generate ~`megabytes` MB of JSON lines in a fresh sandbox and time `runs`
 * full reads of `cat` through `spawnNdjson` (after one warm-up read).
 *
 * @param provider - A local-process provider; one sandbox is created and destroyed.
 * @param megabytes - Target size in 10^6 bytes. Default 50.
 * @param runs - Timed reads. Default 3.
 * @throws BenchError `bench-failed` when a read yields the wrong number of values or `cat` fails.
 */
export async function benchNdjsonThroughput(provider: SandboxProvider, megabytes = 50, runs = 3): Promise<NdjsonThroughputRow> {
  const handle = await provider.create()
  try {
    const file = join(handle.workspaceRoot, 'stream.ndjson')
    const lines = await writeNdjson(file, megabytes * 1_000_000)
    const { size: bytes } = await stat(file)
    const bench = new Bench({ iterations: runs, time: 0, warmupIterations: 1, warmupTime: 0, throws: true })
    bench.add('spawnNdjson(`cat stream.ndjson`)', async () => {
      let count = 0
      let exitCode = -1
      const stream = spawnNdjson(handle, 'cat stream.ndjson', { onExit: (exit) => void (exitCode = exit.exitCode) })
      for await (const _value of stream) count++
      if (exitCode !== 0 || count !== lines) {
        throw new BenchError(`spawnNdjson read ${count} of ${lines} lines; cat exited ${exitCode}.`)
      }
    })
    await bench.run()
    const samples = bench.tasks[0]?.result?.latency.samples ?? []
    const medianMs = median(samples)
    return {
      name: 'spawnNdjson over local-process `cat`',
      runs: samples.length,
      bytes,
      lines,
      medianMs,
      mbPerSecond: bytes / 1_000_000 / (medianMs / 1000),
      linesPerSecond: lines / (medianMs / 1000),
    }
  } finally {
    await handle.destroy()
  }
}

/** Write JSON lines shaped like agent CLI events until `targetBytes`; returns the line count. */
async function writeNdjson(path: string, targetBytes: number): Promise<number> {
  const out = createWriteStream(path)
  const text = 'The quick brown fox jumps over the lazy dog; ünïcödé ✓ 🌍. '.repeat(3)
  let written = 0
  let lines = 0
  while (written < targetBytes) {
    const batch: string[] = []
    for (let i = 0; i < 1000; i++, lines++) {
      batch.push(JSON.stringify({ type: 'assistant', session_id: 'bench', seq: lines, message: { content: [{ type: 'text', text }] } }))
    }
    const chunk = batch.join('\n') + '\n'
    written += Buffer.byteLength(chunk)
    if (!out.write(chunk)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
  return lines
}
