/**
 * `@tanstack/ai-opencode`: run the OpenCode CLI inside a sandbox as a
 * `@tanstack/ai` text adapter. The translator, command builder, policy
 * mapping and projection are exported for tests, replays and other runtimes.
 */
export { opencodeText } from './adapter.js'
export type { OpencodeOptions, OpencodeModelOptions, OpencodeTextAdapter } from './adapter.js'
export { createOpencodeTranslator, translateOpencodeLines, OPENCODE_SESSION_EVENT, OPENCODE_PERMISSION_DENIED_EVENT } from './translate.js'
export type { OpencodeTranslator, OpencodeTranslatorOptions, OpencodeExit } from './translate.js'
export { buildOpencodeArgs, buildOpencodeCommand } from './command.js'
export type { OpencodeCommandInput } from './command.js'
export { opencodePermission, mergePermission, OPENCODE_NETWORK_PERMISSIONS } from './policy.js'
export type { OpencodePermission, OpencodePermissionAction, OpencodePermissionOptions } from './policy.js'
export { opencodeProjection, hasProjectedConfig, OPENCODE_PROJECTION_DIR, OPENCODE_PROJECTED_CONFIG, OPENCODE_SKILLS_DIR } from './projection.js'
export { opencodeToolBridgeConfig, opencodeBridgedToolName, OPENCODE_BRIDGE_SERVER, OPENCODE_BRIDGE_TOKEN_ENV } from './bridge.js'
export type { OpencodeToolBridgeConfig } from './bridge.js'
export type { OpencodeLine, OpencodePart, OpencodeError, OpencodeTokens, OpencodeToolState } from './cli-events.js'
export { OpencodeUnsupportedError } from './errors.js'
