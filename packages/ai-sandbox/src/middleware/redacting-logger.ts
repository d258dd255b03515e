/**
 * Secret-free logging for a sandboxed run: `scrubLoggerSink` puts the run's
 * secret scrubber in front of `chat()`'s one logger sink; `redactingLogger` is
 * the view `withSandbox` hands to what it drives. Invariant: once
 * `scrubLoggerSink` ran, the sink never receives a known form of a secret.
 * Design notes: docs/design/with-sandbox.md
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { scrubDeep } from '../secrets/secret-scrubber.js'

/** The logging methods of `InternalLogger` (each takes `(message, meta?)`). */
const LOG_METHODS = ['provider', 'output', 'middleware', 'tools', 'sandbox', 'agentLoop', 'config', 'errors', 'request', 'warn'] as const

/** The methods of the user-facing `Logger` that `InternalLogger` writes to. */
const SINK_METHODS = ['debug', 'info', 'warn', 'error'] as const

/** Marks a sink already wrapped, so two `withSandbox` of one run wrap it once per redactor. */
const SCRUBBED = Symbol('@tanstack/ai-sandbox/scrubbed-logger-sink')

/** Replaces secrets in one string (e.g. `createSecretScrubber(...).text`); applied deep inside meta. */
export type RedactText = (text: string) => string

/**
 * Wrap `logger` so that `redact` is applied to every message and meta value
 * before they are written.
 *
 * @param logger - The run's logger, or `undefined` (then `undefined` is returned).
 * @param redact - Replaces secrets in a string; applied to the message and to every string deep inside meta (objects, arrays, errors).
 * @returns A logger with the same methods; `isEnabled` is passed through.
 */
export function redactingLogger(logger: InternalLogger | undefined, redact: RedactText): InternalLogger | undefined {
  if (!logger) return undefined
  const view = Object.create(logger) as InternalLogger
  for (const method of LOG_METHODS) {
    const original = logger[method]
    if (typeof original !== 'function') continue
    Object.defineProperty(view, method, {
      value: (message: string, meta?: Record<string, unknown>) => original.call(logger, redact(message), meta === undefined ? undefined : scrubDeep(meta, redact)),
    })
  }
  return view
}

/**
 * Put `redact` in front of the sink of `chat()`'s per-call logger: its private
 * `logger` field (the user's `Logger`, or the console logger) is replaced,
 * for this call only, by a wrapper that scrubs every message and meta value.
 * Nothing happens when the logger has no such field (another `@tanstack/ai`
 * build); `redactingLogger` still covers what this package logs.
 *
 * @param logger - `getSandboxRuntime(ctx).logger`, or `undefined`.
 * @param redact - Replaces secrets in a string; applied as in {@link redactingLogger}.
 * @returns True when the sink is now scrubbed.
 */
export function scrubLoggerSink(logger: InternalLogger | undefined, redact: RedactText): boolean {
  const holder = logger as unknown as { logger?: Record<string | symbol, unknown> } | undefined
  const sink = holder?.logger
  if (!sink || typeof sink !== 'object' || !SINK_METHODS.every((m) => typeof sink[m] === 'function')) return false
  const redactors = (sink[SCRUBBED] as RedactText[] | undefined) ?? []
  if (redactors.includes(redact)) return true
  const wrapped: Record<string | symbol, unknown> = Object.create(sink)
  for (const method of SINK_METHODS) {
    const original = sink[method] as (message: string, meta?: unknown) => void
    wrapped[method] = (message: string, meta?: unknown) => original.call(sink, redact(message), meta === undefined ? undefined : scrubDeep(meta, redact))
  }
  Object.defineProperty(wrapped, SCRUBBED, { value: [...redactors, redact] })
  holder!.logger = wrapped
  return true
}
