/**
 * The secret redactor of one harness run: every value the adapter may hand
 * the CLI as a secret (workspace secrets, forwarded host credentials,
 * secret-valued `options.env` entries) is replaced by `[secret NAME]`, NAME
 * being the environment variable the CLI sees it under. Unlike
 * `redactSecrets`, which works on references, it also knows plain host
 * values. Invariant: a longer value is replaced before any value inside it.
 */
import type { TextOptions } from '@tanstack/ai'
import { getProjection } from '../workspace/projection.js'
import { isSecretRef, resolveSecret, type SecretRef } from '../workspace/secrets.js'

/** Values shorter than this many characters are left alone: replacing them would mangle ordinary text. */
const MIN_SECRET_CHARS = 4

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
 * Create the function that takes a run's secret values out of a text (error
 * messages, log lines). The secrets are read once, now.
 *
 * @param options - See {@link HarnessSecretRedactorOptions}.
 * @returns `(text) => text` with each secret value (of 4 characters or more) replaced by `[secret NAME]`, longest values first.
 * @throws UnknownSecretError (from `resolveSecret`) when an `env` reference was not made by `createSecrets`.
 * @example
 * ```ts
 * const redact = createHarnessSecretRedactor({ capabilities: options.capabilities, forwardedHostEnv: ['OPENAI_API_KEY'], env: config.env })
 * redact(`auth failed for ${process.env.OPENAI_API_KEY}`) // 'auth failed for [secret OPENAI_API_KEY]'
 * ```
 */
export function createHarnessSecretRedactor(options: HarnessSecretRedactorOptions): (text: string) => string {
  const { capabilities, forwardedHostEnv = [], env = {}, hostEnv = process.env } = options
  const projection = capabilities ? getProjection(capabilities, { optional: true }) : undefined
  const named: [string, string][] = Object.entries(projection?.resolveSecretEnv() ?? {})
  for (const name of forwardedHostEnv) if (hostEnv[name]) named.push([name, hostEnv[name]])
  for (const [name, value] of Object.entries(env)) if (isSecretRef(value)) named.push([name, resolveSecret(value)])
  const values = named.filter(([, value]) => value.length >= MIN_SECRET_CHARS).sort((a, b) => b[1].length - a[1].length)
  return (text) => values.reduce((out, [name, value]) => out.split(value).join(`[secret ${name}]`), text)
}
