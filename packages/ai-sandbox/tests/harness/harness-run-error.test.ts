/**
 * RUN_ERROR chunks of a harness run: the shape adapters end a run with, and
 * redaction of both messages without touching anything else.
 */
import { describe, expect, it } from 'vitest'
import type { AdapterYieldChunk } from '@tanstack/ai'
import { harnessRunError, redactRunErrorChunk } from '../../src/index.js'

const redact = (text: string) => text.replaceAll('hunter22', '[secret PASSWORD]')

describe('harnessRunError', () => {
  it('carries the message and code both at the top and under error', () => {
    expect(harnessRunError('r1', 't1', 'codex: the CLI was not found.', 'cli_not_found')).toEqual({
      type: 'RUN_ERROR',
      runId: 'r1',
      threadId: 't1',
      message: 'codex: the CLI was not found.',
      code: 'cli_not_found',
      error: { message: 'codex: the CLI was not found.', code: 'cli_not_found' },
    })
  })
})

describe('redactRunErrorChunk', () => {
  it('redacts message and error.message and keeps every other field', () => {
    const chunk = { ...harnessRunError('r1', 't1', 'login hunter22 refused', 'auth'), timestamp: 5, error: { message: 'inner hunter22', code: 'auth', status: 401 } } as unknown as AdapterYieldChunk
    const out = redactRunErrorChunk(chunk, redact)
    expect(out).toEqual({ type: 'RUN_ERROR', runId: 'r1', threadId: 't1', message: 'login [secret PASSWORD] refused', code: 'auth', timestamp: 5, error: { message: 'inner [secret PASSWORD]', code: 'auth', status: 401 } })
    expect((chunk as unknown as { message: string }).message).toBe('login hunter22 refused')
  })

  it('leaves an absent or empty message and a missing error alone', () => {
    const bare = { type: 'RUN_ERROR', runId: 'r1', message: '' } as unknown as AdapterYieldChunk
    expect(redactRunErrorChunk(bare, () => 'changed')).toEqual({ type: 'RUN_ERROR', runId: 'r1', message: '' })
    const onlyError = { type: 'RUN_ERROR', runId: 'r1', error: { message: 'hunter22' } } as unknown as AdapterYieldChunk
    expect(redactRunErrorChunk(onlyError, redact)).toEqual({ type: 'RUN_ERROR', runId: 'r1', error: { message: '[secret PASSWORD]' } })
  })
})
