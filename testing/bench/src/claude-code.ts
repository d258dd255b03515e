/**
 * Benchmarks of the Claude Code adapter: (c) translator throughput over a
 * 10,000-line transcript built by repeating recorded CLI output, parsed and
 * from raw text; (d) the quickstart demo's wall time split into sandbox
 * ready, first token and total. Recordings come from
 * `packages/ai-claude-code/tests/fixtures/claude-code/<version>/`; without
 * them (or with BENCH_CLAUDE_RECORD=1) one is recorded by running the real
 * CLI against the quickstart's offline model. Invariant: every timed run
 * must produce the same chunk count, and every demo run must change files.
 */
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { OFFLINE_TASK, resolveClaudeExecutable, runDemo, SAMPLE_FILES, startOfflineModel } from '@example/quickstart'
import { buildClaudeCommand, createClaudeCodeTranslator } from '@tanstack/ai-claude-code'
import { spawnNdjson, type SandboxProvider } from '@tanstack/ai-sandbox'
import { Bench } from 'tinybench'
import { BenchError, median } from './stats.js'

const CLI_VERSION = '2.1.332'
const recordingsDir = fileURLToPath(new URL(`../../../packages/ai-claude-code/tests/fixtures/claude-code/${CLI_VERSION}/`, import.meta.url))

/** A transcript to translate and where it came from. */
export interface Transcript {
  /** `recordings (tools, text, …)` or `recorded now against aimock`. */
  readonly source: string
  /** The raw NDJSON lines of one pass, `result` line last. */
  readonly lines: readonly string[]
}

/** One row of the translator benchmark. */
export interface TranslatorThroughputRow {
  readonly name: string
  readonly runs: number
  readonly lines: number
  /** Chunks produced per pass (identical in every run). */
  readonly chunks: number
  readonly medianMs: number
  readonly chunksPerSecond: number
  readonly linesPerSecond: number
}

/** One row of the demo wall-time benchmark (ms since `runDemo` started). */
export interface DemoWallTimeRow {
  readonly milestone: 'sandbox ready' | 'first token' | 'total'
  readonly runs: number
  readonly medianMs: number
  readonly minMs: number
  readonly maxMs: number
}

/**
 * Load the recorded successful sessions, or record one when there are none.
 * @param provider - Used only when recording: one sandbox is created and destroyed.
 * @param scratch - A directory for the CLI's HOME when recording.
 * @throws BenchError `bench-failed` when recording yields no result line.
 */
export async function loadTranscript(provider: SandboxProvider, scratch: string): Promise<Transcript> {
  if (process.env.BENCH_CLAUDE_RECORD !== '1' && existsSync(recordingsDir)) {
    const files = (await readdir(recordingsDir)).filter((name) => name.endsWith('.ndjson')).sort()
    const sessions: { name: string; lines: string[] }[] = []
    for (const name of files) {
      const lines = (await readFile(join(recordingsDir, name), 'utf8')).split('\n').filter((line) => line.trim() !== '')
      const result = lines.map((line) => JSON.parse(line) as { type?: string; is_error?: boolean }).find((line) => line.type === 'result')
      if (result && result.is_error !== true) sessions.push({ name: name.replace(/\.ndjson$/, ''), lines })
    }
    if (sessions.length > 0) return { source: `recordings ${CLI_VERSION} (${sessions.map((s) => s.name).join(', ')})`, lines: joinSessions(sessions.map((s) => s.lines)) }
  }
  return { source: 'recorded now against aimock', lines: await recordTranscript(provider, scratch) }
}

/** Concatenate sessions into one stream: drop every `result` line but the last, so the translator stays open. */
function joinSessions(sessions: readonly string[][]): string[] {
  const isResult = (line: string) => (JSON.parse(line) as { type?: string }).type === 'result'
  const body = sessions.flatMap((lines) => lines.filter((line) => !isResult(line)))
  const last = sessions.at(-1)!.find(isResult)!
  return [...body, last]
}

