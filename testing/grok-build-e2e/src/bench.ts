/**
 * Benchmarks of the Grok Build adapter, printed as tables and written to
 * `bench-results/results.json`:
 * (a) translator throughput on a recorded ACP transcript of the fake agent
 *     (its tool turn's updates repeated to 10,000 wire messages), parsed
 *     and from raw JSON lines;
 * (b) one offline turn's wall time against the FAKE ACP agent (the real
 *     Grok CLI cannot be installed here) in a local-process sandbox, split
 *     into CLI start (the `initialize` answer arrived), first token and
 *     total, median of several runs after a warm-up.
 * Invariant: every timed translation yields the same chunk count, every
 * timed turn ends with RUN_FINISHED.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chat, type StreamChunk } from '@tanstack/ai'
import { createGrokBuildTranslator, GROK_BUILD_INIT_EVENT, grokBuildText, type GrokAcpTranscriptEntry } from '@tanstack/ai-grok-build'
import { defineSandbox, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { ensureFakeAgent } from './build-fake.js'
import { FAKE_GROK_VERSION } from './fake-agent/version.js'
import { makeGrokHome } from './grok-home.js'

const recording = fileURLToPath(new URL(`../../../packages/ai-grok-build/tests/fixtures/grok-build/${FAKE_GROK_VERSION}/tools-auto-approved.ndjson`, import.meta.url))
const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url))

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
const round = (n: number, digits = 2) => Number(n.toFixed(digits))

/** The recording with its prompt-turn updates repeated (fresh tool and message ids each time) to `target` entries. */
export function longTranscript(target: number): GrokAcpTranscriptEntry[] {
  const entries = readFileSync(recording, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as GrokAcpTranscriptEntry)
  const start = entries.findIndex((e) => e.message.method === 'session/prompt') + 1
  const head = entries.slice(0, start)
  const body = entries.slice(start, -1)
  const last = entries.at(-1)!
  const out = [...head]
  for (let round = 0; out.length < target - 1; round++) {
    for (const entry of body) {
      if (out.length >= target - 1) break
      out.push(JSON.parse(JSON.stringify(entry).replace(/"(call_[a-z]+_\d+|msg_\d+)"/g, `"$1-${round}"`)) as GrokAcpTranscriptEntry)
    }
  }
  return [...out, last]
}

function translateAll(entries: Iterable<GrokAcpTranscriptEntry>): number {
  let n = 0
  const translator = createGrokBuildTranslator({ runId: 'bench', threadId: 'bench', genId: () => `bench-${n++}` })
  let chunks = translator.start().length
  let finished = false
  for (const entry of entries) {
    for (const chunk of translator.push(entry)) {
      chunks++
      if (chunk.type === 'RUN_FINISHED') finished = true
    }
  }
  if (!finished) throw new Error('the translator never emitted RUN_FINISHED for the benchmark transcript')
  return chunks + translator.finish({ exitCode: 0, stderrTail: '' }).length
}

/** (a) Translator throughput. */
export function benchTranslator(runs = 20, size = 10_000) {
  const entries = longTranscript(size)
  const lines = entries.map((e) => JSON.stringify(e))
  const expected = translateAll(entries)
  const time = (fn: () => number) => {
    fn() // warm-up
    const samples: number[] = []
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now()
      const chunks = fn()
      samples.push(performance.now() - t0)
      if (chunks !== expected) throw new Error(`the translator produced ${chunks} chunks, expected ${expected}: it is not deterministic`)
    }
    return median(samples)
  }
  return [
    { name: `translate ${entries.length} parsed ACP messages`, fn: () => translateAll(entries) },
    { name: `JSON.parse + translate ${lines.length} raw lines`, fn: () => translateAll(lines.map((line) => JSON.parse(line) as GrokAcpTranscriptEntry)) },
  ].map(({ name, fn }) => {
    const medianMs = time(fn)
    return { name, runs, messages: entries.length, chunks: expected, medianMs: round(medianMs, 3), messagesPerSecond: Math.round(entries.length / (medianMs / 1000)), chunksPerSecond: Math.round(expected / (medianMs / 1000)) }
  })
}

/** (b) One offline turn against the fake agent, `runs` times after a warm-up. */
export async function benchTurn(runs = 5) {
  const fake = await ensureFakeAgent()
  const root = mkdtempSync(join(tmpdir(), 'grok-bench-'))
  const home = makeGrokHome(fake, 'grok-bench-home')
  const sandbox = defineSandbox({ id: 'grok-bench', provider: localProcessSandbox({ root }), fileEvents: false })
  const samples = { 'CLI start': [] as number[], 'first token': [] as number[], total: [] as number[] }
  try {
    for (let i = 0; i <= runs; i++) {
      const t0 = performance.now()
      let cliStart = NaN
      let firstToken = NaN
      let finished = false
      const stream = chat({ adapter: grokBuildText('grok-4.5', { env: home.env() }), threadId: 'bench', messages: [{ role: 'user', content: 'Say hello' }], middleware: [withSandbox(sandbox)] } as never) as AsyncIterable<StreamChunk>
      for await (const chunk of stream) {
        if (chunk.type === 'CUSTOM' && chunk.name === GROK_BUILD_INIT_EVENT && Number.isNaN(cliStart)) cliStart = performance.now() - t0
        if (chunk.type === 'TEXT_MESSAGE_CONTENT' && Number.isNaN(firstToken)) firstToken = performance.now() - t0
        if (chunk.type === 'RUN_FINISHED') finished = true
      }
      const total = performance.now() - t0
      if (!finished) throw new Error(`turn ${i} did not finish`)
      if (i === 0) continue // warm-up: creates the sandbox
      samples['CLI start'].push(cliStart)
      samples['first token'].push(firstToken)
      samples.total.push(total)
    }
  } finally {
    await sandbox.destroy({ key: sandbox.key({ threadId: 'bench', runId: '' }) })
    home.cleanup()
    rmSync(root, { recursive: true, force: true })
  }
  return (Object.keys(samples) as (keyof typeof samples)[]).map((milestone) => ({
    milestone,
    agent: `fake ACP agent ${FAKE_GROK_VERSION} (not the real grok CLI)`,
    sandbox: 'local-process, warm',
    runs,
    medianMs: round(median(samples[milestone])),
    minMs: round(Math.min(...samples[milestone])),
    maxMs: round(Math.max(...samples[milestone])),
  }))
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log('Grok Build adapter benchmarks (offline; the turn runs the FAKE ACP agent, not the real Grok CLI)')
  const translator = benchTranslator()
  console.log('\n(a) translator throughput on a recorded ACP transcript')
  console.table(translator)
  const turn = await benchTurn()
  console.log('\n(b) one offline turn against the fake ACP agent: ms from chat() to each milestone')
  console.table(turn)
  mkdirSync(resultsDir, { recursive: true })
  const file = join(resultsDir, 'results.json')
  writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), node: process.version, note: 'The turn is timed against the fake ACP agent built with @agentclientprotocol/sdk; the real Grok CLI is not installable here.', translator, turn }, null, 2)}\n`)
  console.log(`\nwrote ${file}`)
}
