/**
 * `scrubLoggerSink`: what `chat()`'s per-call logger writes in any category
 * (core logs chunks under `middleware` and `output`, host tool results under
 * `tools`) reaches the user's logger scrubbed, encoded forms included, once
 * per redactor, and only for that logger instance. The chat() round trips are
 * in testing/harness-lifecycle/tests/secret-leaks.e2e.test.ts and
 * testing/sandbox-e2e/tests/secret-leaks.test.ts.
 */
import { InternalLogger } from '@tanstack/ai/adapter-internals'
import { describe, expect, it } from 'vitest'
import { scrubLoggerSink } from '../../src/middleware/redacting-logger.js'
import { createSecretScrubber } from '../../src/secrets/secret-scrubber.js'

const SECRET = 'sk-live-0123456789abcdef'
const scrubber = createSecretScrubber([['KEY', SECRET]])
const ALL = { request: true, provider: true, output: true, middleware: true, tools: true, agentLoop: true, config: true, errors: true, sandbox: true }

function sink() {
  const lines: string[] = []
  const push = (message: string, meta?: unknown) => void lines.push(`${message} ${JSON.stringify(meta ?? null)}`)
  return { logger: { debug: push, info: push, warn: push, error: push }, lines }
}

describe('scrubLoggerSink', () => {
  it('scrubs every category of the wrapped InternalLogger, encoded forms included', () => {
    const user = sink()
    const logger = new InternalLogger(user.logger, ALL)
    expect(scrubLoggerSink(logger, scrubber.fragments)).toBe(true)
    const b64 = Buffer.from(SECRET).toString('base64')
    logger.middleware('hook=onChunk in=TOOL_CALL_RESULT', { in: { type: 'TOOL_CALL_RESULT', content: `token ${b64}` } })
    logger.output('type=TEXT_MESSAGE_CONTENT', { chunk: { delta: encodeURIComponent(SECRET) } })
    logger.tools('phase=after name=lookup', { result: { hex: Buffer.from(SECRET).toString('hex') } })
    logger.errors('failed', { error: new Error(`bad ${SECRET}`) })
    logger.warn(`warned ${SECRET}`)
    expect(user.lines).toHaveLength(5)
    const text = user.lines.join('\n')
    expect(text).not.toContain(SECRET)
    expect(text).not.toContain(b64)
    expect(text.match(/\[secret KEY\]/g), 'one per line, two for the error (message and stack)').toHaveLength(6)
  })

  it('wraps once per redactor, leaves other logger instances and the user logger object alone', () => {
    const user = sink()
    const a = new InternalLogger(user.logger, ALL)
    const b = new InternalLogger(user.logger, ALL)
    scrubLoggerSink(a, scrubber.fragments)
    scrubLoggerSink(a, scrubber.fragments)
    a.provider(`a ${SECRET}`)
    b.provider(`b ${SECRET}`)
    expect(user.lines[0]).toContain('a [secret KEY]')
    expect(user.lines[1], 'another chat() call, another logger').toContain(`b ${SECRET}`)
  })

  it('returns false without a logger', () => {
    expect(scrubLoggerSink(undefined, scrubber.fragments)).toBe(false)
  })
})
