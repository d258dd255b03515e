/**
 * The text of `chat({ systemPrompts })` for a harness CLI, which takes one
 * system text (a flag, a config value or a file), not a list with metadata.
 * Pure: no IO. Invariant: prompts are kept in order and blank ones dropped.
 */
import type { TextOptions } from '@tanstack/ai'

/**
 * Join the chat's system prompts into one text.
 *
 * @param systemPrompts - `options.systemPrompts` as `chatStream` receives them: strings or `{ content, metadata }` objects (metadata is dropped). Default: none.
 * @returns The non-blank prompts joined by a blank line; `''` when there is none.
 * @example
 * ```ts
 * harnessSystemPrompt(['Be brief.', { content: 'Use pnpm.' }, '  ']) // 'Be brief.\n\nUse pnpm.'
 * ```
 */
export function harnessSystemPrompt(systemPrompts: TextOptions['systemPrompts']): string {
  return (systemPrompts ?? [])
    .map((p) => (typeof p === 'string' ? p : ((p as { content?: string }).content ?? '')))
    .filter((text) => text.trim() !== '')
    .join('\n\n')
}
