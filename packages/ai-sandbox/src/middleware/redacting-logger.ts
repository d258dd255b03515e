/**
 * A view of `chat()`'s internal logger that removes secret values from every
 * message and meta value before they are written. `withSandbox` hands this
 * view to everything it drives (ensure, setup, file events and hooks), so a
 * secret that shows up in a file name, a command or an error message is
 * printed as `[secret NAME]`, like it is in the stream.
 * Invariant: the wrapped logger never sees a secret value of the workspace.
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'

/** The logging methods of `InternalLogger` (each takes `(message, meta?)`). */
const LOG_METHODS = ['provider', 'output', 'middleware', 'tools', 'sandbox', 'agentLoop', 'config', 'errors', 'request', 'warn'] as const

/** How deep meta objects are walked; deeper values are replaced by a marker. */
const MAX_DEPTH = 6

/**
 * Wrap `logger` so that `redact` is applied to every message and to the
 * strings inside meta (plain objects, arrays, and errors, whose `message` and
 * `stack` are redacted into a plain `{ name, message, stack }` record).
 *
 * @param logger - The run's logger, or `undefined` (then `undefined` is returned).
 * @param redact - Replaces secret values in a string.
 * @returns A logger with the same methods; `isEnabled` is passed through.
 */
export function redactingLogger(logger: InternalLogger | undefined, redact: (text: string) => string): InternalLogger | undefined {
  if (!logger) return undefined
  const view = Object.create(logger) as InternalLogger
  for (const method of LOG_METHODS) {
    const original = logger[method]
    if (typeof original !== 'function') continue
    Object.defineProperty(view, method, {
      value: (message: string, meta?: Record<string, unknown>) => original.call(logger, redact(message), meta === undefined ? undefined : (redactValue(meta, redact, 0) as Record<string, unknown>)),
    })
  }
  return view
}

function redactValue(value: unknown, redact: (text: string) => string, depth: number): unknown {
  if (typeof value === 'string') return redact(value)
  if (value === null || typeof value !== 'object') return value
  if (depth >= MAX_DEPTH) return '[nested too deep to log]'
  if (value instanceof Error) {
    const cause = (value as { cause?: unknown }).cause
    return {
      name: value.name,
      message: redact(value.message),
      ...(value.stack ? { stack: redact(value.stack) } : {}),
      ...((value as { reason?: unknown }).reason !== undefined ? { reason: (value as { reason?: unknown }).reason } : {}),
      ...(cause !== undefined ? { cause: redactValue(cause, redact, depth + 1) } : {}),
    }
  }
  if (Array.isArray(value)) return value.map((item) => redactValue(item, redact, depth + 1))
  const proto = Object.getPrototypeOf(value) as unknown
  if (proto !== Object.prototype && proto !== null) return redact(String(value))
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactValue(item, redact, depth + 1)]))
}
