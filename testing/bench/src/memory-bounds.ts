/**
 * Benchmark (j): memory bounds. Peak RSS of a child Node process per case
 * (each forked fresh, so cases never pollute each other; see
 * `memory-bounds-case.ts`): exec of 200 MB of output (stopped at
 * maxExecOutputBytes), a `yes` spawn nobody reads for 5 s (paused at the
 * stream high-water mark), a 300 MB NDJSON line through spawnNdjson (stopped
 * at DEFAULT_MAX_LINE_BYTES) and a 2 GB sparse file in a run's diff (reported
 * as too large, never read), beside a baseline that only loads the packages.
 * Then the watcher count: 10,000 files written at once on local-process,
 * how many `create` events `watchWorkspace` delivered within 30 s (goal 10,000).
 * Old figures (before the bounds, from issue 16): 200 MB, 1.7 GB, 615 MB, 2.2 GB of
 * host memory, and 6,388 of 10,000 files.
 */
import { fork } from 'node:child_process'
import { writeFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { watchWorkspace, type SandboxProvider } from '@tanstack/ai-sandbox'
import { BenchError } from './stats.js'

/** One row: a case's peak RSS. */
export interface MemoryBoundRow {
  readonly case: string
  /** Peak resident set size of the child process, in MiB. */
  readonly peakRssMiB: number
  /** What the case ended with (the typed error, or what was read). */
  readonly outcome: string
}

/** The watcher row: events delivered for a burst of files. */
export interface WatcherBurstRow {
  readonly files: number
  readonly createsWithin30s: number
  /** ms from the last file written to the last create event. */
  readonly lastEventAfterMs: number
}

const CASES = ['baseline', 'exec 200 MB of output', 'unread `yes` spawn for 5 s', '300 MB NDJSON line through spawnNdjson', '2 GB sparse file in a run diff'] as const
const CASE_SCRIPT = fileURLToPath(new URL('./memory-bounds-case.ts', import.meta.url))

/** Run every case in its own child process. */
export async function benchMemoryBounds(root: string): Promise<MemoryBoundRow[]> {
  const rows: MemoryBoundRow[] = []
  for (const name of CASES) {
    const answer = await new Promise<{ outcome: string; maxRssBytes: number }>((resolve, reject) => {
      const child = fork(CASE_SCRIPT, [name, root], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      let got: { outcome: string; maxRssBytes: number } | undefined
      child.on('message', (message) => (got = message as typeof got))
      child.on('error', reject)
      child.on('exit', (code) => (got ? resolve(got) : reject(new BenchError(`memory-bounds case ${JSON.stringify(name)} exited ${code} without an answer`))))
    })
    rows.push({ case: name, peakRssMiB: Math.round(answer.maxRssBytes / 1024 / 1024), outcome: answer.outcome })
  }
  return rows
}

/** Write `files` files at once into a new directory of a local-process sandbox and count the creates. */
export async function benchWatcherBurst(provider: SandboxProvider, files: number): Promise<WatcherBurstRow> {
  const handle = await provider.create()
  try {
    const seen = new Set<string>()
    let lastEvent = 0
    const watcher = await watchWorkspace(handle, {
      onEvent: (event) => {
        if (event.type !== 'create' || !/\/burst\/f\d+$/.test(event.path)) return
        seen.add(event.path)
        lastEvent = Date.now()
      },
    })
    const dir = join(handle.workspaceRoot, 'burst')
    await mkdir(dir)
    for (let start = 0; start < files; start += 500) {
      await Promise.all(Array.from({ length: Math.min(500, files - start) }, (_, i) => writeFile(join(dir, `f${start + i}`), 'x')))
    }
    const written = Date.now()
    while (seen.size < files && Date.now() - written < 30_000) await new Promise((resolve) => setTimeout(resolve, 100))
    await watcher.stop()
    return { files, createsWithin30s: seen.size, lastEventAfterMs: Math.max(0, lastEvent - written) }
  } finally {
    await handle.destroy()
  }
}
