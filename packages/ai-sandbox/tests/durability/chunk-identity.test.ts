/**
 * Chunk identity: what makes two chunks "the same" for replay alignment.
 * Key order never matters, only the top-level `timestamp` is left out, and
 * everything else (nested tool-call arguments included) participates.
 */
import { EventType, type StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { chunkFingerprint, chunkFingerprintIgnoringThreadId, chunkThreadId, createRunScopedIdGen } from '../../src/index.js'
import { sameChunk } from '../../src/durability/chunk-identity.js'
import { createRunScopedIdGen as harnessIdGen } from '../../src/harness/run-scoped-id.js'
import { seededRandom } from '../helpers/seeded-random.js'

const started: Extract<StreamChunk, { type: EventType.RUN_STARTED }> = { type: EventType.RUN_STARTED, runId: 'run-1', threadId: 'thread-1', timestamp: 1 }
const toolStart = {
  type: EventType.TOOL_CALL_START,
  toolCallId: 'run-1-3',
  toolCallName: 'Bash',
  timestamp: 5,
  metadata: { providerExecuted: true, input: { command: 'ls', options: { cwd: '/w', env: { A: '1', B: '2' } } } },
} as unknown as StreamChunk

describe('chunkFingerprint', () => {
  it('is the same whatever the key order, at every depth', () => {
    const reordered = {
      metadata: { input: { options: { env: { B: '2', A: '1' }, cwd: '/w' }, command: 'ls' }, providerExecuted: true },
      toolCallName: 'Bash',
      timestamp: 5,
      toolCallId: 'run-1-3',
      type: EventType.TOOL_CALL_START,
    } as unknown as StreamChunk
    expect(chunkFingerprint(reordered)).toBe(chunkFingerprint(toolStart))
  })

  it('is canonical JSON without the top-level timestamp', () => {
    expect(chunkFingerprint(started)).toBe('{"runId":"run-1","threadId":"thread-1","type":"RUN_STARTED"}')
    expect(JSON.parse(chunkFingerprint(toolStart))).toEqual({ ...toolStart, timestamp: undefined })
  })

  it('ignores only the top-level timestamp: a nested timestamp still counts', () => {
    expect(chunkFingerprint({ ...started, timestamp: 99 })).toBe(chunkFingerprint(started))
    const { timestamp: _, ...withoutTimestamp } = started as StreamChunk & { timestamp?: number }
    expect(chunkFingerprint(withoutTimestamp as StreamChunk)).toBe(chunkFingerprint(started))
    const custom = (at: number) => ({ type: EventType.CUSTOM, name: 'tick', value: { timestamp: at } }) as StreamChunk
    expect(chunkFingerprint(custom(1))).not.toBe(chunkFingerprint(custom(2)))
  })

  it('changes with any nested tool-call argument', () => {
    const other = JSON.parse(JSON.stringify(toolStart)) as { metadata: { input: { options: { env: { B: string } } } } }
    other.metadata.input.options.env.B = '3'
    expect(chunkFingerprint(other as unknown as StreamChunk)).not.toBe(chunkFingerprint(toolStart))
    const args = (delta: string) => ({ type: EventType.TOOL_CALL_ARGS, toolCallId: 'run-1-3', delta }) as StreamChunk
    expect(chunkFingerprint(args('{"a":1}'))).not.toBe(chunkFingerprint(args('{"a":2}')))
  })

  it('keeps array order, and treats an undefined property as absent, like JSON', () => {
    const list = (items: unknown[]) => ({ type: EventType.CUSTOM, name: 'list', value: items }) as StreamChunk
    expect(chunkFingerprint(list([1, 2]))).not.toBe(chunkFingerprint(list([2, 1])))
    expect(chunkFingerprint(list([undefined]))).toBe(chunkFingerprint(list([null])))
    expect(chunkFingerprint({ ...started, parentRunId: undefined } as StreamChunk)).toBe(chunkFingerprint(started))
    expect(chunkFingerprint({ ...started, extra: new Date(0) } as StreamChunk)).toContain('"extra":"1970-01-01T00:00:00.000Z"')
  })

  it('survives a JSON round trip unchanged (what a durable store does to a chunk)', () => {
    expect(chunkFingerprint(JSON.parse(JSON.stringify(toolStart)) as StreamChunk)).toBe(chunkFingerprint(toolStart))
  })

  it('tells every field apart, including the type and the ids', () => {
    const fingerprints = new Set([
      chunkFingerprint(started),
      chunkFingerprint({ ...started, runId: 'run-2' }),
      chunkFingerprint({ ...started, threadId: 'thread-2' }),
      chunkFingerprint({ ...started, type: EventType.RUN_FINISHED } as StreamChunk),
    ])
    expect(fingerprints.size).toBe(4)
  })
})

describe('chunkFingerprintIgnoringThreadId and chunkThreadId', () => {
  it('leaves out the top-level threadId as well, and nothing else', () => {
    expect(chunkFingerprintIgnoringThreadId({ ...started, threadId: 'other' })).toBe(chunkFingerprintIgnoringThreadId(started))
    expect(chunkFingerprintIgnoringThreadId({ ...started, runId: 'other' })).not.toBe(chunkFingerprintIgnoringThreadId(started))
    expect(chunkFingerprintIgnoringThreadId(started)).toBe('{"runId":"run-1","type":"RUN_STARTED"}')
  })

  it('reads the threadId, or undefined when there is none', () => {
    expect(chunkThreadId(started)).toBe('thread-1')
    expect(chunkThreadId(toolStart)).toBeUndefined()
    expect(chunkThreadId({ ...started, threadId: 7 } as unknown as StreamChunk)).toBeUndefined()
  })
})

describe('sameChunk (the comparison alignment uses)', () => {
  /** Values JSON treats specially next to ordinary ones: undefined, NaN, -0, Dates, functions, nested objects. */
  function value(next: () => number, depth: number): unknown {
    const pick = Math.floor(next() * 12)
    if (depth > 2 && pick > 8) return 'leaf'
    switch (pick) {
      case 0: return undefined
      case 1: return Number.NaN
      case 2: return next() < 0.5 ? 0 : -0
      case 3: return null
      case 4: return new Date(Math.floor(next() * 3))
      case 5: return () => 1
      case 6: return Math.floor(next() * 3)
      case 7: return ['a', 'b', 'c'][Math.floor(next() * 3)]
      case 8: return next() < 0.5
      case 9: return Array.from({ length: Math.floor(next() * 3) }, () => value(next, depth + 1))
      default: return object(next, depth + 1)
    }
  }

  function object(next: () => number, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const key of ['timestamp', 'x', 'y', 'threadId']) if (next() < 0.6) out[key] = value(next, depth)
    return out
  }

  /** A variant of `source`: the same, reordered, or with one field changed, dropped or set to undefined. */
  function variant(source: Record<string, unknown>, next: () => number): Record<string, unknown> {
    const entries = Object.entries(source).reverse()
    const copy = Object.fromEntries(entries)
    const keys = Object.keys(copy)
    const key = keys[Math.floor(next() * keys.length)] ?? 'x'
    const change = Math.floor(next() * 5)
    if (change === 1) copy[key] = value(next, 1)
    if (change === 2) delete copy[key]
    if (change === 3) copy[key] = undefined
    return copy
  }

  it('answers exactly what comparing the two fingerprints answers, on 5,000 generated pairs', () => {
    const next = seededRandom(11)
    let equal = 0
    for (let i = 0; i < 5_000; i++) {
      const a = { type: EventType.CUSTOM, name: 'n', ...object(next, 0) } as unknown as StreamChunk
      const b = variant(a as unknown as Record<string, unknown>, next) as unknown as StreamChunk
      const expected = chunkFingerprint(a) === chunkFingerprint(b)
      if (expected) equal++
      expect(sameChunk(a, b), `${chunkFingerprint(a)} vs ${chunkFingerprint(b)}`).toBe(expected)
      expect(sameChunk(b, a)).toBe(expected)
    }
    expect(equal).toBeGreaterThan(500) // both answers were exercised
    expect(equal).toBeLessThan(4_500)
  })
})

describe('createRunScopedIdGen', () => {
  it('is the harness id generator, re-exported', () => {
    expect(createRunScopedIdGen).toBe(harnessIdGen)
    const a = createRunScopedIdGen('run-9')
    const b = createRunScopedIdGen('run-9')
    expect([a(), a(), a()]).toEqual([b(), b(), b()])
  })
})
