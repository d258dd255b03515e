/**
 * Type tests (run by `pnpm test:types`) pinning the public option types of
 * `codexText`: the factory's signature, the options beyond the shared
 * `HarnessCommonOptions` and the per-run model options. A change here is a
 * change to the published API and needs a changeset.
 */
import type { HarnessCommonOptions } from '@tanstack/ai-sandbox'
import { describe, expectTypeOf, it } from 'vitest'
import { codexText, type CodexTextAdapter, type CodexModelOptions, type CodexOptions, type CodexSandboxMode, type TomlValue } from '../src/index.js'

describe('codexText', () => {
  it('takes a model id and optional CodexOptions, and returns CodexTextAdapter', () => {
    expectTypeOf(codexText).parameters.toEqualTypeOf<[model: string, options?: CodexOptions]>()
    expectTypeOf(codexText).returns.toEqualTypeOf<CodexTextAdapter>()
  })

  it('accepts the shared harness options and exactly these of its own', () => {
    expectTypeOf<CodexOptions>().toExtend<HarnessCommonOptions>()
    expectTypeOf<Omit<CodexOptions, keyof HarnessCommonOptions>>().toEqualTypeOf<{
      executable?: string
      sandboxMode?: CodexSandboxMode | 'bypass'
      config?: Record<string, TomlValue>
    }>()
  })

  it('resumes a CLI session through modelOptions.sessionId', () => {
    expectTypeOf<CodexModelOptions['sessionId']>().toEqualTypeOf<string | undefined>()
  })

  it('refuses an option it does not have', () => {
    // @ts-expect-error: not an option of codexText
    codexText('model', { maxTurns: true })
  })

  it('is a chat() text adapter', () => {
    expectTypeOf<CodexTextAdapter>().toHaveProperty('chatStream')
  })
})
