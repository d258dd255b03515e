/**
 * The Daytona labels this package puts on a sandbox, so the provider finds
 * its own sandboxes (`listResources`, a janitor) and keeps the journal
 * secret where processes inside the sandbox cannot read it (labels live on
 * Daytona's control plane). Caller labels may carry the key label (core's
 * `defineSandbox` does); the others are the provider's alone.
 */

/** Label keys set by the provider. */
export const LABEL = {
  /** On every sandbox this package creates: `true`. */
  sandbox: 'tanstack.sandbox',
  /** The `create({ key })`, when given. */
  key: 'tanstack.sandbox.key',
  /** What the sandbox was made from: `create`, `snapshot:<name>` or `fork:<id>`. */
  origin: 'tanstack.sandbox.origin',
  /** A random secret the run journal's sentinels are checked against (spec 000 "Durable runs"); never inside the sandbox. */
  journalSecret: 'tanstack.sandbox.journal-secret',
} as const

const PROVIDER_KEYS: ReadonlySet<string> = new Set([LABEL.sandbox, LABEL.origin, LABEL.journalSecret])

/** True for a label key only the provider may set. */
export function isProviderLabel(key: string): boolean {
  return PROVIDER_KEYS.has(key)
}
