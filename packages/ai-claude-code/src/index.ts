/**
 * `@tanstack/ai-claude-code`: run the Claude Code CLI inside a sandbox as a
 * `@tanstack/ai` text adapter. The translator, command builder and policy
 * mapping are exported for tests, replays and other runtimes.
 */
export { claudeCodeText } from './adapter.js'
export type { ClaudeCodeOptions, ClaudeCodeModelOptions, ClaudeCodeTextAdapter } from './adapter.js'
export { createClaudeCodeTranslator, translateClaudeCodeLines, CLAUDE_CODE_SESSION_EVENT, CLAUDE_CODE_PERMISSION_DENIALS_EVENT, CLAUDE_CODE_INIT_EVENT } from './translate.js'
export type { ClaudeCodeTranslator, ClaudeCodeTranslatorOptions, ClaudeCodeExit } from './translate.js'
export { buildClaudeArgs, buildClaudeCommand } from './command.js'
export type { ClaudeCommandInput, ClaudePermissionMode } from './command.js'
export { claudePolicyFlags } from './policy.js'
export type { ClaudePolicyFlags, ClaudePolicyOptions } from './policy.js'
export type { ClaudeLine } from './cli-events.js'
export { ClaudeCodeUnsupportedError } from './errors.js'
export { withClaudeStructuredOutput, CLAUDE_STRUCTURED_OUTPUT_TOOL, STRUCTURED_OUTPUT_INVALID } from './structured-output.js'
export { claudeCodeProjection, CLAUDE_MCP_CONFIG, CLAUDE_SKILLS_DIR } from './projection.js'
export { CLAUDE_BRIDGE_SERVER, claudeBridgedToolName, claudeToolBridgeFlags } from './bridge.js'
export type { ClaudeToolBridgeFlags } from './bridge.js'
