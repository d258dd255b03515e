/**
 * `@tanstack/ai-grok-build`: run the Grok Build CLI inside a sandbox as a
 * `@tanstack/ai` text adapter, over the Agent Client Protocol. The
 * translator, command builder, policy mapping, projection and transport are
 * exported for tests, transcript replays and other runtimes.
 */
export { grokBuildText } from './adapter.js'
export type { GrokBuildOptions, GrokBuildModelOptions, GrokBuildTextAdapter } from './adapter.js'
export {
  createGrokBuildTranslator,
  translateGrokBuildTranscript,
  GROK_BUILD_SESSION_EVENT,
  GROK_BUILD_INIT_EVENT,
  GROK_BUILD_PERMISSION_EVENT,
  GROK_BUILD_PLAN_EVENT,
  GROK_BUILD_NOTICE_EVENT,
} from './translate.js'
export type { GrokBuildTranslator, GrokBuildTranslatorOptions, GrokBuildExit } from './translate.js'
export { buildGrokArgs, buildGrokCommand, GROK_APPROVE_FLAG, GROK_HOME_BINARY } from './command.js'
export type { GrokCommandInput } from './command.js'
export { grokPolicySettings, grokPermissionVerdict, decideGrokPermission, GROK_READ_ONLY_KINDS, GROK_FILE_WRITE_KINDS, GROK_NETWORK_KINDS } from './policy.js'
export type { GrokPolicySettings, GrokPermissionAnswer } from './policy.js'
export { grokBuildProjection, grokMcpServers, GROK_SKILLS_DIR } from './projection.js'
export type { GrokMcpServer } from './projection.js'
export { grokBridgeServer, GROK_BRIDGE_SERVER } from './bridge.js'
export { acpStreamOverProcess, jsonLinesReadable } from './transport.js'
export type { AcpProcessStreamOptions } from './transport.js'
export { driveAcpTurn, GrokBuildSessionError, GROK_CLIENT_INFO } from './session.js'
export type { AcpTurnInput } from './session.js'
export type { GrokAcpTranscriptEntry, AcpMessage, AcpDirection } from './cli-events.js'
export { GrokBuildUnsupportedError } from './errors.js'
