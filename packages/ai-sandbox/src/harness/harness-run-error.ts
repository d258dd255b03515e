/**
 * The `RUN_ERROR` chunk of a harness run: how an adapter ends a run that
 * failed, and how such a chunk has secret values taken out before it leaves.
 * Pure: no IO. Invariant: `message` and `error.message` always say the same
 * thing, and a redacted chunk keeps every other field as it was.
 */
import type { AdapterYieldChunk, StreamChunk } from '@tanstack/ai'

/**
 * Build the `RUN_ERROR` chunk that ends a harness run.
 *
 * @param runId - The run's id (see `harnessRunIds`).
 * @param threadId - The run's thread id.
 * @param message - What failed and what to do about it; carried both as `message` and as `error.message`.
 * @param code - A short machine-readable cause, e.g. `timeout`, `no_prompt`, `adapter_error`.
 * @returns `{ type: 'RUN_ERROR', runId, threadId, message, code, error: { message, code } }`.
 * @example
 * ```ts
 * yield harnessRunError(runId, threadId, 'codex: the run took longer than timeoutMs (500 ms); the CLI was stopped.', 'timeout')
 * ```
 */
export function harnessRunError(runId: string, threadId: string, message: string, code: string): AdapterYieldChunk {
  return { type: 'RUN_ERROR', runId, threadId, message, code, error: { message, code } } as unknown as StreamChunk as AdapterYieldChunk
}

/**
 * Redact a `RUN_ERROR` chunk: its `message` and `error.message` go through
 * `redact`; an absent or empty one stays as it is, and so does every other field.
 *
 * @param chunk - A `RUN_ERROR` chunk (any other chunk is returned as a shallow copy, with the same fields).
 * @param redact - Replaces secret values in a text, e.g. from `createHarnessSecretRedactor`.
 * @returns A new chunk; `chunk` is not changed.
 * @example
 * ```ts
 * const safe = redactRunErrorChunk(harnessRunError('r1', 't1', 'bad key sk-123456', 'auth'), (text) => text.replace('sk-123456', '[secret KEY]'))
 * // safe.message === 'bad key [secret KEY]'
 * ```
 */
export function redactRunErrorChunk(chunk: AdapterYieldChunk, redact: (text: string) => string): AdapterYieldChunk {
  const c = chunk as unknown as { message?: string; error?: { message: string; code?: string } }
  return { ...chunk, ...(c.message ? { message: redact(c.message) } : {}), ...(c.error ? { error: { ...c.error, message: redact(c.error.message) } } : {}) } as AdapterYieldChunk
}
