/**
 * Assembles the `SandboxHandle` of one Cloudflare sandbox from its parts (fs,
 * process, ports, env, git over exec). It holds no state of its own: the
 * shared {@link SandboxState} does, and the provider lends destroy.
 * Snapshots and fork are present but throw `UnsupportedCapabilityError`.
 */
import { createExecBackedGit, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import type { SandboxCapabilities, SandboxHandle } from '@tanstack/ai-sandbox'
import { envFileText, envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { parseConfig, PROVIDER_NAME } from './errors.js'
import { createCloudflareFs } from './fs.js'
import { toBase64 } from './job.js'
import { createCloudflarePorts } from './ports.js'
import { createCloudflareProcess } from './process.js'
import type { SandboxState } from './state.js'

/** Build a handle over `state`. */
export function createCloudflareHandle(state: SandboxState, parts: { capabilities: SandboxCapabilities; destroy: () => Promise<void> }): SandboxHandle {
  const process = createCloudflareProcess(state)
  const unsupported = (capability: 'snapshots' | 'fork', method: string) => () =>
    Promise.reject(new UnsupportedCapabilityError({ provider: PROVIDER_NAME, capability, method, hint: '@cloudflare/sandbox has no snapshot or copy of a running container; use the Docker or Daytona provider for that.' }))
  return {
    id: state.id,
    provider: PROVIDER_NAME,
    capabilities: parts.capabilities,
    workspaceRoot: state.workspaceRoot,
    fs: createCloudflareFs(state),
    process,
    git: createExecBackedGit(process, { provider: PROVIDER_NAME, workspaceRoot: state.workspaceRoot }),
    ports: createCloudflarePorts(state),
    env: { set: (vars) => setEnv(state, vars) },
    snapshot: unsupported('snapshots', 'snapshot'),
    fork: unsupported('fork', 'fork'),
    // The container runs on Cloudflare: nothing on the app's host is reachable from it by a host address.
    hostAccess: async () => undefined,
    destroy: parts.destroy,
  }
}

/**
 * Write sandbox-wide variables: one new file in the container's `env.d`
 * folder, which every later job sources (later files win). Calls apply in
 * call order. Not `setEnvVars`: that keeps values in the Durable Object's
 * memory, which is lost whenever the object is constructed again.
 */
export async function writeSandboxEnv(state: SandboxState, vars: Record<string, string>, what: string): Promise<void> {
  if (Object.keys(vars).length === 0) return
  const name = `${String(Date.now()).padStart(13, '0')}-${String(state.envSeq++).padStart(6, '0')}`
  await state.toolbox.write(`${state.paths.envDir}/${name}`, toBase64(envFileText(vars)), what, 'exec-failed')
}

function setEnv(state: SandboxState, vars: Record<string, string>): Promise<void> {
  state.assertLive('env.set')
  const parsed = parseConfig(envVarsSchema, vars, 'env.set')
  const write = state.envWrites.then(() => writeSandboxEnv(state, parsed, 'env.set'))
  state.envWrites = write.catch(() => undefined)
  return write
}
