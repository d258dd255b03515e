/**
 * Type tests (run by `pnpm test:types`) pinning the public option types of
 * `grokBuildText`: the factory's signature, the options beyond the shared
 * `HarnessCommonOptions` and the per-run model options. A change here is a
 * change to the published API and needs a changeset.
 */
import type { HarnessCommonOptions } from '@tanstack/ai-sandbox'
import { describe, expectTypeOf, it } from 'vitest'
import { grokBuildText, type GrokBuildTextAdapter, type GrokBuildModelOptions, type GrokBuildOptions, type GrokAcpTranscriptEntry } from '../src/index.js'

describe('grokBuildText', () => {
  it('takes a model id and optional GrokBuildOptions, and returns GrokBuildTextAdapter', () => {
    expectTypeOf(grokBuildText).parameters.toEqualTypeOf<[model: string, options?: GrokBuildOptions]>()
    expectTypeOf(grokBuildText).returns.toEqualTypeOf<GrokBuildTextAdapter>()
  })

  it('accepts the shared harness options and exactly these of its own', () => {
    expectTypeOf<GrokBuildOptions>().toExtend<HarnessCommonOptions>()
    expectTypeOf<Omit<GrokBuildOptions, keyof HarnessCommonOptions>>().toEqualTypeOf<{
      executable?: string
      autoApprove?: boolean
      approveFlag?: string
      authMethod?: string
      onAcpMessage?: (entry: GrokAcpTranscriptEntry) => void
    }>()
  })

  it('resumes a CLI session through modelOptions.sessionId', () => {
    expectTypeOf<GrokBuildModelOptions['sessionId']>().toEqualTypeOf<string | undefined>()
  })

  it('refuses an option it does not have', () => {
    // @ts-expect-error: not an option of grokBuildText
    grokBuildText('model', { maxTurns: true })
  })

  it('is a chat() text adapter', () => {
    expectTypeOf<GrokBuildTextAdapter>().toHaveProperty('chatStream')
  })
})
