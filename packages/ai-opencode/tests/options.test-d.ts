/**
 * Type tests (run by `pnpm test:types`) pinning the public option types of
 * `opencodeText`: the factory's signature, the options beyond the shared
 * `HarnessCommonOptions` and the per-run model options. A change here is a
 * change to the published API and needs a changeset.
 */
import type { HarnessCommonOptions } from '@tanstack/ai-sandbox'
import { describe, expectTypeOf, it } from 'vitest'
import { opencodeText, type OpencodeTextAdapter, type OpencodeModelOptions, type OpencodeOptions, type OpencodePermission } from '../src/index.js'

describe('opencodeText', () => {
  it('takes a model id and optional OpencodeOptions, and returns OpencodeTextAdapter', () => {
    expectTypeOf(opencodeText).parameters.toEqualTypeOf<[model: string, options?: OpencodeOptions]>()
    expectTypeOf(opencodeText).returns.toEqualTypeOf<OpencodeTextAdapter>()
  })

  it('accepts the shared harness options and exactly these of its own', () => {
    expectTypeOf<OpencodeOptions>().toExtend<HarnessCommonOptions>()
    expectTypeOf<Omit<OpencodeOptions, keyof HarnessCommonOptions>>().toEqualTypeOf<{
      executable?: string
      agent?: string
      variant?: string
      thinking?: boolean
      title?: string | false
      config?: Record<string, unknown>
      permission?: OpencodePermission
    }>()
  })

  it('resumes a CLI session through modelOptions.sessionId', () => {
    expectTypeOf<OpencodeModelOptions['sessionId']>().toEqualTypeOf<string | undefined>()
  })

  it('refuses an option it does not have', () => {
    // @ts-expect-error: not an option of opencodeText
    opencodeText('model', { maxTurns: true })
  })

  it('is a chat() text adapter', () => {
    expectTypeOf<OpencodeTextAdapter>().toHaveProperty('chatStream')
  })
})
