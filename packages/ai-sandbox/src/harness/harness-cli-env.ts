/**
 * The environment of a harness CLI, layered the same way by every adapter:
 * quiet defaults, forwarded provider keys, per-run settings, then the caller's
 * `env` option (secret references resolved). Pure apart from reading
 * `process.env` for the forwarded names. The adapter hands the same
 * `forwardedHostEnv` to `guardHarnessRun`, so its redactor knows each value.
 * Design notes: docs/design/harness-adapters.md
 */
import type { CapabilityContext } from '@tanstack/ai'
import { getProjection } from '../capabilities/tokens.js'
import { resolveSecret, type SecretRef } from '../contracts/secret-ref.js'

/** Input of {@link harnessCliEnv}. */
export interface HarnessCliEnvInput {
  /** `chatStream`'s `options.capabilities` (the workspace's secrets come from its projection). */
  capabilities: CapabilityContext | undefined
  /** Names taken from the workspace secrets, else from the host's `process.env`, when set and non-empty. */
  forwardedHostEnv: readonly string[]
  /** First layer: defaults that keep the CLI quiet (no telemetry, no updates). */
  base?: Record<string, string>
  /** Third layer: what the adapter sets for this run (permissions, inline config, a bridge token). */
  settings?: Record<string, string>
  /** Last layer: the adapter's `env` option; wins over everything. */
  env?: Record<string, string | SecretRef>
}

/**
 * Build a CLI's environment.
 * @returns A new object: `base`, then the forwarded names, then `settings`, then `env`.
 * @throws UnknownSecretError when an `env` value is a reference not made by `createSecrets`.
 * @example
 * ```ts
 * harnessCliEnv({ capabilities: options.capabilities, forwardedHostEnv: ['OPENAI_API_KEY'], env: config.env })
 * ```
 */
export function harnessCliEnv(input: HarnessCliEnvInput): Record<string, string> {
  const secrets = (input.capabilities && getProjection(input.capabilities as never, { optional: true })?.resolveSecretEnv()) ?? {}
  const env: Record<string, string> = { ...input.base }
  for (const name of input.forwardedHostEnv) {
    const value = secrets[name] || process.env[name]
    if (value) env[name] = value
  }
  Object.assign(env, input.settings)
  for (const [name, value] of Object.entries(input.env ?? {})) env[name] = typeof value === 'string' ? value : resolveSecret(value)
  return env
}
