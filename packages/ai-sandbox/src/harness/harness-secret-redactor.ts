/**
 * The secret redactor of one harness run: every value the adapter may hand
 * the CLI as a secret is replaced by `[secret NAME]`, NAME being the
 * environment variable the CLI sees it under. The matching itself is the
 * shared secret scrubber's. Invariant: a longer value is replaced before any
 * value inside it. Design notes: docs/design/secrets.md
 */
import type { TextOptions } from '@tanstack/ai'
import { getProjection } from '../capabilities/tokens.js'
import { createSecretScrubber, type SecretScrubber } from '../secrets/secret-scrubber.js'
import { isSecretRef, resolveSecret, type SecretRef } from '../contracts/secret-ref.js'

/** Options of {@link createHarnessSecretRedactor}. */
export interface HarnessSecretRedactorOptions {
  /** `options.capabilities` of the run; the workspace secrets come from its projection. Default: none (no workspace secrets). */
  capabilities?: TextOptions['capabilities']
  /** Names of host environment variables the adapter forwards to the CLI (e.g. `ANTHROPIC_API_KEY`); the values they have in `hostEnv` count as secrets. Default: none. */
  forwardedHostEnv?: readonly string[]
  /** The adapter's `env` option; only its secret references count (plain strings are not secrets). Default: none. */
  env?: Readonly<Record<string, string | SecretRef>>
  /** Where forwarded values are read from. Default `process.env`. */
  hostEnv?: Readonly<Record<string, string | undefined>>
}

/**
 * Build the secret scrubber of one harness run (see `secret-scrubber.ts`):
 * raw values and their JSON-escaped, base64, base64url, URL-encoded and hex
 * forms are replaced by `[secret NAME]`, in texts, in nested values and
 * across the deltas of a chunk stream. The secrets are read once, now.
 *
 * @param options - See {@link HarnessSecretRedactorOptions}.
 * @returns The run's scrubber (values of 4 characters or more; encoded forms of 6 or more).
 * @throws UnknownSecretError (from `resolveSecret`) when an `env` reference was not made by `createSecrets`.
 */
export function createHarnessSecretScrubber(options: HarnessSecretRedactorOptions): SecretScrubber {
  const { capabilities, forwardedHostEnv = [], env = {}, hostEnv = process.env } = options
  const projection = capabilities ? getProjection(capabilities, { optional: true }) : undefined
  const named: [string, string][] = Object.entries(projection?.resolveSecretEnv() ?? {})
  for (const name of forwardedHostEnv) if (hostEnv[name]) named.push([name, hostEnv[name]])
  for (const [name, value] of Object.entries(env)) if (isSecretRef(value)) named.push([name, resolveSecret(value)])
  return createSecretScrubber(named)
}

/**
 * Create the function that takes a run's secret values out of a text (error
 * messages, log lines): the `text` of {@link createHarnessSecretScrubber}.
 *
 * @param options - See {@link HarnessSecretRedactorOptions}.
 * @returns `(text) => text` with each secret value (of 4 characters or more), and each of its encoded forms, replaced by `[secret NAME]`, longest first.
 * @throws UnknownSecretError (from `resolveSecret`) when an `env` reference was not made by `createSecrets`.
 * @example
 * ```ts
 * const redact = createHarnessSecretRedactor({ capabilities: options.capabilities, forwardedHostEnv: ['OPENAI_API_KEY'], env: config.env })
 * redact(`auth failed for ${process.env.OPENAI_API_KEY}`) // 'auth failed for [secret OPENAI_API_KEY]'
 * ```
 */
export function createHarnessSecretRedactor(options: HarnessSecretRedactorOptions): (text: string) => string {
  return createHarnessSecretScrubber(options).text
}
