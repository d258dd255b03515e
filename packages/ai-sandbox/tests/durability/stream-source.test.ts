// Where a store's run log attaches: the resume offset and run id of a Request
// (read as core's memoryStream reads them), and the run-id rule.
import { memoryStream } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { resolveResumeOffset, resolveStreamSource } from '../../src/index.js'

class TestStreamError extends Error {
  constructor(
    readonly runId: string,
    message: string,
  ) {
    super(message)
  }
}

const refuse = (runId: string, message: string): Error => new TestStreamError(runId, message)

describe('resolveResumeOffset', () => {
  it("is the Last-Event-ID header, then ?offset, else null, as memoryStream's resumeFrom", () => {
    const requests = [
      new Request('http://x.test/run?runId=q&offset=4', { headers: { 'Last-Event-ID': '7' } }),
      new Request('http://x.test/run?runId=q&offset=4'),
      new Request('http://x.test/run?runId=q&offset=-1', { headers: { 'Last-Event-ID': '' } }),
      new Request('http://x.test/run', { method: 'POST' }),
    ]
    expect(requests.map(resolveResumeOffset)).toEqual(['7', '4', '-1', null])
    expect(resolveResumeOffset(requests[3]!)).toBe(memoryStream(requests[3]!).resumeFrom())
    expect(resolveResumeOffset(requests[2]!)).toBe(memoryStream(requests[2]!).resumeFrom())
  })
})

describe('resolveStreamSource', () => {
  it('takes the run from X-Run-Id, then ?runId, else a fresh UUID; an init as given', () => {
    const header = new Request('http://x.test/run?runId=q&offset=4', { headers: { 'Last-Event-ID': '7', 'X-Run-Id': 'h' } })
    expect(resolveStreamSource(header, refuse)).toEqual({ runId: 'h', resumeOffset: '7' })
    expect(resolveStreamSource(new Request('http://x.test/run?runId=q'), refuse)).toEqual({ runId: 'q', resumeOffset: null })
    const fresh = resolveStreamSource(new Request('http://x.test/run', { method: 'POST' }), refuse)
    expect(fresh.runId).toMatch(/^[0-9a-f-]{36}$/)
    expect(resolveStreamSource(new Request('http://x.test/run', { method: 'POST' }), refuse).runId).not.toBe(fresh.runId)
    expect(resolveStreamSource({ runId: 'r', offset: '-1' }, refuse)).toEqual({ runId: 'r', resumeOffset: '-1' })
    expect(resolveStreamSource({ runId: 'r' }, refuse)).toEqual({ runId: 'r', resumeOffset: null })
  })

  it('throws the error the caller builds for a run id that breaks the run-id rule, naming the field', () => {
    for (const runId of ['', 'a\nb', 'a\rb', 'a\u0000', '\ud800', 'x'.repeat(513)]) {
      const attempt = (): unknown => resolveStreamSource({ runId }, refuse)
      expect(attempt).toThrow(TestStreamError)
      expect(attempt).toThrow(/^runId .*Use a UUID/)
    }
    expect(() => resolveStreamSource(new Request('http://x.test/run?runId=a%0Ab'), refuse)).toThrow(TestStreamError)
  })
})
