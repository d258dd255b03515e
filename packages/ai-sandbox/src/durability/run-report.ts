/**
 * Where the run driver's failures go: the logger's `errors` and `warn`, each
 * call guarded, and `guard` for one store or log call. Invariant: nothing here
 * throws or rejects, even with a logger that throws.
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'

/** Where failures go: the logger's `errors` / `warn`, each call itself guarded so a throwing logger cannot break totality. */
export interface Reporter {
  error: (message: string, error?: unknown) => void
  warn: (message: string) => void
}

/** The run driver's {@link Reporter} for one run: lines prefixed `run driver: `, `runId` in the meta. */
export function reporter(logger: InternalLogger | undefined, runId: string): Reporter {
  const call = (fn: () => void): void => {
    try {
      fn()
    } catch {
      // The logger itself failed: there is nowhere left to report to, and the pump must stay total.
    }
  }
  return {
    error: (message, error) => call(() => logger?.errors(`run driver: ${message}`, { runId, ...(error === undefined ? {} : { error }) })),
    warn: (message) => call(() => logger?.warn?.(`run driver: ${message}`, { runId })),
  }
}

/** Run one store / log call; a throw or rejection is reported and returned, never rethrown. */
export async function guard<T>(report: Reporter, message: string, fn: () => T | Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await fn() }
  } catch (error) {
    report.error(message, error)
    return { ok: false, error }
  }
}
