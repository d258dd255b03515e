/**
 * `@tanstack/ai-codex`: run the Codex CLI inside a sandbox as a `@tanstack/ai`
 * text adapter. The translator, command builder, projection and policy
 * mapping are exported for tests, replays and other runtimes.
 */
export { codexText, CODEX_POLICY_RULES } from './adapter.js'
export type { CodexOptions, CodexModelOptions, CodexTextAdapter } from './adapter.js'
export { createCodexTranslator, translateCodexLines, CODEX_SESSION_EVENT, CODEX_ERROR_EVENT } from './translate.js'
export type { CodexTranslator, CodexTranslatorOptions, CodexExit } from './translate.js'
export { buildCodexArgs, buildCodexCommand, codexConfigFlag, tomlString, tomlValue } from './command.js'
export type { CodexCommandInput, CodexSandboxMode, TomlValue } from './command.js'
export { codexPolicySettings, globToPrefix } from './policy.js'
export type { CodexPolicySettings, CodexPolicyOptions } from './policy.js'
export { codexProjection, codexMcpToml, CODEX_CONFIG, CODEX_SKILLS_DIR, CODEX_CONFIG_BLOCK } from './projection.js'
export { codexToolBridgeFlags, CODEX_BRIDGE_SERVER, CODEX_BRIDGE_TOKEN_ENV } from './bridge.js'
export type { CodexToolBridgeFlags } from './bridge.js'
export type { CodexLine, CodexItem, CodexUsage } from './cli-events.js'
export { CodexUnsupportedError } from './errors.js'
export { withCodexStructuredOutput, STRUCTURED_OUTPUT_INVALID } from './structured-output.js'
