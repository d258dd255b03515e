/**
 * The system text a harness CLI gets from `chat({ systemPrompts })`: strings
 * and `{ content }` objects in order, blank ones dropped.
 */
import { describe, expect, it } from 'vitest'
import type { TextOptions } from '@tanstack/ai'
import { harnessSystemPrompt } from '../../src/index.js'

describe('harnessSystemPrompt', () => {
  it('joins strings and { content } prompts in order with a blank line, dropping blank ones', () => {
    const prompts = ['Be brief.', { content: 'Use pnpm.', metadata: { cache: true } }, '  \n', { content: '' }, {}, 'Explain diffs.'] as TextOptions['systemPrompts']
    expect(harnessSystemPrompt(prompts)).toBe('Be brief.\n\nUse pnpm.\n\nExplain diffs.')
  })

  it('is empty without prompts, and keeps a prompt byte for byte', () => {
    expect(harnessSystemPrompt(undefined)).toBe('')
    expect(harnessSystemPrompt([])).toBe('')
    expect(harnessSystemPrompt(['  keep  $(this)\n'])).toBe('  keep  $(this)\n')
  })
})
