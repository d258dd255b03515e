/**
 * Type tests (run by `pnpm test:types`) pinning the public option types of
 * `claudeCodeText`: the factory's signature, the options beyond the shared
 * `HarnessCommonOptions` and the per-run model options. A change here is a
 * change to the published API and needs a changeset.
 */
import type { HarnessCommonOptions } from '@tanstack/ai-sandbox'
import { describe, expectTypeOf, it } from 'vitest'
import { claudeCodeText, type ClaudeCodeTextAdapter, type ClaudeCodeModelOptions, type ClaudeCodeOptions, type ClaudePermissionMode } from '../src/index.js'

describe('claudeCodeText', () => {
  it('takes a model id and optional ClaudeCodeOptions, and returns ClaudeCodeTextAdapter', () => {
    expectTypeOf(claudeCodeText).parameters.toEqualTypeOf<[model: string, options?: ClaudeCodeOptions]>()
    expectTypeOf(claudeCodeText).returns.toEqualTypeOf<ClaudeCodeTextAdapter>()
  })

  it('accepts the shared harness options and exactly these of its own', () => {
    expectTypeOf<ClaudeCodeOptions>().toExtend<HarnessCommonOptions>()
    expectTypeOf<Omit<ClaudeCodeOptions, keyof HarnessCommonOptions>>().toEqualTypeOf<{
      executable?: string
      maxTurns?: number
      allowedTools?: string[]
      disallowedTools?: string[]
      systemPrompt?: string
      permissionMode?: ClaudePermissionMode
    }>()
  })

  it('resumes a CLI session through modelOptions.sessionId', () => {
    expectTypeOf<ClaudeCodeModelOptions['sessionId']>().toEqualTypeOf<string | undefined>()
  })

  it('refuses an option it does not have', () => {
    // @ts-expect-error: not an option of claudeCodeText
    claudeCodeText('model', { sandboxMode: true })
  })

  it('is a chat() text adapter', () => {
    expectTypeOf<ClaudeCodeTextAdapter>().toHaveProperty('chatStream')
  })
})
