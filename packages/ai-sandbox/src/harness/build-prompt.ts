/**
 * Prompt building shared by every harness adapter: the latest user message is
 * the prompt. When the CLI resumes a session it already holds the history, so
 * nothing else is sent; without a session, earlier turns go in a short
 * transcript preamble. Pure: no IO.
 */
import type { ModelMessage } from '@tanstack/ai'

/** Longest preamble kept, in characters; older turns are dropped first. */
export const MAX_PREAMBLE_CHARS = 24_000

/** Plain text of a message's content. */
export function messageText(message: ModelMessage): string {
  const content = message.content as unknown
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: { type?: string; content?: unknown; text?: unknown }) => (part.type === 'text' ? String(part.content ?? part.text ?? '') : ''))
    .join('')
}

/**
 * Build the prompt for one run.
 * @param messages - The conversation as `chat()` passes it.
 * @param resuming - True when the CLI resumes a session (no history re-sent).
 * @example
 * ```ts
 * buildHarnessPrompt([{ role: 'user', content: 'hi' }], false) // 'hi'
 * ```
 * @returns The prompt text; `''` (or only whitespace) when the latest user message has no text.
 */
export function buildHarnessPrompt(messages: readonly ModelMessage[], resuming: boolean): string {
  const lastUser = messages.map((m, i) => [m, i] as const).filter(([m]) => m.role === 'user').at(-1)
  if (!lastUser) return ''
  const [latest, index] = lastUser
  const prompt = messageText(latest)
  // An empty latest message is no request, whatever the history holds.
  if (resuming || prompt.trim() === '') return prompt
  const earlier = messages
    .slice(0, index)
    .filter((m) => (m.role === 'user' || m.role === 'assistant') && messageText(m).trim() !== '')
    .map((m) => `${m.role === 'user' ? 'User' : 'Assistant'}: ${messageText(m).trim()}`)
  if (earlier.length === 0) return prompt
  let preamble = earlier.join('\n\n')
  if (preamble.length > MAX_PREAMBLE_CHARS) preamble = `[earlier turns omitted]\n…${preamble.slice(-MAX_PREAMBLE_CHARS)}`
  return `Earlier in this conversation:\n\n${preamble}\n\nCurrent request:\n\n${prompt}`
}
