/**
 * Benchmarks of the Codex adapter, offline: (a) translator throughput over a
 * ~10,000-line transcript built from the recorded 0.171 output (tool items
 * repeated with fresh ids between one `thread.started` and one
 * `turn.completed`), from parsed lines and from raw bytes through `toLines`;
 * (b) one turn of the real CLI through chat() + withSandbox on local-process
 * against aimock, split into CLI start (the `codex.session-id` chunk: the CLI
 * is up and its thread exists), first token and total. Prints console.table
 * and writes bench-results/results.json. Invariant: every pass of (a) yields
 * the same chunk count, every run of (b) ends with RUN_FINISHED.
 *
 * Usage: `pnpm --filter @testing/codex-e2e bench` (or `pnpm bench` at the root).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chat, type StreamChunk } from '@tanstack/ai'
import { CODEX_SESSION_EVENT, codexText, translateCodexLines } from '@tanstack/ai-codex'
import { createRunScopedIdGen, defineSandbox, toLines, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { codexBinary, codexVersion, FAKE_MODEL, makeCodexHome, startFakeModel } from './aimock.js'

const here = dirname(fileURLToPath(import.meta.url))
const recordings = join(here, '..', '..', '..', 'packages', 'ai-codex', 'tests', 'fixtures', 'codex')
const resultsFile = join(here, '..', 'bench-results', 'results.json')
const TRANSLATOR_PASSES = 15
const TURNS = 5

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const round = (value: number, digits = 1) => Number(value.toFixed(digits))

/** The transcript: the newest recording's tool and message items, repeated with unique ids, framed by one thread start and one turn end. */
function buildTranscript(targetLines: number): { version: string; text: string; lines: unknown[] } {
  const version = readdirSync(recordings).sort().at(-1)!
  const read = (scenario: string) => readFileSync(join(recordings, version, `${scenario}.ndjson`), 'utf8').split('\n').filter((l) => l !== '')
  const items = ['tools', 'mcp', 'thinking'].flatMap((s) => read(s).filter((l) => l.startsWith('{"type":"item.')))
  const [threadStarted, turnStarted] = read('tools')
  const turnCompleted = read('tools').at(-1)!
  const body: string[] = []
  for (let round = 0; body.length < targetLines; round++) for (const line of items) body.push(line.replace(/"id":"item_(\d+)"/, `"id":"item_${round}_$1"`))
  const all = [threadStarted!, turnStarted!, ...body, turnCompleted]
  return { version, text: `${all.join('\n')}\n`, lines: all.map((l) => JSON.parse(l) as unknown) }
}

async function translatorThroughput(): Promise<Record<string, unknown>[]> {
  const transcript = buildTranscript(10_000)
  const bytes = Buffer.byteLength(transcript.text)
  const options = () => ({ runId: 'bench', threadId: 'bench', genId: createRunScopedIdGen('bench') })
  const passes: Record<string, { ms: number[]; chunks: Set<number> }> = { 'parsed lines → chunks': { ms: [], chunks: new Set() }, 'raw bytes → toLines → JSON → chunks': { ms: [], chunks: new Set() } }
  for (let i = 0; i < TRANSLATOR_PASSES; i++) {
    let start = performance.now()
    const parsed = translateCodexLines(transcript.lines, options())
    passes['parsed lines → chunks']!.ms.push(performance.now() - start)
    passes['parsed lines → chunks']!.chunks.add(parsed.length)
    start = performance.now()
    const values: unknown[] = []
    for await (const line of toLines((async function* () { for (let at = 0; at < transcript.text.length; at += 65_536) yield transcript.text.slice(at, at + 65_536) })())) if (line !== '') values.push(JSON.parse(line))
    const raw = translateCodexLines(values, options())
    passes['raw bytes → toLines → JSON → chunks']!.ms.push(performance.now() - start)
    passes['raw bytes → toLines → JSON → chunks']!.chunks.add(raw.length)
  }
  return Object.entries(passes).map(([name, { ms, chunks }]) => {
    if (chunks.size !== 1) throw new Error(`${name}: the chunk count changed between passes (${[...chunks].join(', ')}); the translator is not deterministic.`)
    const m = median(ms)
    return { name, cli: transcript.version, lines: transcript.lines.length, chunks: [...chunks][0], passes: ms.length, medianMs: round(m, 2), linesPerSecond: Math.round(transcript.lines.length / (m / 1000)), MBPerSecond: round(bytes / 1e6 / (m / 1000)) }
  })
}

async function offlineTurn(): Promise<Record<string, unknown>[]> {
  const model = await startFakeModel(join(here, '..', 'fixtures', 'text.json'))
  const home = makeCodexHome(model.url, 'codex-bench-home')
  const root = mkdtempSync(join(tmpdir(), 'codex-bench-'))
  const sandbox = defineSandbox({ id: 'codex-bench', provider: localProcessSandbox({ root }) })
  const adapter = codexText(FAKE_MODEL, { executable: codexBinary(), env: home.env() })
  const marks: Record<'CLI start' | 'first token' | 'total', number[]> = { 'CLI start': [], 'first token': [], total: [] }
  try {
    for (let run = 0; run <= TURNS; run++) {
      const start = performance.now()
      let cliStart = NaN
      let firstToken = NaN
      let last: StreamChunk | undefined
      for await (const chunk of chat({ adapter, threadId: 'bench', messages: [{ role: 'user', content: 'Say hello' }], middleware: [withSandbox(sandbox)] } as never) as AsyncIterable<StreamChunk>) {
        if (chunk.type === 'CUSTOM' && chunk.name === CODEX_SESSION_EVENT && Number.isNaN(cliStart)) cliStart = performance.now() - start
        if (chunk.type === 'TEXT_MESSAGE_CONTENT' && Number.isNaN(firstToken)) firstToken = performance.now() - start
        last = chunk
      }
      const total = performance.now() - start
      if (last?.type !== 'RUN_FINISHED') throw new Error(`offline turn ${run} ended with ${last?.type ?? 'nothing'}, not RUN_FINISHED.`)
      if (run === 0) continue // warm-up: creates the sandbox and the CLI's state
      marks['CLI start'].push(cliStart)
      marks['first token'].push(firstToken)
      marks.total.push(total)
    }
  } finally {
    await sandbox.destroy({ key: sandbox.key({ threadId: 'bench', runId: '' }) })
    rmSync(root, { recursive: true, force: true })
    home.cleanup()
    await model.stop()
  }
  return Object.entries(marks).map(([milestone, ms]) => ({ milestone, cli: codexVersion(), runs: ms.length, medianMs: round(median(ms)), minMs: round(Math.min(...ms)), maxMs: round(Math.max(...ms)) }))
}

async function main(): Promise<void> {
  console.log('(a) Codex translator throughput')
  const translator = await translatorThroughput()
  console.table(translator)
  console.log(`(b) one offline Codex turn through chat() + withSandbox(local-process), ${TURNS} runs after a warm-up (ms since chat() started)`)
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
