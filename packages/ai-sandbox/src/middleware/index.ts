// Middleware: withSandbox and the capability tokens it provides.
export { withSandbox } from './with-sandbox.js'
export type { SandboxMiddlewareOptions } from './with-sandbox.js'
export {
  SandboxCapability,
  getSandbox,
  provideSandbox,
  ToolBridgeProvisionerCapability,
  getToolBridgeProvisioner,
  provideToolBridgeProvisioner,
} from './capabilities.js'
