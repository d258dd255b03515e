/**
 * The capability flags of the Daytona provider. Every `true` names the test
 * that proves it against the Daytona stand-in (tests/conformance.test.ts runs
 * the shared provider kit; the rest are in tests/). Only `ports` depends on
 * the configuration: a sandbox with its network blocked has no preview.
 */
import type { SandboxCapabilities } from '@tanstack/ai-sandbox'

/** What `daytonaSandbox()` supports. Frozen. */
export const DAYTONA_CAPABILITIES: SandboxCapabilities = Object.freeze({
  // The shared confined fs script over session commands, bytes through the files API: conformance "fs" group.
  fs: true,
  // A job script in a pooled session, stdout and stderr apart: conformance "exec" group.
  exec: true,
  // env.set files inside the sandbox, sourced by every job: conformance "env" group; provider.test.ts "env.set survives a fresh provider".
  env: true,
  // Signed preview URLs: conformance "the host reaches a server inside the sandbox".
  ports: true,
  // One session per spawned job, logs over the follow WebSocket: conformance "spawn" group.
  backgroundProcesses: true,
  // Daytona's session input has no end-of-input, so a process reading stdin to EOF would hang: conformance "writableStdin is false".
  writableStdin: false,
  // TERM then KILL to the job's process group from another session (never a client-side stop): conformance "kill ends the whole job".
  killableProcesses: true,
  // sandbox.createSnapshot, then create({ snapshot }): conformance "snapshots".
  snapshots: true,
  // networkBlockAll at create: provider.test.ts "networkBlockAll leaves no route out".
  networkPolicy: true,
  // Daytona keeps a stopped or archived sandbox's disk; resume starts it: provider.test.ts "resume starts a stopped sandbox".
  durableFilesystem: true,
  // sandbox.fork: conformance "fork gives an independent copy".
  fork: true,
  // Its own container: conformance "isolated".
  isolated: true,
})

/** The flags for a provider whose sandboxes have their network blocked (no preview proxy either). */
export function daytonaCapabilities(networkBlockAll: boolean): SandboxCapabilities {
  return networkBlockAll ? NO_NETWORK_CAPABILITIES : DAYTONA_CAPABILITIES
}

const NO_NETWORK_CAPABILITIES: SandboxCapabilities = Object.freeze({ ...DAYTONA_CAPABILITIES, ports: false })
