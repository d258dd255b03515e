/**
 * Prompt building: the latest user message is the prompt; with a session
 * nothing else is sent; without one, earlier turns go in a bounded preamble.
 */
import { describe, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { buildHarnessPrompt, MAX_PREAMBLE_CHARS } from '../../src/index.js'

const user = (content: ModelMessage['content']): ModelMessage => ({ role: 'user', content }) as ModelMessage
const assistant = (content: string): ModelMessage => ({ role: 'assistant', content })

describe('buildHarnessPrompt', () => {
  it('is the latest user message, byte for byte', () => {
    const text = '  keep "all" of $(this) `as is`;\n\tünïcødé 🚀  \n'
    expect(buildHarnessPrompt([user(text)], false)).toBe(text)
    expect(buildHarnessPrompt([user(text)], true)).toBe(text)
  })

  it('sends no history when resuming a session', () => {
    const messages = [user('first'), assistant('one'), user('second'), assistant('two'), user('third')]
    expect(buildHarnessPrompt(messages, true)).toBe('third')
  })

  it('puts earlier turns in a preamble without a session', () => {
    const messages = [{ role: 'system', content: 'sys' } as unknown as ModelMessage, user('first'), assistant('one'), { role: 'tool', content: 'tool output', toolCallId: 'x' } as ModelMessage, assistant('  '), user('second')]
    expect(buildHarnessPrompt(messages, false)).toBe('Earlier in this conversation:\n\nUser: first\n\nAssistant: one\n\nCurrent request:\n\nsecond')
  })

  it('ignores messages after the latest user message', () => {
    expect(buildHarnessPrompt([user('ask'), assistant('partial answer')], false)).toBe('ask')
  })

  it('joins the text parts of a multi-part message and drops the rest', () => {
    const parts = [
      { type: 'text', content: 'look at ' },
      { type: 'image', source: { type: 'url', value: 'https://example.invalid/x.png' } },
      { type: 'text', content: 'this' },
    ]
    expect(buildHarnessPrompt([user(parts as never)], true)).toBe('look at this')
  })

  it('is empty when there is no user message', () => {
    expect(buildHarnessPrompt([], false)).toBe('')
    expect(buildHarnessPrompt([assistant('hello')], false)).toBe('')
  })

  it('keeps the newest part of a long history and says that older turns were dropped', () => {
    const messages = [...Array.from({ length: 60 }, (_, i) => [user(`question ${i} ${'q'.repeat(500)}`), assistant(`answer ${i} ${'a'.repeat(500)}`)]).flat(), user('now')]
    const prompt = buildHarnessPrompt(messages, false)
    expect(prompt.startsWith('Earlier in this conversation:\n\n[earlier turns omitted]\n…')).toBe(true)
    expect(prompt.endsWith('\n\nCurrent request:\n\nnow')).toBe(true)
    expect(prompt).toContain('answer 59')
    expect(prompt).not.toContain('question 0 ')
    expect(prompt.length).toBeLessThan(MAX_PREAMBLE_CHARS + 200)
  })
})
