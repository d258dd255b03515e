/**
 * The CLI's environment and the redaction of secrets from what a run reports.
 * The environment is layered: quiet defaults, provider keys forwarded from
 * the workspace or the host, the adapter's per-run settings, then
 * `options.env`. Every value that may be a secret is known to the redactor,
 * so an error message that echoes one shows `[secret NAME]` instead.
 */
import type { AdapterYieldChunk, TextOptions } from '@tanstack/ai'
import { getProjection, isSecretRef, resolveSecret, type SecretRef } from '@tanstack/ai-sandbox'

type Capabilities = NonNullable<TextOptions['capabilities']>

/** Host environment variables forwarded to the CLI when the workspace does not set them (provider keys OpenCode reads). */
export const FORWARDED_HOST_ENV = ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY', 'OPENCODE_API_KEY'] as const

/** Environment that keeps the CLI from updating itself, sharing sessions or downloading from inside a sandbox (it has a bundled model list). */
export const QUIET_ENV = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
}

/** The CLI's environment: quiet defaults, forwarded host keys the workspace does not set, the adapter's settings, then `options.env`. */
export function cliEnv(config: { env?: Record<string, string | SecretRef> }, capabilities: Capabilities, settings: Record<string, string>): Record<string, string> {
  const secrets = getProjection(capabilities, { optional: true })?.resolveSecretEnv() ?? {}
  const env: Record<string, string> = { ...QUIET_ENV }
  for (const name of FORWARDED_HOST_ENV) {
    const value = secrets[name] || process.env[name]
    if (value) env[name] = value
  }
  Object.assign(env, settings)
  for (const [name, value] of Object.entries(config.env ?? {})) env[name] = typeof value === 'string' ? value : resolveSecret(value)
  return env
}

/** Redacts the values of workspace secrets, forwarded host keys and secret-valued `options.env` entries. */
export function secretRedactor(config: { env?: Record<string, string | SecretRef> }, capabilities: Capabilities): (text: string) => string {
  const projection = getProjection(capabilities, { optional: true })
  const named: [string, string][] = Object.entries(projection?.resolveSecretEnv() ?? {})
  for (const name of FORWARDED_HOST_ENV) if (process.env[name]) named.push([name, process.env[name]!])
  for (const [name, value] of Object.entries(config.env ?? {})) if (isSecretRef(value)) named.push([name, resolveSecret(value)])
  const values = named.filter(([, value]) => value.length >= 4).sort((a, b) => b[1].length - a[1].length)
  return (text) => values.reduce((out, [name, value]) => out.split(value).join(`[secret ${name}]`), text)
}

/** A `RUN_ERROR` chunk with its messages redacted. */
export function redactRunError(chunk: AdapterYieldChunk, redact: (text: string) => string): AdapterYieldChunk {
  const c = chunk as unknown as { message?: string; error?: { message: string; code?: string } }
  return { ...chunk, ...(c.message ? { message: redact(c.message) } : {}), ...(c.error ? { error: { ...c.error, message: redact(c.error.message) } } : {}) } as AdapterYieldChunk
}
