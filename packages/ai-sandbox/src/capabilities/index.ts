// Capabilities: every capability token the sandbox layer owns, with its get and
// provide accessors. withSandbox, harness adapters and platform middleware meet
// here: one provides a value for a run, another reads it. Only tokens live
// here; the values they carry are typed by contracts/, workspace/ and durability/.
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
  SandboxInstanceStoreCapability,
  getSandboxInstanceStore,
  provideSandboxInstanceStore,
  SandboxPolicyCapability,
  getSandboxPolicy,
  provideSandboxPolicy,
  ProjectionCapability,
  getProjection,
  provideProjection,
  SandboxDurabilityCapability,
  getSandboxDurability,
  provideSandboxDurability,
  SandboxTranscriptCapability,
  getSandboxTranscript,
  provideSandboxTranscript,
} from './tokens.js'
export type { SandboxTranscriptSignal, SandboxTranscriptOutcome } from './tokens.js'
