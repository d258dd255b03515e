/**
 * What the reaper tests share: a logger that keeps its lines. It asserts nothing itself.
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'


/** An InternalLogger whose `errors` and `warn` lines are kept. */
export function capturingLogger(): { logger: InternalLogger; errors: string[]; warnings: string[] } {
  const errors: string[] = []
  const warnings: string[] = []
  const noop = () => undefined
  const logger = new Proxy({} as InternalLogger, {
    get: (_, name) => (name === 'errors' ? (message: string) => void errors.push(message) : name === 'warn' ? (message: string) => void warnings.push(message) : noop),
  })
  return { logger, errors, warnings }
}
