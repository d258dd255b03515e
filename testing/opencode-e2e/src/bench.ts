/**
 * Benchmarks of the OpenCode adapter, offline: (a) translator throughput over
 * a ~10,000-line transcript built from the newest recorded output (the tool,
 * reasoning, text and step lines repeated with fresh call ids), from parsed
 * lines and from raw bytes through `toLines`; (b) one turn of the real CLI
 * through chat() + withSandbox on local-process against aimock, split into
 * CLI start (the fake model received the CLI's first request: the CLI is up
 * and has built its prompt), first event (the `opencode.session-id` chunk),
 * first token and total, for a new HOME (OpenCode creates its database) and
 * then warm. OpenCode prints its first event only with the first finished
 * part, so first event and first token nearly coincide. Prints console.table and writes
 * bench-results/results.json. Invariant: every pass of (a) yields the same
 * chunk count, every run of (b) ends with RUN_FINISHED.
 *
 * Usage: `pnpm --filter @testing/opencode-e2e bench` (or `pnpm bench` at the root).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chat, type StreamChunk } from '@tanstack/ai'
import { OPENCODE_SESSION_EVENT, opencodeText, translateOpencodeLines } from '@tanstack/ai-opencode'
import { createRunScopedIdGen, defineSandbox, toLines, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { Bench } from 'tinybench'
import { FAKE_MODEL, makeOpencodeHome, opencodeBinary, opencodeVersion, providerConfig, startFakeModel, type FakeModel, type OpencodeHome } from './aimock.js'

const here = dirname(fileURLToPath(import.meta.url))
const recordings = join(here, '..', '..', '..', 'packages', 'ai-opencode', 'tests', 'fixtures', 'opencode')
const resultsFile = join(here, '..', 'bench-results', 'results.json')
const TRANSLATOR_PASSES = 15
const WARM_TURNS = 5

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const round = (value: number, digits = 1) => Number(value.toFixed(digits))

/** The transcript: the newest recording's lines (no error line), repeated with unique call ids. */
function buildTranscript(targetLines: number): { version: string; text: string; lines: unknown[] } {
  const version = readdirSync(recordings).sort().at(-1)!
  const read = (scenario: string) => readFileSync(join(recordings, version, `${scenario}.ndjson`), 'utf8').split('\n').filter((l) => l !== '')
  const source = ['tools', 'thinking', 'policy-denied', 'text'].flatMap(read)
  const body: string[] = []
  for (let round = 0; body.length < targetLines; round++) for (const line of source) body.push(line.replace(/"callID":"([^"]+)"/, `"callID":"$1_${round}"`))
  return { version, text: `${body.join('\n')}\n`, lines: body.map((l) => JSON.parse(l) as unknown) }
}

async function translatorThroughput(): Promise<Record<string, unknown>[]> {
  const transcript = buildTranscript(10_000)
  const bytes = Buffer.byteLength(transcript.text)
  const options = () => ({ runId: 'bench', threadId: 'bench', genId: createRunScopedIdGen('bench') })
  const counts: Record<string, Set<number>> = {}
  const count = (name: string, chunks: StreamChunk[]) => {
    if (chunks.at(-1)?.type !== 'RUN_FINISHED') throw new Error(`${name}: the transcript did not end in RUN_FINISHED.`)
    ;(counts[name] ??= new Set()).add(chunks.length)
  }
  const parsedName = 'parsed lines → chunks'
  const rawName = 'raw bytes → toLines → JSON → chunks'
  const bench = new Bench({ iterations: TRANSLATOR_PASSES, time: 0, warmupIterations: 1, warmupTime: 0, throws: true })
  bench.add(parsedName, () => count(parsedName, translateOpencodeLines(transcript.lines, options())))
  bench.add(rawName, async () => {
    const values: unknown[] = []
    const pieces = (async function* () {
      for (let at = 0; at < transcript.text.length; at += 65_536) yield transcript.text.slice(at, at + 65_536)
    })()
    for await (const line of toLines(pieces)) if (line !== '') values.push(JSON.parse(line))
    count(rawName, translateOpencodeLines(values, options()))
  })
  await bench.run()
  return bench.tasks.map((task) => {
    const chunks = counts[task.name]!
    if (chunks.size !== 1) throw new Error(`${task.name}: the chunk count changed between passes (${[...chunks].join(', ')}); the translator is not deterministic.`)
    const ms = [...(task.result?.latency.samples ?? [])]
    const m = median(ms)
    return { name: task.name, cli: transcript.version, lines: transcript.lines.length, chunks: [...chunks][0], passes: ms.length, medianMs: round(m, 2), linesPerSecond: Math.round(transcript.lines.length / (m / 1000)), MBPerSecond: round(bytes / 1e6 / (m / 1000)) }
  })
}

