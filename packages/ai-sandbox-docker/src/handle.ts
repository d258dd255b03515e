/**
 * Assembles the `SandboxHandle` of one Docker sandbox from its parts (fs,
 * process, ports, env, host access, git over exec, snapshot and fork). It
 * holds no state of its own: the shared {@link SandboxState} does, and the
 * provider supplies destroy, snapshot and fork, which need the engine client
 * and the config.
 */
import { createExecBackedGit } from '@tanstack/ai-sandbox'
import type { SandboxCapabilities, SandboxHandle, SandboxSnapshotRef } from '@tanstack/ai-sandbox'
import { PROVIDER_NAME } from './errors.js'
import { createDockerFs } from './fs.js'
import { createDockerHostAccess } from './host-access.js'
import { LABEL } from './labels.js'
import { createDockerPorts } from './ports.js'
import { createDockerProcess } from './process.js'
import { setEnv } from './state.js'
import type { SandboxState } from './state.js'

/** What the provider lends a handle. */
export interface HandleParts {
  capabilities: SandboxCapabilities
  network: string
  destroy: () => Promise<void>
  snapshot: (label?: string) => Promise<SandboxSnapshotRef>
  fork: () => Promise<SandboxHandle>
}

/** Build a handle over `state`. */
export function createDockerHandle(state: SandboxState, parts: HandleParts): SandboxHandle {
  const process = createDockerProcess(state)
  return {
    id: state.id,
    provider: PROVIDER_NAME,
    capabilities: parts.capabilities,
    workspaceRoot: state.workspaceRoot,
    fs: createDockerFs(state),
    process,
    git: createExecBackedGit(process, { provider: PROVIDER_NAME, workspaceRoot: state.workspaceRoot }),
    ports: createDockerPorts(state, parts.network),
    env: { set: (vars) => setEnv(state, vars) },
    snapshot: parts.snapshot,
    fork: parts.fork,
    hostAccess: createDockerHostAccess(state, parts.network),
    // Absent on a container created before the label existed: its journals trust their own header.
    ...(state.labels[LABEL.journalSecret] ? { journalSecret: state.labels[LABEL.journalSecret] } : {}),
    destroy: parts.destroy,
  }
}