/** Run the real CLI once against the quickstart's offline model in a local-process sandbox. */
async function recordTranscript(provider: SandboxProvider, scratch: string): Promise<string[]> {
  const handle = await provider.create()
  const model = await startOfflineModel()
  try {
    for (const [path, content] of Object.entries(SAMPLE_FILES)) await handle.fs.write(path, content)
    await model.useWorkspace(handle.workspaceRoot)
    const home = join(scratch, 'claude-home')
    await mkdir(home, { recursive: true })
    const command = buildClaudeCommand({ executable: resolveClaudeExecutable(), model: 'claude-sonnet-4-5', permissionMode: 'bypassPermissions' })
    const env = { HOME: home, CLAUDE_CODE_TMPDIR: home, ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'offline-bench', CLAUDE_CODE_MAX_RETRIES: '0', IS_SANDBOX: '1', DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' }
    const lines: string[] = []
    for await (const value of spawnNdjson(handle, command, { stdin: OFFLINE_TASK, env })) lines.push(JSON.stringify(value))
    if (!lines.some((line) => line.includes('"type":"result"'))) throw new BenchError(`Recording the Claude Code transcript failed: ${lines.length} lines and no result line.`)
    return lines
  } finally {
    await model.stop()
    await handle.destroy()
  }
}

/** Repeat `transcript` (without its result line) to `target` lines, then end with the result line. */
export function repeatTranscript(transcript: Transcript, target: number): string[] {
  const body = transcript.lines.slice(0, -1)
  const out: string[] = []
  while (out.length < target - 1) out.push(...body.slice(0, target - 1 - out.length))
  out.push(transcript.lines.at(-1)!)
  return out
}

/**
 * Time the translator over `lines`, once on pre-parsed values and once including `JSON.parse`.
 * @param runs - Timed passes per row (after one warm-up). Default 20.
 * @throws BenchError `bench-failed` when a pass yields a different chunk count or no `RUN_FINISHED`.
 */
export async function benchTranslatorThroughput(lines: readonly string[], runs = 20): Promise<TranslatorThroughputRow[]> {
  const parsed = lines.map((line) => JSON.parse(line) as unknown)
  const translate = (values: Iterable<unknown>) => {
    let n = 0
    const translator = createClaudeCodeTranslator({ runId: 'bench', threadId: 'bench', genId: () => `bench-${n++}` })
    let chunks = translator.start().length
    let finished = false
    for (const value of values) for (const chunk of translator.push(value)) {
      chunks++
      if (chunk.type === 'RUN_FINISHED') finished = true
    }
    chunks += translator.finish({ exitCode: 0, stderrTail: '' }).length
    if (!finished) throw new BenchError('The translator never emitted RUN_FINISHED for the benchmark transcript.')
    return chunks
  }
  const expected = translate(parsed)
  const check = (chunks: number) => {
    if (chunks !== expected) throw new BenchError(`The translator produced ${chunks} chunks, expected ${expected}: it is not deterministic.`)
  }
  const bench = new Bench({ iterations: runs, time: 0, warmupIterations: 1, warmupTime: 0, throws: true })
  bench.add(`translate ${lines.length} parsed lines`, () => check(translate(parsed)))
  bench.add(`JSON.parse + translate ${lines.length} raw lines`, () => check(translate(lines.map((line) => JSON.parse(line) as unknown))))
  await bench.run()
  return bench.tasks.map((task) => {
    const samples = task.result?.latency.samples ?? []
    const medianMs = median(samples)
    return { name: task.name, runs: samples.length, lines: lines.length, chunks: expected, medianMs, chunksPerSecond: expected / (medianMs / 1000), linesPerSecond: lines.length / (medianMs / 1000) }
  })
}

/**
 * Run the offline quickstart `runs` times and report each milestone's median, min and max.
 * @param runs - Demo runs. Default 3.
 * @throws BenchError `bench-failed` when a run changes no file.
 */
export async function benchDemoWallTime(runs = 3): Promise<DemoWallTimeRow[]> {
  const samples = { 'sandbox ready': [] as number[], 'first token': [] as number[], total: [] as number[] }
  for (let i = 0; i < runs; i++) {
    const result = await runDemo()
    if (result.changes.files.length === 0) throw new BenchError(`Demo run ${i + 1} changed no file.`)
    samples['sandbox ready'].push(result.timings.sandboxReadyMs)
    samples['first token'].push(result.timings.firstTokenMs)
    samples.total.push(result.timings.totalMs)
  }
  return (Object.keys(samples) as (keyof typeof samples)[]).map((milestone) => ({
    milestone,
    runs,
    medianMs: median(samples[milestone]),
    minMs: Math.min(...samples[milestone]),
    maxMs: Math.max(...samples[milestone]),
  }))
}
