/**
 * Benchmark (m): replay of a large run journal (default 1 GiB,
 * BENCH_JOURNAL_MB) on local-process and Docker, three ways over the same
 * provider transport: `cat` of the journal through `process.spawn` (the
 * ceiling), `readJournal` follow (`tail -f`) and `readJournal` poll (bounded
 * base64 `exec` reads). Each read runs in a child process of its own, so its
 * peak RSS is its own. Goals (issue 11): peak RSS at most 64 MB, throughput
 * at least 50% of `cat`. The journal is written inside the sandbox by
 * `journaledCommand` (header, lines, genuine sentinel) and goes with it.
 */
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { journaledCommand, journalLaunchStdin, journalNonce, journalPaths, type SandboxProvider } from '@tanstack/ai-sandbox'
import { BenchError } from './stats.js'

/** One row: one way of reading the journal on one provider. */
export interface JournalReplayRow {
  readonly provider: string
  readonly reader: 'cat' | 'follow' | 'poll'
  readonly bytes: number
  readonly lines: number
  readonly seconds: number
  /** 10^6 bytes per second. */
  readonly mbPerSecond: number
  /** Throughput relative to `cat` on the same provider, in percent. */
  readonly percentOfCat: number
  /** Peak resident set size of the reading process, in MiB. */
  readonly peakRssMiB: number
  /** Peak RSS above the floor (a process that only loads the packages and resumes the sandbox), in MiB: what the reader itself holds. */
  readonly overBaselineMiB: number
}

const CASE_SCRIPT = fileURLToPath(new URL('./journal-replay-case.ts', import.meta.url))
const LINE = JSON.stringify({ type: 'stream_event', event: { type: 'content_block_delta', delta: { type: 'text_delta', text: 'x'.repeat(180) } } })

/**
 * Write a journal of about `megabytes` MiB in a new sandbox of `provider` and read it with every reader.
 *
 * @param name - Provider name for the table.
 * @param provider - Creates the sandbox (destroyed at the end).
 * @param resumeArgs - What the child needs to resume it: `[kind, root]`.
 * @param megabytes - Journal size in MiB.
 * @throws BenchError when a reader does not read every line.
 */
export async function benchJournalReplay(name: string, provider: SandboxProvider, resumeArgs: readonly [kind: 'local-process' | 'docker', root: string], megabytes: number): Promise<JournalReplayRow[]> {
  const handle = await provider.create()
  try {
    const runId = `bench-journal-${Date.now()}`
    const dir = '/tmp/tanstack-bench-runs'
    const paths = journalPaths(runId, dir)
    const count = Math.ceil((megabytes * 1024 * 1024) / (LINE.length + 1))
    // Launched as the harness launches (journaled-spawn.ts): a provider that keeps a journal secret (Docker) hands the
    // nonce in on stdin, and every reader then expects the header that secret gives.
    const salt = randomBytes(16).toString('hex')
    const nonce = handle.journalSecret === undefined ? undefined : journalNonce(handle.journalSecret, runId, salt)
    const started = await handle.process.exec(journaledCommand(paths, `yes '${LINE}' | head -n ${count}`, { nonceFromStdin: nonce !== undefined }), nonce === undefined ? {} : { stdin: journalLaunchStdin(nonce, salt) })
    if (started.exitCode !== 0) throw new BenchError(`could not start the journal writer: ${started.stderr}`)
    // Wait for the sentinel: the exit probe reads the journal's end.
    for (;;) {
      const probe = await handle.process.exec(`tail -c 200 ${paths.journal} | grep -c '"__nonce"' || true`)
      if (probe.stdout.trim() !== '0') break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const rows: JournalReplayRow[] = []
    const runCase = (reader: string) =>
      new Promise<{ bytes: number; lines: number; ms: number; maxRssBytes: number }>((resolve, reject) => {
        const child = fork(CASE_SCRIPT, [resumeArgs[0], handle.id, resumeArgs[1], runId, dir, reader], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
        let got: { bytes: number; lines: number; ms: number; maxRssBytes: number } | undefined
        child.on('message', (message) => (got = message as typeof got))
        child.on('error', reject)
        child.on('exit', (code) => (got ? resolve(got) : reject(new BenchError(`journal replay case ${reader} exited ${code} without an answer`))))
      })
    const baseline = await runCase('baseline')
    for (const reader of ['cat', 'follow', 'poll'] as const) {
      const answer = await runCase(reader)
      // cat counts the header and sentinel lines too (and the blank line before the sentinel).
      const expected = reader === 'cat' ? count + 3 : count
      if (answer.lines !== expected) throw new BenchError(`${reader} read ${answer.lines} lines of ${expected}`)
      const mbPerSecond = answer.bytes / 1e6 / (answer.ms / 1000)
      const cat = rows.find((row) => row.reader === 'cat')
      rows.push({
        provider: name,
        reader,
        bytes: answer.bytes,
        lines: answer.lines,
        seconds: Math.round(answer.ms) / 1000,
        mbPerSecond: Math.round(mbPerSecond),
        percentOfCat: cat ? Math.round((mbPerSecond / cat.mbPerSecond) * 100) : 100,
        peakRssMiB: Math.round(answer.maxRssBytes / 1024 / 1024),
        overBaselineMiB: Math.round((answer.maxRssBytes - baseline.maxRssBytes) / 1024 / 1024),
      })
    }
    await handle.process.exec(`rm -rf ${dir}`)
    return rows
  } finally {
    await handle.destroy()
  }
}
