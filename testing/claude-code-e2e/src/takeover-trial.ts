/**
 * One cross-process takeover trial and the parts around it, shared by the
 * takeover suites (20 kills in CI each) and the soak benchmarks (200): run
 * servers (`run-server.ts`, each its own OS process over one SQLite file or
 * one PostgreSQL schema), the client's POST / attach / cancel calls, a seeded
 * kill point, and the comparison of the transcript the client assembled with
 * a control run. It asserts nothing: it returns what it saw, and the caller
 * judges (a test with `expect`, the soak with a tally).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { EventType, type StreamChunk } from '@tanstack/ai'
import { chunkFingerprint } from '@tanstack/ai-sandbox'
import { bundleScript, type ScriptBundle } from '@testing/support/script-bundle'
import { readSseEvents, transcriptOf, type SseEvent } from '@testing/support/sse-client'
import type { RunServerConfig } from './run-server.js'

const SERVER_SCRIPT = fileURLToPath(new URL('./run-server.ts', import.meta.url))
const SERVER_TSCONFIG = fileURLToPath(new URL('./journal-host.tsconfig.json', import.meta.url))

/**
 * The server bundled from the sources (`@testing/support/script-bundle`),
 * built when the first server of this process starts and removed when the
 * last one exits: a server then starts in about 0.8 s instead of 1.8 s under
 * tsx, which adds up over the ~20 servers of each takeover suite.
 */
let bundle: Promise<ScriptBundle> | undefined
let serversAlive = 0

/** Counts a server in and returns the bundle to run. */
async function acquireBundle(): Promise<string> {
  serversAlive++
  try {
    bundle ??= bundleScript(SERVER_SCRIPT, SERVER_TSCONFIG)
    return (await bundle).file
  } catch (error) {
    releaseBundle()
    throw error
  }
}

/** Counts a server out; the last one out removes the bundle. */
function releaseBundle(): void {
  if (--serversAlive > 0 || !bundle) return
  const built = bundle
  bundle = undefined
  void built.then((b) => b.dispose(), () => undefined)
}

/** A running server process. */
export interface RunServer {
  readonly url: string
  readonly child: ChildProcess
  /** Everything it printed (stdout and stderr). */
  output(): string
  /** Run ids it drove through its run driver (`drive <runId>` lines). */
  drives(): string[]
  /** Resolves once the process exited. */
  readonly exited: Promise<void>
}

/**
 * Start a run server and wait until it listens.
 * @throws Error with its output when it exits or stays silent for 90 s (a loaded machine can take long to load the packages).
 */
