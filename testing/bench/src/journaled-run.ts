/**
 * Benchmark (n): what journaling costs a harness run. The Claude Code adapter
 * runs a recorded CLI session (a script that prints the recording
 * packages/ai-claude-code/tests/fixtures/claude-code/2.1.332/text.ndjson)
 * through chat() + withSandbox on local-process, `runs` times without
 * durability (stdout read through a pipe) and `runs` times durable (stdout
 * through the run journal, read back by a follow reader). It reports the time
 * to the first text chunk and to the end of the stream, per mode. Every run
 * checks that it finished and streamed the recorded text, and that its
 * journal was deleted.
 */
import { randomUUID } from 'node:crypto'
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chat, defineChatMiddleware, InMemoryRunStore, memoryStream, type StreamChunk } from '@tanstack/ai'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { defineSandbox, provideSandboxDurability, SandboxDurabilityCapability, shellQuote, withSandbox, type SandboxProvider, type SandboxRunDurability } from '@tanstack/ai-sandbox'
import { BenchError, median, percentile } from './stats.js'

/** One row: one mode's timings over `runs` runs, in ms. */
export interface JournaledRunRow {
  readonly mode: 'pipe (not durable)' | 'journal (durable)'
  readonly runs: number
  readonly firstTextMedianMs: number
  readonly endMedianMs: number
  readonly endP95Ms: number
}

const RECORDING = fileURLToPath(new URL('../../../packages/ai-claude-code/tests/fixtures/claude-code/2.1.332/text.ndjson', import.meta.url))
const EXPECTED_TEXT = 'Hello from the fake model. This reply is long enough to arrive in several streamed deltas.'

/**
 * Time `runs` plain and `runs` journaled Claude Code runs of a recorded session.
 *
 * @param provider - A local-process provider.
 * @param runs - Runs per mode (default 20).
 * @throws BenchError `bench-failed` when a run does not finish with the recorded text or leaves its journal.
 */
export async function benchJournaledRun(provider: SandboxProvider, runs = 20): Promise<JournaledRunRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-journaled-run-'))
  try {
    const cli = join(dir, 'claude')
    await writeFile(cli, `#!/bin/sh\ncat >/dev/null\nexec cat ${shellQuote(RECORDING)}\n`)
    await chmod(cli, 0o755)
    const journalDir = join(dir, 'journals')
    const sandbox = defineSandbox({ id: 'bench-journaled-run', provider })
    const threadId = `bench-journaled-run-${randomUUID()}`
    const adapter = claudeCodeText('sonnet', { executable: cli })
    const rows: JournaledRunRow[] = []
    try {
      for (const mode of ['pipe (not durable)', 'journal (durable)'] as const) {
        const firstText: number[] = []
        const end: number[] = []
        for (let i = 0; i < runs; i++) {
          const runId = `bench-${randomUUID()}`
          const durability: SandboxRunDurability = { runs: new InMemoryRunStore(), log: memoryStream({ runId }), attach: false, journalDir }
          const durable = defineChatMiddleware({ name: 'bench-durability', provides: [SandboxDurabilityCapability], setup: (ctx) => void provideSandboxDurability(ctx, durability) })
          const started = performance.now()
          let first: number | undefined
          let text = ''
          let last: StreamChunk | undefined
          const stream = chat({ adapter, runId, threadId, messages: [{ role: 'user', content: 'Say hello' }], middleware: mode === 'journal (durable)' ? [withSandbox(sandbox), durable] : [withSandbox(sandbox)] }) as AsyncIterable<StreamChunk>
          for await (const chunk of stream) {
            if (chunk.type === 'TEXT_MESSAGE_CONTENT') {
              first ??= performance.now() - started
              text += chunk.delta
            }
            last = chunk
          }
          end.push(performance.now() - started)
          if (last?.type !== 'RUN_FINISHED' || text !== EXPECTED_TEXT || first === undefined) throw new BenchError(`journaled-run bench: a ${mode} run ended with ${last?.type} and streamed ${JSON.stringify(text.slice(0, 80))}, not the recorded text.`)
          firstText.push(first)
        }
        rows.push({ mode, runs, firstTextMedianMs: median(firstText), endMedianMs: median(end), endP95Ms: percentile(end, 95) })
      }
    } finally {
      await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    }
    // A run whose stream ended before its reader saw the sentinel deletes its journal in the background: wait for that (bounded), then count.
    let left = await readdir(journalDir).catch(() => [])
    for (let waited = 0; left.length > 0 && waited < 10_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      left = await readdir(journalDir).catch(() => [])
    }
    if (left.length > 0) throw new BenchError(`journaled-run bench: ${left.length} journal file(s) were left in ${journalDir}.`)
    return rows
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
