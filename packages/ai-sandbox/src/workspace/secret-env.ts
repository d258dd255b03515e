/**
 * Secret environment as an in-memory overlay on a handle: every `exec` and
 * `spawn` through the returned handle gets the workspace's secrets merged
 * into its environment, resolved at call time. Nothing is written through
 * `env.set`, because providers may persist that environment (a file, a
 * container config) and secret values must never be persisted by us.
 */
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxProcess } from '../contracts/process.js'

/**
 * Wrap `handle` so its processes see `secretEnv()` (per-call `env` wins).
 * @param secretEnv - Called on every exec/spawn; returns `NAME → value`.
 * @returns A handle that shares everything else with `handle`.
 */
export function withSecretEnv(handle: SandboxHandle, secretEnv: () => Record<string, string>): SandboxHandle {
  const env = (extra?: Record<string, string>) => ({ ...secretEnv(), ...(extra ?? {}) })
  const process: SandboxProcess = {
    exec: (command, options = {}) => handle.process.exec(command, { ...options, env: env(options.env) }),
    spawn: (command, options = {}) => handle.process.spawn(command, { ...options, env: env(options.env) }),
  }
  return Object.freeze({ ...handle, process })
}
