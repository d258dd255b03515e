/**
 * The CLI's environment, layered: quiet defaults, provider keys forwarded from
 * the workspace or the host, the adapter's per-run settings, then
 * `options.env`. The adapter hands the same {@link FORWARDED_HOST_ENV} to
 * core's `createHarnessSecretRedactor`, so every value that may be a secret
 * is known to the redactor and an error message that echoes one shows
 * `[secret NAME]` instead.
 */
import type { TextOptions } from '@tanstack/ai'
import { harnessCliEnv, type SecretRef } from '@tanstack/ai-sandbox'

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

/** The CLI's environment: quiet defaults, forwarded host keys the workspace does not set, the adapter's settings, then `options.env` (core's `harnessCliEnv`). */
export function cliEnv(config: { env?: Record<string, string | SecretRef> }, capabilities: Capabilities, settings: Record<string, string>): Record<string, string> {
  return harnessCliEnv({ capabilities, forwardedHostEnv: FORWARDED_HOST_ENV, base: QUIET_ENV, settings, ...(config.env ? { env: config.env } : {}) })
}
