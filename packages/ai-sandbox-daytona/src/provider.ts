/**
 * `daytonaSandbox()`: the public factory and the provider class behind it.
 * Owns the SDK client and the live state of every sandbox this instance
 * touched; one Daytona sandbox per handle, `handle.id` is its id.
 * Invariant: it never leaves a sandbox behind when create fails or aborts.
 * Design notes: docs/design/daytona.md (section 11)
 */
import { randomBytes } from 'node:crypto'
import type { Daytona, Sandbox } from '@daytona/sdk'
import { z } from 'zod'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import type { SandboxCapabilities, SandboxCreateInput, SandboxDestroyInput, SandboxHandle, SandboxProvider, SandboxRestoreInput, SandboxResumeInput, SandboxSnapshotRef } from '@tanstack/ai-sandbox'
import { envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { daytonaCapabilities } from './capabilities.js'
import { daytonaClient, fingerprintOf, resolveConfig } from './config.js'
import type { DaytonaSandboxConfig, ResolvedDaytonaConfig } from './config.js'
import { apiError, isNotFound, operationError, parseConfig, PROVIDER_NAME, statusOf } from './errors.js'
import { createDaytonaHandle, writeSandboxEnv } from './handle.js'
import { isProviderLabel, LABEL } from './labels.js'
import { prepareSandbox } from './state.js'
import type { SandboxState } from './state.js'

const createInputSchema = z.object({
  key: z.string().optional(),
  labels: z
    .record(z.string().min(1), z.string())
    .refine((labels) => !Object.keys(labels).some(isProviderLabel), `label keys ${LABEL.sandbox}, ${LABEL.origin} and ${LABEL.journalSecret} are set by the provider; use other keys`)
    .optional(),
  env: envVarsSchema.optional(),
  network: z.literal('blocked', { message: "expected 'blocked' (or leave it out)" }).optional(),
})

/** States from which `start` brings a sandbox back. */
const STARTABLE = new Set(['stopped', 'archived', 'stopping', 'archiving', 'starting', 'restoring', 'pulling_snapshot', 'creating', 'paused', 'pausing', 'resuming'])
/** States of a sandbox that is gone for good. */
const GONE = new Set(['destroyed', 'destroying'])

/**
 * Create the Daytona sandbox provider: every sandbox is a Daytona sandbox
 * made through the official `@daytona/sdk`, its workspace at
 * `/home/daytona/workspace` (or `workdir`), onto which `/workspace/...`
 * paths map. Source: spec 000 "Providers".
 *
 * Secrets never reach Daytona's API: create-time `env` (the config's and
 * each create's) is written into a 0700 folder inside the sandbox and
 * sourced by every command, never sent as the sandbox's `env` (which
 * Daytona stores and returns) nor put in a command line (which a session's
 * history keeps).
 *
 * @param config - `apiKey` (default `DAYTONA_API_KEY`), `apiUrl` (default
 *   `DAYTONA_API_URL`, else Daytona's cloud), `target`, `snapshot`,
 *   `autoStopInterval` (minutes), `ephemeral`, `workdir`, `networkBlockAll`,
 *   `networkAllowList`, `env`, `labels`, `killGraceMs` (default 2000),
 *   `maxExecOutputBytes` and `maxReadBytes` (default 64 MiB), `timeoutMs`
 *   (create/start/snapshot/fork bound, default 300000).
 * @returns A {@link SandboxProvider} named `daytona` with snapshots, fork and resume.
 * @throws SandboxConfigError naming the field (`daytonaSandbox.apiKey` when no key is given or set).
 *   Service problems surface on the calls as SandboxOperationError
 *   `auth-failed`, `rate-limited`, `unreachable` or `create-failed`.
 * @example
 * ```ts
 * const provider = daytonaSandbox({ snapshot: 'my-node-snapshot', autoStopInterval: 30 })
 * const handle = await provider.create()
 * const { stdout } = await handle.process.exec('node --version')
 * await handle.destroy()
 * ```
 */
export function daytonaSandbox(config: DaytonaSandboxConfig = {}): SandboxProvider {
  const resolved = resolveConfig(config)
  return new DaytonaProvider(resolved, daytonaClient(resolved))
}

class DaytonaProvider implements SandboxProvider {
  readonly name = PROVIDER_NAME
  readonly fingerprint: string
  private readonly flags: SandboxCapabilities
  /** Sandboxes this instance created or resumed, by id. */
  readonly #live = new Map<string, SandboxState>()

  // ECMAScript private fields: logging or serialising the provider shows neither the key nor the env.
  readonly #config: ResolvedDaytonaConfig
  readonly #client: Daytona

  constructor(config: ResolvedDaytonaConfig, client: Daytona) {
    this.#config = config
    this.#client = client
    this.fingerprint = fingerprintOf(config)
    this.flags = daytonaCapabilities(config.networkBlockAll)
  }

  capabilities = (): SandboxCapabilities => this.flags

  create = async (input: SandboxCreateInput = {}): Promise<SandboxHandle> => {
    throwIfAborted(input.signal, 'provider.create()')
    const { key, labels = {}, env = {}, network } = parseConfig(createInputSchema, { key: input.key, labels: input.labels, env: input.env, network: input.network }, 'create')
    return this.launch('create', this.#config.snapshot, { key, labels, env, origin: 'create', blocked: network === 'blocked' }, input.signal)
  }

  restoreSnapshot = async (input: SandboxRestoreInput): Promise<SandboxHandle> => {
    throwIfAborted(input.signal, 'provider.restoreSnapshot()')
    const { key, labels = {}, env = {}, network } = parseConfig(createInputSchema, { key: input.key, labels: input.labels, env: input.env, network: input.network }, 'restoreSnapshot')
    if (typeof input.snapshotId !== 'string' || input.snapshotId === '') {
      throw new SandboxConfigError('restoreSnapshot.snapshotId', 'Invalid option restoreSnapshot.snapshotId: expected the snapshotId handle.snapshot() returned.')
    }
    return this.launch('restoreSnapshot', input.snapshotId, { key, labels, env, origin: `snapshot:${input.snapshotId}`, blocked: network === 'blocked' }, input.signal)
  }

  resume = async (input: SandboxResumeInput): Promise<SandboxHandle | null> => {
    if (typeof input?.id !== 'string' || input.id === '') throw new SandboxConfigError('resume.id', 'Invalid option resume.id: expected the id of a sandbox (handle.id).')
    throwIfAborted(input.signal, 'provider.resume()')
    let sandbox: Sandbox
    try {
      sandbox = await this.#client.get(input.id)
    } catch (error) {
      if (isNotFound(error)) return null
      throw apiError('create-failed', 'provider.resume()', error, input.id)
    }
    const state = String(sandbox.state ?? '')
    if (GONE.has(state)) return null
    if (state !== 'started') {
      if (!STARTABLE.has(state) && state !== 'error') {
        throw operationError('create-failed', `provider.resume(): sandbox ${sandbox.id} is ${state} and cannot be started. Destroy it and create a new one.`)
      }
      try {
        await sandbox.start(this.#config.timeoutMs / 1000)
      } catch (error) {
        if (isNotFound(error)) return null
        throw apiError('create-failed', `provider.resume(): starting ${state} sandbox`, error, sandbox.id)
      }
    }
    throwIfAborted(input.signal, 'provider.resume()')
    const live = await prepareSandbox(sandbox, this.#config, 'provider.resume()')
    return this.handleFor(live)
  }

  destroy = async (input: SandboxDestroyInput): Promise<void> => {
    if (typeof input?.id !== 'string' || input.id === '') throw new SandboxConfigError('destroy.id', 'Invalid option destroy.id: expected the id of a sandbox (handle.id).')
    const live = this.#live.get(input.id)
    if (live) return this.destroyState(live)
    await this.deleteById(input.id)
  }

  deleteSnapshot = async ({ snapshotId }: { snapshotId: string }): Promise<void> => {
    if (typeof snapshotId !== 'string' || snapshotId === '') throw new SandboxConfigError('deleteSnapshot.snapshotId', 'Invalid option deleteSnapshot.snapshotId: expected the snapshotId handle.snapshot() returned.')
    try {
      const snapshot = await this.#client.snapshot.get(snapshotId)
      await this.#client.snapshot.delete(snapshot)
    } catch (error) {
      if (isNotFound(error)) return
      throw apiError('exec-failed', `provider.deleteSnapshot(${snapshotId})`, error)
    }
  }

  /** Create a sandbox from `snapshot` (the config's or a handle.snapshot()'s), prepare it and write its env. */
  private async launch(what: 'create' | 'restoreSnapshot', snapshot: string | undefined, input: { key: string | undefined; labels: Record<string, string>; env: Record<string, string>; origin: string; blocked?: boolean }, signal: AbortSignal | undefined): Promise<SandboxHandle> {
    const labels: Record<string, string> = {
      ...this.#config.labels,
      ...input.labels,
      [LABEL.sandbox]: 'true',
      [LABEL.origin]: input.origin,
      [LABEL.journalSecret]: randomBytes(32).toString('hex'),
      ...(input.key ? { [LABEL.key]: input.key } : {}),
    }
    let sandbox: Sandbox
    try {
      sandbox = await this.#client.create(
        {
          ...(snapshot ? { snapshot } : {}),
          labels,
          ...(this.#config.autoStopInterval !== undefined ? { autoStopInterval: this.#config.autoStopInterval } : {}),
          ...(this.#config.ephemeral ? { ephemeral: true } : {}),
          ...(this.#config.networkBlockAll || input.blocked ? { networkBlockAll: true } : {}),
          ...(this.#config.networkAllowList ? { networkAllowList: this.#config.networkAllowList.join(',') } : {}),
        },
        { timeout: this.#config.timeoutMs / 1000 },
      )
    } catch (error) {
      throw this.createError(what, snapshot, error)
    }
    try {
      throwIfAborted(signal, `provider.${what}()`)
      const state = await prepareSandbox(sandbox, this.#config, `provider.${what}()`)
      await writeSandboxEnv(state, { ...this.#config.env, ...input.env }, `provider.${what}()`)
      throwIfAborted(signal, `provider.${what}()`)
      return this.handleFor(state)
    } catch (error) {
      await sandbox.delete().catch(() => undefined)
      throw error
    }
  }

  /**
   * A create failure, with the config field to fix when Daytona named one.
   * Daytona's server refuses a snapshot it cannot use (unknown, not active,
   * not in the region) with a 400 naming it (`Snapshot <name> not found. Did
   * you add it through the Daytona Dashboard?`); the stand-in answers an
   * unknown one with 404. Both name the snapshot, which is what is matched.
   */
  private createError(what: string, snapshot: string | undefined, error: unknown): Error {
    const status = statusOf(error)
    const said = error instanceof Error ? error.message : String(error)
    if ((status === 400 || status === 404) && snapshot && /snapshot/i.test(said) && said.includes(snapshot)) {
      const field = what === 'create' ? 'daytonaSandbox.snapshot' : 'restoreSnapshot.snapshotId'
      return new SandboxConfigError(field, `Invalid option ${field}: Daytona cannot create a sandbox from snapshot ${JSON.stringify(snapshot)} (HTTP ${status}: ${said}). Check the name and that it is active in the Daytona dashboard (Snapshots), or leave it out for the default.`, { cause: error })
    }
    if (status === 400 && this.#config.target && said.includes(this.#config.target)) {
      return new SandboxConfigError('daytonaSandbox.target', `Invalid option daytonaSandbox.target: Daytona refused target ${JSON.stringify(this.#config.target)} (${said}). Use a region your organization has (e.g. us or eu), or leave it out.`, { cause: error })
    }
    return apiError('create-failed', `provider.${what}()`, error)
  }

  private handleFor(state: SandboxState): SandboxHandle {
    this.#live.set(state.id, state)
    return createDaytonaHandle(state, {
      // A sandbox created with its network blocked (config, or a policy that denies network) has no ports.
      capabilities: state.sandbox.networkBlockAll ? daytonaCapabilities(true) : this.flags,
      destroy: () => this.destroyState(state),
      snapshot: (label) => this.snapshot(state, label),
      fork: () => this.fork(state),
    })
  }

  private async destroyState(state: SandboxState): Promise<void> {
    if (state.destroyed) return
    state.destroyed = true
    this.#live.delete(state.id)
    await state.toolbox.drain().catch(() => undefined)
    try {
      await state.sandbox.delete()
    } catch (error) {
      if (!isNotFound(error) && !alreadyGoing(error)) {
        state.destroyed = false
        this.#live.set(state.id, state)
        throw apiError('exec-failed', 'handle.destroy()', error, state.id)
      }
    }
  }

  private async deleteById(id: string): Promise<void> {
    try {
      const sandbox = await this.#client.get(id)
      await sandbox.delete()
    } catch (error) {
      if (isNotFound(error) || alreadyGoing(error)) return
      throw apiError('exec-failed', 'provider.destroy()', error, id)
    }
  }

  private async snapshot(state: SandboxState, label: string | undefined): Promise<SandboxSnapshotRef> {
    state.assertLive('snapshot')
    const name = `tanstack-${state.id.slice(0, 12)}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
    await state.toolbox.drain()
    try {
      await state.sandbox.createSnapshot(name, this.#config.timeoutMs / 1000)
    } catch (error) {
      throw apiError('exec-failed', 'handle.snapshot()', error, state.id)
    }
    return { snapshotId: name, createdAt: Date.now(), ...(label !== undefined ? { label } : {}) }
  }

  private async fork(state: SandboxState): Promise<SandboxHandle> {
    state.assertLive('fork')
    await state.toolbox.drain()
    let forked: Sandbox
    try {
      forked = await state.sandbox.fork({}, this.#config.timeoutMs / 1000)
    } catch (error) {
      // Daytona forks VM sandboxes only; a container sandbox answers 422: copy it through a snapshot instead.
      if (statusOf(error) !== 422) throw apiError('create-failed', 'handle.fork()', error, state.id)
      return this.forkThroughSnapshot(state)
    }
    try {
      // A fork must not share its parent's journal secret.
      await forked.setLabels({ ...(forked.labels ?? {}), [LABEL.origin]: `fork:${state.id}`, [LABEL.journalSecret]: randomBytes(32).toString('hex') })
      return this.handleFor(await prepareSandbox(forked, this.#config, 'handle.fork()'))
    } catch (error) {
      await forked.delete().catch(() => undefined)
      throw apiError('create-failed', 'handle.fork()', error, forked.id)
    }
  }

  /**
   * A fork where Daytona has none: a snapshot of the sandbox, a new sandbox
   * from it (the same env), then the snapshot deleted (the new sandbox keeps
   * its filesystem).
   */
  private async forkThroughSnapshot(state: SandboxState): Promise<SandboxHandle> {
    const { snapshotId } = await this.snapshot(state, undefined)
    try {
      return await this.launch('create', snapshotId, { key: undefined, labels: {}, env: {}, origin: `fork:${state.id}`, blocked: state.sandbox.networkBlockAll === true }, undefined)
    } finally {
      await this.deleteSnapshot({ snapshotId }).catch(() => undefined)
    }
  }
}

/** True when Daytona says the sandbox is already being deleted (a second delete, or one from elsewhere). */
function alreadyGoing(error: unknown): boolean {
  return /destroy|removal .*in progress/i.test(error instanceof Error ? error.message : String(error))
}

function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw operationError('aborted', `${what} was aborted by the caller's AbortSignal; no sandbox was left behind.`, signal.reason)
}
