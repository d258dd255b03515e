/**
 * The live state of one Daytona sandbox shared by every part of its handle,
 * and the preparation of a new or resumed sandbox (folders, scripts, the
 * physical workspace root). Invariant: once `destroyed` is set, every
 * method throws `destroyed` before calling Daytona.
 */
import type { Sandbox } from '@daytona/sdk'
import { destroyedError, operationError } from './errors.js'
import { prepareCommand, statePaths } from './sandbox-files.js'
import type { StatePaths } from './sandbox-files.js'
import type { ResolvedDaytonaConfig } from './config.js'
import { Toolbox } from './toolbox.js'

/** Live state of one sandbox. */
export interface SandboxState {
  readonly id: string
  readonly sandbox: Sandbox
  readonly toolbox: Toolbox
  /** The workspace as processes see it (`handle.workspaceRoot`). */
  readonly workspaceRoot: string
  /** The same folder with symlinks resolved; confinement compares against it. */
  readonly physicalRoot: string
  /** The provider's own folder in the sandbox (scripts, env files, job files). */
  readonly paths: StatePaths
  readonly labels: Readonly<Record<string, string>>
  readonly config: ResolvedDaytonaConfig
  /** Orders `env.set` calls. */
  envWrites: Promise<void>
  /** Counts `env.set` files written by this instance (their names sort in call order). */
  envSeq: number
  destroyed: boolean
  /** Install the provider's scripts again (something removed them); concurrent calls share one install. */
  reinstall: (what: string) => Promise<void>
  /** @throws SandboxOperationError `destroyed` once the sandbox is gone. */
  assertLive: (method: string) => void
}

/**
 * Prepare a started sandbox for the provider and describe it: the folders
 * and the workspace exist, the scripts are installed (again on a resume), in
 * one command.
 * @throws SandboxError (`create-failed`, or auth/rate/reachability reasons).
 */
export async function prepareSandbox(sandbox: Sandbox, config: ResolvedDaytonaConfig, what: string): Promise<SandboxState> {
  const toolbox = new Toolbox(sandbox, sandbox.id)
  const prepared = await toolbox.run(prepareCommand(config.workdir), what, 'create-failed')
  const [physicalRoot, stateRoot] = prepared.stdout.trim().split('\n')
  if (prepared.exitCode !== 0 || !physicalRoot?.startsWith('/') || !stateRoot?.startsWith('/')) {
    throw operationError(
      'create-failed',
      `${what}: preparing sandbox ${sandbox.id} failed (exit ${prepared.exitCode}): ${prepared.stderr.trim() || prepared.stdout.trim() || 'no output'}. The snapshot needs a POSIX /bin/sh, and the workdir ${config.workdir} must be creatable by the sandbox user (or through sudo -n).`,
    )
  }
  const paths = statePaths(stateRoot)
  let reinstalling: Promise<void> | undefined
  const state: SandboxState = {
    id: sandbox.id,
    sandbox,
    toolbox,
    workspaceRoot: config.workdir,
    physicalRoot: physicalRoot.replace(/\/+$/, '') || '/',
    paths,
    labels: { ...(sandbox.labels ?? {}) },
    config,
    envWrites: Promise.resolve(),
    envSeq: 0,
    destroyed: false,
    reinstall: (method) =>
      (reinstalling ??= toolbox
        .run(prepareCommand(config.workdir), method)
        .then(() => undefined)
        .finally(() => (reinstalling = undefined))),
    assertLive: (method) => {
      if (state.destroyed) throw destroyedError(state.id, method)
    },
  }
  return state
}
