/**
 * Assembles the `SandboxHandle` of one Daytona sandbox from its parts (fs,
 * process, ports, env, git over exec). It holds no state of its own: the
 * shared {@link SandboxState} does, and the provider lends destroy, snapshot
 * and fork, which need the SDK client and the config.
 */
import { createExecBackedGit } from '@tanstack/ai-sandbox'
import type { SandboxCapabilities, SandboxHandle, SandboxSnapshotRef } from '@tanstack/ai-sandbox'
import { envFileText, envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { parseConfig, PROVIDER_NAME } from './errors.js'
import { createDaytonaFs } from './fs.js'
import { LABEL } from './labels.js'
import { createDaytonaPorts } from './ports.js'
import { createDaytonaProcess } from './process.js'
import type { SandboxState } from './state.js'

/** What the provider lends a handle. */
export interface HandleParts {
  capabilities: SandboxCapabilities
  destroy: () => Promise<void>
  snapshot: (label?: string) => Promise<SandboxSnapshotRef>
  fork: () => Promise<SandboxHandle>
}

/** Build a handle over `state`. */
export function createDaytonaHandle(state: SandboxState, parts: HandleParts): SandboxHandle {
  const process = createDaytonaProcess(state)
  return {
    id: state.id,
    provider: PROVIDER_NAME,
    capabilities: parts.capabilities,
    workspaceRoot: state.workspaceRoot,
    fs: createDaytonaFs(state),
    process,
    git: createExecBackedGit(process, { provider: PROVIDER_NAME, workspaceRoot: state.workspaceRoot }),
    ports: createDaytonaPorts(state, parts.capabilities.ports),
    env: { set: (vars) => setEnv(state, vars) },
    snapshot: parts.snapshot,
    fork: parts.fork,
    // The sandbox runs in Daytona's cloud: nothing on this host is reachable from it by a host address.
    hostAccess: async () => undefined,
    ...(state.labels[LABEL.journalSecret] ? { journalSecret: state.labels[LABEL.journalSecret] } : {}),
    destroy: parts.destroy,
  }
}

/**
 * Write sandbox-wide variables: one new file in the sandbox's `env.d`
 * folder, which every later job sources (later files win). Calls apply in
 * call order. Nothing goes to Daytona's API, so no value is stored there.
 */
export async function writeSandboxEnv(state: SandboxState, vars: Record<string, string>, what: string): Promise<void> {
  if (Object.keys(vars).length === 0) return
  const name = `${String(Date.now()).padStart(13, '0')}-${String(state.envSeq++).padStart(6, '0')}`
  await state.toolbox.upload([{ path: `${state.paths.envDir}/${name}`, data: envFileText(vars) }], what)
}

function setEnv(state: SandboxState, vars: Record<string, string>): Promise<void> {
  state.assertLive('env.set')
  const parsed = parseConfig(envVarsSchema, vars, 'env.set')
  const write = state.envWrites.then(() => writeSandboxEnv(state, parsed, 'env.set'))
  state.envWrites = write.catch(() => undefined)
  return write
}
