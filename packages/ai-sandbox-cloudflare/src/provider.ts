/**
 * `cloudflareSandbox()`: the public factory and the provider class behind it.
 * A sandbox is a `Sandbox` Durable Object of the app's binding, named by
 * `handle.id`; its container starts on the first call. Nothing on Cloudflare
 * tells a new sandbox from an existing one, so `create` writes a marker into
 * the container and `resume` succeeds only where it finds one.
 * Invariant: it never leaves a running container behind when create fails,
 * nor when a resume finds no sandbox (the SDK started an empty container to look).
 * Design notes: docs/design/cloudflare.md (section 11)
 */
import { z } from 'zod'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import type { SandboxCapabilities, SandboxCreateInput, SandboxDestroyInput, SandboxHandle, SandboxProvider, SandboxResumeInput } from '@tanstack/ai-sandbox'
import { envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { cloudflareCapabilities } from './capabilities.js'
import { fingerprintOf, resolveConfig } from './config.js'
import type { CloudflareSandboxConfig, ResolvedCloudflareConfig } from './config.js'
import { operationError, parseConfig, PROVIDER_NAME } from './errors.js'
import { createCloudflareHandle, writeSandboxEnv } from './handle.js'
import { markerLine } from './sandbox-files.js'
import { prepareSandbox } from './state.js'
import type { SandboxState } from './state.js'
import { Toolbox } from './toolbox.js'

const createInputSchema = z.object({
  key: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  env: envVarsSchema.optional(),
  network: z.literal('blocked', { message: "expected 'blocked' (or leave it out)" }).optional(),
})

/** What a sandbox id may look like: the SDK's rule (1-63 characters, no leading or trailing '-', not reserved), lower-case. */
const SANDBOX_ID = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/
const RESERVED = new Set(['www', 'api', 'admin', 'root', 'system', 'cloudflare', 'workers'])

/**
 * Create the Cloudflare sandbox provider, for code running inside a Worker
 * or Durable Object: every sandbox is a `Sandbox` Durable Object of
 * `@cloudflare/sandbox` with its container, driven over the SDK's `http`
 * transport. Its workspace is `/workspace` (or `workdir`).
 *
 * Secrets never reach the Durable Object's memory or a command line:
 * create-time `env` (the config's and each create's) and `env.set` go to
 * files inside the container that every command sources.
 *
 * @param config - `binding` (required: `env.Sandbox`), `workdir` (default
 *   `/workspace`), `previewHostname` (enables `ports`), `sleepAfter` (SDK
 *   default 10 minutes), `keepAlive` (default false), `env`, `killGraceMs`
 *   (default 2000), `maxExecOutputBytes` (default 16 MiB), `maxReadBytes`
 *   (default 32 MiB), `timeoutMs` (the container start bound, default 60000).
 * @returns A {@link SandboxProvider} named `cloudflare`.
 * @throws SandboxConfigError naming the field (`cloudflareSandbox.binding` when the binding is missing or is not a Durable Object namespace).
 *   Container problems surface on the calls as SandboxOperationError
 *   `unreachable` or `create-failed`; a container restarted empty as `not-found`.
 * @example
 * ```ts
 * import { cloudflareSandbox } from '@tanstack/ai-sandbox-cloudflare'
 *
 * export default {
 *   async fetch(request: Request, env: { Sandbox: DurableObjectNamespace }) {
 *     const provider = cloudflareSandbox({ binding: env.Sandbox })
 *     const handle = await provider.create()
 *     try {
 *       return new Response((await handle.process.exec('uname -a')).stdout)
 *     } finally {
 *       await handle.destroy()
 *     }
 *   },
 * }
 * ```
 */
export function cloudflareSandbox(config: CloudflareSandboxConfig): SandboxProvider {
  return new CloudflareProvider(resolveConfig(config))
}

class CloudflareProvider implements SandboxProvider {
  readonly name = PROVIDER_NAME
  readonly fingerprint: string
  private readonly flags: SandboxCapabilities
  /** Sandboxes this instance created or resumed, by id. */
  readonly #live = new Map<string, Set<SandboxState>>()
  // ECMAScript private: logging the provider shows neither the binding nor the env.
  readonly #config: ResolvedCloudflareConfig

  constructor(config: ResolvedCloudflareConfig) {
    this.#config = config
    this.fingerprint = fingerprintOf(config)
    this.flags = cloudflareCapabilities(config.previewHostname !== undefined)
  }

  capabilities = (): SandboxCapabilities => this.flags

  create = async (input: SandboxCreateInput = {}): Promise<SandboxHandle> => {
    throwIfAborted(input.signal, 'provider.create()')
    const { env = {} } = parseConfig(createInputSchema, { key: input.key, labels: input.labels, env: input.env, network: input.network }, 'create')
    const id = `tsb-${randomHex(12)}`
    const marker = markerLine(id, randomHex(16))
    try {
      const state = await prepareSandbox(id, 'create', marker, this.#config, 'provider.create()')
      if (!state) throw operationError('create-failed', `provider.create(): sandbox ${id} could not be prepared.`)
      await writeSandboxEnv(state, { ...this.#config.env, ...env }, 'provider.create()')
      throwIfAborted(input.signal, 'provider.create()')
      return this.handleFor(state)
    } catch (error) {
      await new Toolbox(id, this.#config).destroy('provider.create() cleanup').catch(() => undefined)
      throw error
    }
  }

  resume = async (input: SandboxResumeInput): Promise<SandboxHandle | null> => {
    if (typeof input?.id !== 'string' || input.id === '') throw new SandboxConfigError('resume.id', 'Invalid option resume.id: expected the id of a sandbox (handle.id).')
    throwIfAborted(input.signal, 'provider.resume()')
    const id = input.id.toLowerCase()
    if (!SANDBOX_ID.test(id) || RESERVED.has(id)) return null
    const state = await prepareSandbox(id, 'resume', '', this.#config, 'provider.resume()')
    if (!state) {
      // The SDK started a container to look, and found it empty: stop it again.
      await new Toolbox(id, this.#config).destroy('provider.resume()')
      return null
    }
    throwIfAborted(input.signal, 'provider.resume()')
    return this.handleFor(state)
  }

  destroy = async (input: SandboxDestroyInput): Promise<void> => {
    if (typeof input?.id !== 'string' || input.id === '') throw new SandboxConfigError('destroy.id', 'Invalid option destroy.id: expected the id of a sandbox (handle.id).')
    const id = input.id.toLowerCase()
    if (!SANDBOX_ID.test(id) || RESERVED.has(id)) return
    for (const state of this.#live.get(id) ?? []) state.destroyed = true
    this.#live.delete(id)
    await new Toolbox(id, this.#config).destroy('provider.destroy()')
  }

  private handleFor(state: SandboxState): SandboxHandle {
    const states = this.#live.get(state.id) ?? new Set()
    states.add(state)
    this.#live.set(state.id, states)
    return createCloudflareHandle(state, { capabilities: this.flags, destroy: () => this.destroyState(state) })
  }

  /** Destroy the container; every handle of this instance on the sandbox refuses further use (the id would start a new, empty one). */
  private async destroyState(state: SandboxState): Promise<void> {
    if (state.destroyed) return
    for (const other of this.#live.get(state.id) ?? []) other.destroyed = true
    this.#live.delete(state.id)
    await state.toolbox.destroy('handle.destroy()')
  }
}

/** `bytes` random bytes as lower-case hex (Web Crypto, available in Workers and Node). */
function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (byte) => byte.toString(16).padStart(2, '0')).join('')
}

function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw operationError('aborted', `${what} was aborted by the caller's AbortSignal; no sandbox was left behind.`, signal.reason)
}
