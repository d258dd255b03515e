// Bridge: chat() tools served to the agent in the sandbox as MCP tools. The
// transport-agnostic core, the node:http host transport, the provisioner
// contract and its default, live events as CUSTOM chunks, and the co-located
// seam. The internal tool-call path (`tool-call.ts`) stays private.
export { createToolBridgeCore } from './tool-bridge-core.js'
export { TOOL_BRIDGE_SERVER_NAME } from './server-name.js'
export type { ToolBridgeCore, ToolBridgeCoreOptions, ToolBridgeCall, ToolBridgeCallResult, ToolBridgeEvent } from './tool-bridge-core.js'
export { handleBridgeJsonRpc } from './handle-bridge-json-rpc.js'
export { startHostToolBridge, TOOL_BRIDGE_PATH } from './host-tool-bridge.js'
export type { HostToolBridge, HostToolBridgeOptions } from './host-tool-bridge.js'
export type { ToolBridgeProvisioner, ToolBridgeProvisionInput, ProvisionedToolBridge } from './provisioner.js'
export { hostToolBridgeProvisioner } from './host-provisioner.js'
export { routedToolBridge } from './routed-provisioner.js'
export type { RoutedToolBridge, RoutedToolBridgeOptions } from './routed-provisioner.js'
export { createBridgeEventChannel, mergeChunkStreams, isBridgeCustomChunk, isBridgeUnavailableChunk, toolBridgeEventOf, TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT, TOOL_BRIDGE_UNAVAILABLE_EVENT } from './bridge-events.js'
export type { BridgeEventChannel, ToolBridgeChunkEvent, ToolBridgeCallValue, ToolBridgeResultValue, ToolBridgeUnavailableValue } from './bridge-events.js'
export { toolDescriptors, remoteToolStubs, httpRemoteToolExecutor } from './remote-tools.js'
export type { ToolDescriptor, ToolExecRequest, ToolExecResponse, RemoteToolExecutor, HttpRemoteToolExecutorOptions } from './remote-tools.js'
export { executeHostTool } from './execute-host-tool.js'
export type { ExecuteHostToolOptions } from './execute-host-tool.js'
export type { BridgeableTool, BridgeToolContext, JsonSchemaObject } from './tool-call.js'
export { ToolBridgeError } from './errors.js'
export type { ToolBridgeErrorReason } from './errors.js'