export async function startRunServer(config: RunServerConfig): Promise<RunServer> {
  const script = await acquireBundle()
  const child = spawn(process.execPath, ['--enable-source-maps', script, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  void exited.then(releaseBundle)
  const deadline = Date.now() + 90_000
  for (;;) {
    const port = /^listening (\d+)$/m.exec(output)?.[1]
    if (port) {
      return {
        url: `http://127.0.0.1:${port}`,
        child,
        output: () => output,
        drives: () => [...output.matchAll(/^drive (.+)$/gm)].map((m) => m[1]!),
        exited,
      }
    }
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`the run server did not start:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Stop a server: SIGTERM (it closes its database), SIGKILL after 5 s. */
export async function stopRunServer(server: RunServer): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill('SIGTERM')
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 5000)
  await server.exited
  clearTimeout(timer)
}

/** POST a run and read its events until `stop` says so or the stream ends (or breaks). */
export async function postRun(server: RunServer, runId: string, threadId: string, stop?: (event: SseEvent, events: readonly SseEvent[]) => boolean): Promise<SseEvent[]> {
  const response = await fetch(`${server.url}/api/run?runId=${encodeURIComponent(runId)}`, { method: 'POST', body: JSON.stringify({ threadId }), headers: { 'content-type': 'application/json' } })
  if (!response.ok || !response.body) throw new Error(`POST /api/run answered ${response.status}: ${await response.text()}`)
  return readSseEvents(response.body, stop)
}

/** Reconnect to a run from `lastId` (the client's `Last-Event-ID`) and read to the end. */
export async function attachRun(server: RunServer, runId: string, lastId: string, stop?: (event: SseEvent, events: readonly SseEvent[]) => boolean): Promise<SseEvent[]> {
  const response = await fetch(`${server.url}/api/run?runId=${encodeURIComponent(runId)}`, { headers: { 'Last-Event-ID': lastId } })
  if (!response.ok || !response.body) throw new Error(`GET /api/run answered ${response.status}: ${await response.text()}`)
  return readSseEvents(response.body, stop)
}

/** POST a cancel for the thread's active run (both bands, on whichever server gets it). */
export async function cancelThread(server: RunServer, threadId: string): Promise<string | null> {
  const response = await fetch(`${server.url}/api/run/cancel`, { method: 'POST', body: JSON.stringify({ threadId }), headers: { 'content-type': 'application/json' } })
  if (!response.ok) throw new Error(`POST /api/run/cancel answered ${response.status}: ${await response.text()}`)
  return ((await response.json()) as { cancelled: string | null }).cancelled
}

/** A small seeded PRNG (mulberry32): the same seed draws the same kill points, so a failure can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/**
 * Chunk fingerprints (`chunkFingerprint`, timestamps excluded) with the run's
 * own ids replaced, so two runs of the same turn under other ids compare
 * equal: the run id (every run-scoped id starts with it), the thread id, and
 * any other UUID (the CLI's session id) numbered in order of appearance.
 */
export function normalizedFingerprints(chunks: readonly StreamChunk[], ids: { runId: string; threadId: string }): string[] {
  const seen = new Map<string, string>()
  return chunks.map((chunk) =>
    chunkFingerprint(chunk)
      .replaceAll(ids.runId, '<run>')
      .replaceAll(ids.threadId, '<thread>')
      .replace(UUID, (uuid) => {
        if (!seen.has(uuid)) seen.set(uuid, `<uuid-${seen.size}>`)
        return seen.get(uuid)!
      }),
  )
}

/** How a transcript compares with the control: chunks missing, chunks doubled, and whether it is exactly the control. */
export interface TranscriptTally {
  equal: boolean
  /** Control chunks (by normalized fingerprint, counted) the transcript lacks. */
  lost: number
  /** Transcript chunks beyond what the control has of them. */
  duplicated: number
  /** Terminal chunks (`RUN_FINISHED` of the final turn, `RUN_ERROR`) beyond the control's one. */
  falseTerminal: number
}

/** Compare the transcript's normalized fingerprints with the control's, as multisets and in order. */
export function tallyTranscript(transcript: readonly string[], control: readonly string[]): TranscriptTally {
  const counts = new Map<string, number>()
  for (const f of control) counts.set(f, (counts.get(f) ?? 0) + 1)
  let duplicated = 0
  for (const f of transcript) {
    const left = counts.get(f) ?? 0
    if (left > 0) counts.set(f, left - 1)
    else duplicated++
  }
  const lost = [...counts.values()].reduce((a, b) => a + b, 0)
  const terminals = (list: readonly string[]) => list.filter((f) => f.includes(`"type":"${EventType.RUN_ERROR}"`) || (f.includes(`"type":"${EventType.RUN_FINISHED}"`) && !f.includes('"finishReason":"tool_calls"'))).length
  return { equal: transcript.length === control.length && transcript.every((f, i) => f === control[i]), lost, duplicated, falseTerminal: Math.max(0, terminals(transcript) - terminals(control)) }
}

/** What one kill-and-takeover trial saw. */
export interface TakeoverTrial {
  seed: number
  /** The client-side event count at which the first server was killed. */
  killAt: number
  /** Events the client read from the killed server, and from the successor. */
  before: SseEvent[]
  after: SseEvent[]
  /** `performance.now()` at which the client received each event of `after`. */
  afterTimes: number[]
  transcript: StreamChunk[]
  tally: TranscriptTally
  /** The transcripts of the clients that attached through the bystanders, compared with the control (in their order). */
  bystanderTallies: TranscriptTally[]
  /** Whether the killed server died of the SIGKILL (not of its own accord). */
  killed: boolean
}

/**
 * One trial: `first` starts the run and is SIGKILLed once the client has read
 * `killAt` events (drawn from `seed` in `[minKill, maxKill]`, or `killAt`
 * itself when given); the client reconnects to `successor` from its last
 * event id, and each of `bystanders` attaches from the same id at the same
 * moment (other clients of the run, so every one of those servers competes
 * for the claim); each transcript is compared with `control` (normalized
 * fingerprints).
 */
export async function killAndTakeOver(input: {
  first: RunServer
  successor: RunServer
  bystanders?: readonly RunServer[]
  runId: string
  threadId: string
  seed: number
  minKill: number
  maxKill: number
  control: readonly string[]
  onReconnect?: () => void
  /** Called (and awaited) once the first server is dead, before the reconnect (e.g. to start its replacement, or to read the log). */
  onKilled?: () => void | Promise<void>
}): Promise<TakeoverTrial> {
  const random = seededRandom(input.seed)
  const killAt = input.minKill + Math.floor(random() * (input.maxKill - input.minKill + 1))
  // The marker does not count: K is the number of the run's own events the client saw.
  const before = await postRun(input.first, input.runId, input.threadId, (_event, events) => {
    const seen = transcriptOf(events).length
    if (seen >= killAt) input.first.child.kill('SIGKILL')
    return seen >= killAt
  })
  await input.first.exited
  await input.onKilled?.()
  const lastId = before.at(-1)?.id
  if (!lastId) throw new Error(`the first server delivered no event id before it died:\n${input.first.output()}`)
  input.onReconnect?.()
  const afterTimes: number[] = []
  const timed = (): boolean => (afterTimes.push(performance.now()), false)
  const [after, ...others] = await Promise.all([input.successor, ...(input.bystanders ?? [])].map((server, i) => attachRun(server, input.runId, lastId, i === 0 ? timed : undefined)))
  const transcript = transcriptOf(before, after!)
  const tally = tallyTranscript(normalizedFingerprints(transcript, input), input.control)
  const bystanderTallies = others.map((events) => tallyTranscript(normalizedFingerprints(transcriptOf(before, events), input), input.control))
  return { seed: input.seed, killAt, before, after: after!, afterTimes, transcript, tally, bystanderTallies, killed: input.first.child.signalCode === 'SIGKILL' }
}
