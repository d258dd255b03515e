/**
 * Recorded ACP transcripts (tests/fixtures/grok-build/<version>/<scenario>.ndjson,
 * written by testing/grok-build-e2e/src/record.ts: one `{ from, message }`
 * per line, both directions in wire order) and the pipeline that replays
 * them the way the adapter reads a live CLI: the agent's stdout bytes →
 * `jsonLinesReadable` (noise set aside) → the SDK's `ndJsonStream` →
 * messages, interleaved with the client's own messages → translator.
 */
import { ndJsonStream } from '@agentclientprotocol/sdk'
import type { StreamChunk } from '@tanstack/ai'
import { linesOf, recordingFolder, translateWith, type ReplayOptions } from '@testing/support/harness-recordings'
import { createGrokBuildTranslator, jsonLinesReadable, type GrokAcpTranscriptEntry } from '../../src/index.js'

const folder = recordingFolder(new URL('../fixtures/grok-build/', import.meta.url))

/** Every recorded version folder, oldest name first. */
export const cliVersions = folder.versions

/** The parsed entries of one recording. */
export function recording(version: string, scenario: string): GrokAcpTranscriptEntry[] {
  return linesOf(folder.read(version, scenario)) as GrokAcpTranscriptEntry[]
}

/** What the agent wrote to stdout in a recording, as bytes (one JSON-RPC message per line). */
export function agentStdout(entries: readonly GrokAcpTranscriptEntry[]): Buffer {
  return Buffer.from(entries.filter((e) => e.from === 'agent').map((e) => `${JSON.stringify(e.message)}\n`).join(''))
}

/** The session id a recording's session/new answer or session/load request names. */
export function sessionOf(entries: readonly GrokAcpTranscriptEntry[]): string {
  for (const { message } of entries) {
    const result = message.result as { sessionId?: string } | undefined
    if (result?.sessionId) return result.sessionId
    const params = message.params as { sessionId?: string } | undefined
    if (message.method === 'session/load' && params?.sessionId) return params.sessionId
  }
  throw new Error('no session id in the recording')
}

/** Translate entries (model `grok-4.5`); `finish` runs with a clean exit unless given. */
export function translate(entries: readonly GrokAcpTranscriptEntry[], options: ReplayOptions = {}): StreamChunk[] {
  return translateWith((run) => createGrokBuildTranslator({ ...run, model: 'grok-4.5' }), entries, options)
}

/**
 * Replay a recording with the agent's stdout delivered as `pieces` (any
 * split of its bytes, noise allowed): the messages come out of the same
 * transport the adapter uses, and take the places of the recorded agent
 * messages between the client's own.
 */
export async function replay(entries: readonly GrokAcpTranscriptEntry[], pieces: Iterable<Uint8Array | string>, options: ReplayOptions = {}): Promise<{ chunks: StreamChunk[]; nonJson: string[] }> {
  const nonJson: string[] = []
  async function* source() {
    yield* pieces
  }
  const sink = new WritableStream<Uint8Array>()
  const wire = ndJsonStream(sink, jsonLinesReadable(source(), (line) => nonJson.push(line)))
  const received: GrokAcpTranscriptEntry['message'][] = []
  for await (const message of wire.readable as unknown as AsyncIterable<GrokAcpTranscriptEntry['message']>) received.push(message)
  let next = 0
  const merged = entries.map((entry) => (entry.from === 'agent' ? { from: 'agent' as const, message: received[next++]! } : entry))
  if (next !== received.length) throw new Error(`the transport produced ${received.length} agent messages, the recording has ${next}`)
  return { chunks: translate(merged, options), nonJson }
}
