// Bridge: the tool-bridge provisioning contract.
export type { ToolBridgeProvisioner, ProvisionedToolBridge } from './provisioner.js'
