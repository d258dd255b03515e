/**
 * resolveDurableRunId / resolveDurableThreadId: the caller's id when given; a
 * durable run never gets a generated runId (the fallback is not even called);
 * only a durable attach refuses a missing threadId. Plus the three errors'
 * fields, brands and messages.
 */
import { describe, expect, it, vi } from 'vitest'
import { SandboxConfigError, SandboxError } from '../../src/contracts/errors.js'
import { DurableAttachNotSupportedError, DurableRunIdRequiredError, DurableThreadIdRequiredError, resolveDurableRunId, resolveDurableThreadId } from '../../src/harness/durable-ids.js'

describe('resolveDurableRunId', () => {
  it("returns the caller's runId, durable or not, without calling the fallback", () => {
    for (const durable of [true, false]) {
      const fallback = vi.fn(() => 'generated')
      expect(resolveDurableRunId('run-7', { durable, adapter: 'codex', fallback })).toBe('run-7')
      expect(fallback).not.toHaveBeenCalled()
    }
  })

  it('falls back for a non-durable run without a runId (absent or empty)', () => {
    const fallback = vi.fn(() => 'codex-generated')
    expect(resolveDurableRunId(undefined, { durable: false, adapter: 'codex', fallback })).toBe('codex-generated')
    expect(resolveDurableRunId('', { durable: false, adapter: 'codex', fallback })).toBe('codex-generated')
    expect(fallback).toHaveBeenCalledTimes(2)
  })

  it('throws DurableRunIdRequiredError for a durable run without a runId, and never mints one', () => {
    for (const runId of [undefined, '']) {
      const fallback = vi.fn(() => 'generated')
      let error: unknown
      try {
        resolveDurableRunId(runId, { durable: true, adapter: 'claude-code', fallback })
      } catch (e) {
        error = e
      }
      expect(fallback).not.toHaveBeenCalled()
      expect(error).toBeInstanceOf(DurableRunIdRequiredError)
      const required = error as DurableRunIdRequiredError
      expect(required.reason).toBe('run-id-required')
      expect(required.adapter).toBe('claude-code')
      expect(required.message).toContain('chat({ runId })')
      expect(required.message).toContain('journal path')
      expect(DurableRunIdRequiredError.isInstance(required)).toBe(true)
      expect(SandboxError.isInstance(required)).toBe(true)
    }
  })

  it('refuses a runId that is not a string, and bad options, naming the field', () => {
    const fallback = () => 'x'
    expect(() => resolveDurableRunId(42 as never, { durable: false, adapter: 'codex', fallback })).toThrow(SandboxConfigError)
    expect(() => resolveDurableRunId(42 as never, { durable: false, adapter: 'codex', fallback })).toThrow(/chat\(\{ runId \}\): expected a string, got number/)
    expect(() => resolveDurableRunId('r', { durable: 'yes', adapter: 'codex', fallback } as never)).toThrow(/resolveDurableRunId\.durable/)
    expect(() => resolveDurableRunId('r', { durable: true, adapter: '', fallback })).toThrow(/resolveDurableRunId\.adapter/)
    expect(() => resolveDurableRunId('r', { durable: true, adapter: 'codex' } as never)).toThrow(/resolveDurableRunId\.fallback/)
  })
})

describe('resolveDurableThreadId', () => {
  const cases = [
    { durable: false, attaching: false, throws: false },
    { durable: false, attaching: true, throws: false },
    { durable: true, attaching: false, throws: false }, // a fresh durable run establishes its thread id
    { durable: true, attaching: true, throws: true },
  ]

  it.each(cases)('without a threadId: durable $durable, attaching $attaching → throws $throws', ({ durable, attaching, throws }) => {
    const fallback = vi.fn(() => 'minted-thread')
    const resolve = () => resolveDurableThreadId(undefined, { durable, attaching, adapter: 'grok-build', fallback })
    if (throws) {
      expect(resolve).toThrow(DurableThreadIdRequiredError)
      expect(fallback).not.toHaveBeenCalled()
    } else {
      expect(resolve()).toBe('minted-thread')
      expect(fallback).toHaveBeenCalledOnce()
    }
  })

  it.each(cases)("returns the caller's threadId: durable $durable, attaching $attaching", ({ durable, attaching }) => {
    const fallback = vi.fn(() => 'minted-thread')
    expect(resolveDurableThreadId('thread-1', { durable, attaching, adapter: 'grok-build', fallback })).toBe('thread-1')
    expect(fallback).not.toHaveBeenCalled()
  })

  it('names the run record threadId and the reason in its error', () => {
    const error = (() => {
      try {
        resolveDurableThreadId('', { durable: true, attaching: true, adapter: 'codex', fallback: () => 'x' })
      } catch (e) {
        return e as DurableThreadIdRequiredError
      }
      throw new Error('expected a throw')
    })()
    expect(error.reason).toBe('thread-id-required')
    expect(error.adapter).toBe('codex')
    expect(error.message).toContain('RunRecord.threadId')
    expect(error.message).toContain('chat({ threadId })')
    expect(error.message).toContain('very first chunk')
    expect(DurableThreadIdRequiredError.isInstance(error)).toBe(true)
    expect(DurableRunIdRequiredError.isInstance(error)).toBe(false)
  })

  it('refuses a missing attaching flag', () => {
    expect(() => resolveDurableThreadId('t', { durable: true, adapter: 'codex', fallback: () => 'x' } as never)).toThrow(/resolveDurableThreadId\.attaching/)
  })
})

describe('DurableAttachNotSupportedError', () => {
  it('names the adapter, why, and what to do instead', () => {
    const error = new DurableAttachNotSupportedError('opencode')
    expect(error.reason).toBe('attach-not-supported')
    expect(error.adapter).toBe('opencode')
    expect(error.name).toBe('DurableAttachNotSupportedError')
    expect(error.message).toContain('does not journal')
    expect(error.message).toContain('durability.attach')
    expect(DurableAttachNotSupportedError.isInstance(error)).toBe(true)
    expect(SandboxError.isInstance(error)).toBe(true)
  })
})
