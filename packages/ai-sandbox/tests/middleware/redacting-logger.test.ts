/**
 * The redacting view of chat()'s logger: messages and meta (nested objects,
 * arrays, errors and their causes) reach the real logger with secret values
 * replaced, categories still gate, and `undefined` stays `undefined`. The
 * chat() round trip (a secret in a file name a hook throws for) is in
 * testing/sandbox-e2e/tests/file-events.test.ts.
 */
import { InternalLogger } from '@tanstack/ai/adapter-internals'
import { describe, expect, it } from 'vitest'
import { redactingLogger } from '../../src/middleware/redacting-logger.js'

const SECRET = 'sk-live-0123456789'
const redact = (text: string) => text.split(SECRET).join('[secret KEY]')

function capture(categories: Partial<Record<string, boolean>> = {}) {
  const lines: { level: string; message: string; meta: unknown }[] = []
  const push = (level: string) => (message: string, meta?: unknown) => void lines.push({ level, message, meta })
  const all = { request: true, provider: true, output: true, middleware: true, tools: true, agentLoop: true, config: true, errors: true, sandbox: true, ...categories }
  const logger = new InternalLogger({ debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') }, all as ConstructorParameters<typeof InternalLogger>[1])
  return { logger, lines }
}

describe('redactingLogger', () => {
  it('redacts the message and every string in meta, errors included', () => {
    const { logger, lines } = capture()
    const view = redactingLogger(logger, redact)!
    const error = new Error(`open /w/${SECRET}.txt failed`, { cause: new Error(`token ${SECRET}`) })
    view.sandbox(`dispatch file create /w/${SECRET}.txt`, { paths: [`/w/${SECRET}`], nested: { deep: SECRET, count: 2 } })
    view.errors('hook threw', { error })
    view.warn(`warned ${SECRET}`)
    const text = JSON.stringify(lines)
    expect(text).not.toContain(SECRET)
    expect(lines[0]!.message).toContain('/w/[secret KEY].txt')
    expect(lines[0]!.meta).toMatchObject({ paths: ['/w/[secret KEY]'], nested: { deep: '[secret KEY]', count: 2 } })
    expect(lines[1]!.meta).toMatchObject({ error: { name: 'Error', message: 'open /w/[secret KEY].txt failed', cause: { message: 'token [secret KEY]' } } })
    expect(lines[2]!.level).toBe('warn')
    expect(lines[2]!.message).toMatch(/warned \[secret KEY\]$/)
  })

  it('keeps category gating and isEnabled of the wrapped logger', () => {
    const { logger, lines } = capture({ sandbox: false })
    const view = redactingLogger(logger, redact)!
    view.sandbox('hidden')
    view.errors('shown')
    expect(view.isEnabled('sandbox')).toBe(false)
    expect(view.isEnabled('errors')).toBe(true)
    expect(lines.map((l) => l.message)).toEqual([expect.stringMatching(/ shown$/)])
  })

  it('passes undefined through', () => {
    expect(redactingLogger(undefined, redact)).toBeUndefined()
  })
})
