/**
 * Assembles the `SandboxHandle` of one local-process sandbox from its parts
 * (fs, process, env, ports, host access, git over exec). It holds no state of
 * its own: the shared {@link SandboxState} does. `snapshot` and `fork` exist
 * but throw `UnsupportedCapabilityError` (capabilities `snapshots` and `fork`
 * are false); core decides by the flags, never by their presence.
 */
import { SandboxConfigError, createExecBackedGit } from '@tanstack/ai-sandbox'
import type { SandboxHandle, SandboxPortConnection } from '@tanstack/ai-sandbox'
import { LOCAL_PROCESS_CAPABILITIES } from './capabilities.js'
import { join } from 'node:path'
import { PROVIDER_NAME, unsupportedMethod } from './errors.js'
import { createLocalFs } from './fs.js'
import { createLocalProcess } from './process.js'
import { setEnv } from './sandbox-state.js'
import type { SandboxState } from './sandbox-state.js'

/**
 * Build a handle over `state`.
 * @param destroy - The provider's destroy for this id (kills groups, removes the directory).
 */
export function createLocalHandle(state: SandboxState, destroy: () => Promise<void>): SandboxHandle {
  const process = createLocalProcess(state)
  return {
    id: state.id,
    provider: PROVIDER_NAME,
    capabilities: LOCAL_PROCESS_CAPABILITIES,
    workspaceRoot: state.workspaceRoot,
    // Not the host's shared /tmp/tanstack-runs: a folder in the sandbox's own, under the private root.
    journalDir: join(state.dir, 'runs'),
    fs: createLocalFs(state),
    process,
    git: createExecBackedGit(process, { provider: PROVIDER_NAME, workspaceRoot: state.workspaceRoot }),
    ports: { connect: async (port) => connectPort(port) },
    env: { set: (vars) => setEnv(state, vars) },
    // Local processes share the host's network: a host server on loopback is reachable as is.
    hostAccess: async () => ({ hostname: '127.0.0.1', listenAddress: '127.0.0.1' }),
    snapshot: unsupportedMethod('snapshots', 'snapshot'),
    fork: unsupportedMethod('fork', 'fork'),
    destroy,
  }
}

/**
 * The URL of a port on the host loopback: local processes share the host network.
 * @throws SandboxConfigError `ports.connect.port` unless `port` is an integer in 1-65535.
 */
export function connectPort(port: number): SandboxPortConnection {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new SandboxConfigError('ports.connect.port', `Invalid option ports.connect.port: expected an integer from 1 to 65535, got ${String(port)}.`)
  }
  return { url: `http://127.0.0.1:${port}`, hostname: '127.0.0.1', port }
}