const MILESTONES = ['CLI start', 'first event', 'first token', 'total'] as const

/** Milestones of one turn, in ms since chat() was called. */
type TurnMarks = Record<(typeof MILESTONES)[number], number>

async function oneTurn(adapter: ReturnType<typeof opencodeText>, sandbox: ReturnType<typeof defineSandbox>, model: FakeModel): Promise<TurnMarks> {
  const requestsBefore = model.requests().length
  const startedAt = Date.now() // the journal's clock
  const start = performance.now()
  let firstEvent = NaN
  let firstToken = NaN
  let last: StreamChunk | undefined
  for await (const chunk of chat({ adapter, threadId: 'bench', messages: [{ role: 'user', content: 'Say hello' }], middleware: [withSandbox(sandbox)] } as never) as AsyncIterable<StreamChunk>) {
    if (chunk.type === 'CUSTOM' && chunk.name === OPENCODE_SESSION_EVENT && Number.isNaN(firstEvent)) firstEvent = performance.now() - start
    if (chunk.type === 'TEXT_MESSAGE_CONTENT' && Number.isNaN(firstToken)) firstToken = performance.now() - start
    last = chunk
  }
  const total = performance.now() - start
  if (last?.type !== 'RUN_FINISHED') throw new Error(`the offline turn ended with ${last?.type ?? 'nothing'}, not RUN_FINISHED.`)
  const request = model.requests()[requestsBefore]
  if (!request) throw new Error('the offline turn finished without a model request.')
  return { 'CLI start': request.timestamp - startedAt, 'first event': firstEvent, 'first token': firstToken, total }
}

async function offlineTurn(): Promise<Record<string, unknown>[]> {
  const model = await startFakeModel(join(here, '..', 'fixtures', 'text.json'))
  const root = mkdtempSync(join(tmpdir(), 'opencode-bench-'))
  const sandbox = defineSandbox({ id: 'opencode-bench', provider: localProcessSandbox({ root }) })
  const homes: OpencodeHome[] = []
  const rows: Record<string, unknown>[] = []
  const report = (phase: string, marks: TurnMarks[]) => {
    for (const milestone of MILESTONES) {
      const ms = marks.map((m) => m[milestone])
      rows.push({ phase, milestone, cli: opencodeVersion(), runs: ms.length, medianMs: round(median(ms)), minMs: round(Math.min(...ms)), maxMs: round(Math.max(...ms)) })
    }
  }
  try {
    const adapterFor = (home: OpencodeHome) => opencodeText(FAKE_MODEL, { executable: opencodeBinary(), env: home.env(), config: providerConfig(model.url) })
    // New HOME each run: OpenCode creates and migrates its database first.
    const cold: TurnMarks[] = []
    for (let run = 0; run < 3; run++) {
      const home = makeOpencodeHome('opencode-bench-home')
      homes.push(home)
      cold.push(await oneTurn(adapterFor(home), sandbox, model))
    }
    report('new HOME', cold)
    const warmHome = homes.at(-1)!
    const warm: TurnMarks[] = []
    for (let run = 0; run < WARM_TURNS; run++) warm.push(await oneTurn(adapterFor(warmHome), sandbox, model))
    report('warm HOME', warm)
  } finally {
    await sandbox.destroy({ key: sandbox.key({ threadId: 'bench', runId: '' }) })
    rmSync(root, { recursive: true, force: true })
    for (const home of homes) home.cleanup()
    await model.stop()
  }
  return rows
}

async function main(): Promise<void> {
  console.log('(a) OpenCode translator throughput')
  const translator = await translatorThroughput()
  console.table(translator)
  console.log(`(b) one offline OpenCode turn through chat() + withSandbox(local-process): 3 runs with a new HOME, then ${WARM_TURNS} with a warm one (ms since chat() started)`)
  const turn = await offlineTurn()
  console.table(turn)
  mkdirSync(dirname(resultsFile), { recursive: true })
  writeFileSync(resultsFile, `${JSON.stringify({ recordedAt: new Date().toISOString(), node: process.version, translator, offlineTurn: turn }, null, 2)}\n`)
  console.log(`results: ${resultsFile}`)
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error)
  process.exitCode = 1
})
