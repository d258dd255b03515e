/**
 * The CLI's environment, layered: quiet defaults, provider keys forwarded from
 * the workspace or the host, the adapter's per-run settings, then
 * `options.env`. The adapter hands the same {@link FORWARDED_HOST_ENV} to
 * core's `createHarnessSecretRedactor`, so every value that may be a secret
 * is known to the redactor and an error message that echoes one shows
 * `[secret NAME]` instead.
 */
/** Host environment variables forwarded to the CLI when the workspace does not set them (provider keys OpenCode reads). */
export const FORWARDED_HOST_ENV = ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY', 'OPENCODE_API_KEY'] as const

/** Environment that keeps the CLI from updating itself, sharing sessions or downloading from inside a sandbox (it has a bundled model list). */
export const QUIET_ENV = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
}
