// Middleware: withSandbox and the capability tokens it provides.
export { withSandbox } from './with-sandbox.js'
export type { SandboxMiddlewareOptions } from './with-sandbox.js'
export { DEFAULT_CANCEL_POLL_MS } from './durability.js'
export { isSandboxToolCall, SANDBOX_TOOL_CALL_KEY } from './tool-history.js'
export {
  SandboxCapability,
  getSandbox,
  provideSandbox,
  ToolBridgeProvisionerCapability,
  getToolBridgeProvisioner,
  provideToolBridgeProvisioner,
  SandboxRunChunksCapability,
  getSandboxRunChunks,
  provideSandboxRunChunks,
} from './capabilities.js'
