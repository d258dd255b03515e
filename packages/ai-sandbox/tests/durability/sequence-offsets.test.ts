// The integer offsets '0', '1', … of a gap-free run log: parsing one, and
// planning an upsert batch against the tail (dense, minted, unrepeated, a new
// entry right after the tail, refused whole).
import { EventType, type StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { parseSequenceOffset, planSequenceUpsert } from '../../src/index.js'

function text(delta: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta, timestamp: 1 } as StreamChunk
}

class Refused extends Error {}
const refuse = (message: string): Error => new Refused(message)

describe('parseSequenceOffset', () => {
  it("reads '0', '1', … up to the largest safe integer, and nothing else", () => {
    expect(['0', '1', '42', String(Number.MAX_SAFE_INTEGER)].map(parseSequenceOffset)).toEqual([0, 1, 42, Number.MAX_SAFE_INTEGER])
    for (const bad of ['01', '-1', '-2', 'now', 'abc', '1.5', ' 1', '1 ', '1e3', '0x1', '', 'memory:v1:r:1', String(Number.MAX_SAFE_INTEGER + 2), '99999999999999999']) {
      expect(parseSequenceOffset(bad), bad).toBeUndefined()
    }
  })
})

describe('planSequenceUpsert', () => {
  it('replaces at stored offsets and appends new ones right after the tail, in the order given', () => {
    const plan = planSequenceUpsert([{ offset: '1', chunk: text('B') }, { offset: '2', chunk: text('c') }, { offset: '0', chunk: text('A') }, { offset: '3', chunk: text('d') }], 1, refuse)
    expect(plan.map(({ seq, stored }) => [seq, stored])).toEqual([
      [1, true],
      [2, false],
      [0, true],
      [3, false],
    ])
    expect(plan[0]!.chunk).toEqual(text('B'))
    expect(planSequenceUpsert([{ offset: '0', chunk: text('a') }], -1, refuse)).toEqual([{ seq: 0, chunk: text('a'), stored: false }])
    expect(planSequenceUpsert([], 5, refuse)).toEqual([])
  })

  it('refuses the whole batch, naming the entry and the rule', () => {
    const cases: Array<[Array<{ offset: string; chunk: StreamChunk }>, RegExp]> = [
      // eslint-disable-next-line no-sparse-arrays
      [[{ offset: '0', chunk: text('z') }, , { offset: '2', chunk: text('e') }] as Array<{ offset: string; chunk: StreamChunk }>, /entries\[1\] is missing; entries must be dense/],
      [[{ offset: '0', chunk: text('z') }, { offset: 'x', chunk: text('z') }], /entries\[1\]\.offset "x" is not an offset this log mints/],
      [[{ offset: '0', chunk: text('z') }, { offset: '0', chunk: text('z') }], /entries\[1\]\.offset "0" is repeated within the batch/],
      [[{ offset: '0', chunk: text('z') }, { offset: '2', chunk: text('e') }, { offset: '4', chunk: text('gap') }], /entries\[2\]\.offset "4" is not stored yet and is not the next offset 3/],
      [[{ offset: '3', chunk: text('e') }], /entries\[0\]\.offset "3" is not stored yet and is not the next offset 2/],
    ]
    for (const [entries, message] of cases) {
      expect(() => planSequenceUpsert(entries, 1, refuse)).toThrow(Refused)
      expect(() => planSequenceUpsert(entries, 1, refuse)).toThrow(message)
    }
  })
})
