/**
 * `localProcessSandbox()`: the public factory, its zod-validated config and the
 * private provider class behind it. Owns the root directory, ids, and the live
 * state of every sandbox this instance touched (so destroy can kill what it
 * started). It never knows harness names and offers no isolation: processes
 * run as the current user on the host.
 */
import { lstat, realpath, mkdir } from 'node:fs/promises'
import { stopSandboxStragglers } from './stragglers.js'
import { tmpdir, userInfo } from 'node:os'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import type { SandboxCapabilities, SandboxCreateInput, SandboxDestroyInput, SandboxHandle, SandboxProvider, SandboxResumeInput } from '@tanstack/ai-sandbox'
import { LOCAL_PROCESS_CAPABILITIES } from './capabilities.js'
import { PROVIDER_NAME, fsError, operationError, parseConfig, unsupportedMethod } from './errors.js'
import { createLocalHandle } from './handle.js'
import { removeTree } from './remove-tree.js'
import { DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_MAX_READ_BYTES, assertValidId, createSandboxDir, envSchema, makeState, newSandboxId, readMetadata, workspaceExists } from './sandbox-state.js'
import type { SandboxState } from './sandbox-state.js'

/** Default grace period between SIGTERM and SIGKILL, in ms. */
export const DEFAULT_KILL_GRACE_MS = 2000

/** Options of {@link localProcessSandbox}. */
export interface LocalProcessSandboxConfig {
  /**
   * Directory holding one sub-directory per sandbox (`<root>/<id>/workspace`,
   * and `<root>/<id>/runs` for its durable-run journals). Relative paths
   * resolve against `process.cwd()`. Default: `<os.tmpdir()>/tanstack-ai-sandbox-<uid>`
   * (one per user, so two users of a machine do not meet in one folder).
   * Created with mode 0700 when missing; every use checks it is a real folder
   * owned by this process's user that no group or other user can write
   * (`create-failed` otherwise), because whoever can write it can plant files
   * in every sandbox and journal under it.
   */
  root?: string
  /** ms between the first signal of `kill()`/`destroy()` and SIGKILL. Default 2000. */
  killGraceMs?: number
  /**
   * Output (stdout plus stderr) above which `exec` kills the command and
   * throws `SandboxLimitError` `exec-output-too-large`, in bytes. At least
   * 1024. Default 64 MiB (`DEFAULT_MAX_EXEC_OUTPUT_BYTES`), as on Docker.
   * `spawn` has no such limit: its streams pause the process instead.
   */
  maxExecOutputBytes?: number
  /**
   * Largest file `fs.read`/`fs.readBytes` return, in bytes; a larger one (or
   * one that grows past it while read) throws `SandboxLimitError`
   * `file-too-large` before it is held in memory. At least 1. Default 64 MiB
   * (`DEFAULT_MAX_READ_BYTES`), as on Docker.
   */
  maxReadBytes?: number
}

const configSchema = z
  .object({
    root: z.string().min(1, 'expected a non-empty directory path').refine((value) => !value.includes('\0'), 'must not contain NUL bytes').optional(),
    killGraceMs: z.number().int('expected an integer number of milliseconds').min(0).max(600_000).optional(),
    maxExecOutputBytes: z.number().int('expected a whole number of bytes').min(1024, 'expected at least 1024 bytes').optional(),
    maxReadBytes: z.number().int('expected a whole number of bytes').min(1, 'expected at least 1 byte').optional(),
  })
  .strict()

const createInputSchema = z.object({
  key: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  env: envSchema.optional(),
})

/**
 * Create the local-process sandbox provider: every sandbox is a directory on
 * this machine and every command runs as the current user. No isolation: use
 * it for the development loop and trusted agents only.
 *
 * @param config - `root` (default `<os.tmpdir()>/tanstack-ai-sandbox-<uid>`),
 *   `killGraceMs` (default 2000), `maxExecOutputBytes` (default 64 MiB) and
 *   `maxReadBytes` (default 64 MiB).
 * @returns A {@link SandboxProvider} named `local-process`; its `restoreSnapshot` (and the
 *   handles' `snapshot`/`fork`) throw `UnsupportedCapabilityError`.
 * @throws SandboxConfigError naming the field (e.g. `localProcessSandbox.killGraceMs`).
 * @example
 * ```ts
 * const handle = await localProcessSandbox().create()
 * const { stdout } = await handle.process.exec('echo hi')
 * await handle.destroy()
 * ```
 */
export function localProcessSandbox(config: LocalProcessSandboxConfig = {}): SandboxProvider {
  const parsed = parseConfig(configSchema, config, 'localProcessSandbox')
  return new LocalProcessProvider(resolve(parsed.root ?? defaultRoot()), parsed.killGraceMs ?? DEFAULT_KILL_GRACE_MS, parsed.maxExecOutputBytes ?? DEFAULT_MAX_EXEC_OUTPUT_BYTES, parsed.maxReadBytes ?? DEFAULT_MAX_READ_BYTES)
}

/**
 * `<os.tmpdir()>/tanstack-ai-sandbox-<uid>`: a folder per user of the machine. A shared name would let the first
 * user who made it refuse every other user's sandboxes (its owner check), or worse without that check.
 */
function defaultRoot(): string {
  return join(tmpdir(), `tanstack-ai-sandbox-${process.getuid?.() ?? userInfo().username}`)
}

class LocalProcessProvider implements SandboxProvider {
  readonly name = PROVIDER_NAME
  /** Sandboxes this instance created or resumed, by id. */
  private readonly live = new Map<string, SandboxState>()
  private realRoot: Promise<string> | undefined

  constructor(
    private readonly root: string,
    private readonly killGraceMs: number,
    private readonly maxExecOutputBytes: number,
    private readonly maxReadBytes: number,
  ) {}

  capabilities = (): SandboxCapabilities => LOCAL_PROCESS_CAPABILITIES

  restoreSnapshot = unsupportedMethod('snapshots', 'restoreSnapshot')

  create = async (input: SandboxCreateInput = {}): Promise<SandboxHandle> => {
    if (input.signal?.aborted) throw operationError('aborted', 'provider.create() was not started: the AbortSignal is already aborted.', input.signal.reason)
    const { key, labels, env = {} } = parseConfig(createInputSchema, input, 'create')
    const id = newSandboxId()
    const dir = join(await this.ensureRoot(), id)
    const metadata = { id, createdAt: Date.now(), key, labels, env }
    try {
      await createSandboxDir(dir, metadata)
    } catch (error) {
      throw operationError('create-failed', `Could not create sandbox directory ${dir}: ${String(error)}`, error)
    }
    return this.handleFor(makeState({ id, dir, workspaceRoot: join(dir, 'workspace'), killGraceMs: this.killGraceMs, maxExecOutputBytes: this.maxExecOutputBytes, maxReadBytes: this.maxReadBytes, metadata }))
  }

  // `input.signal` is not consulted: resume is two stat calls and a small read.
  resume = async (input: SandboxResumeInput): Promise<SandboxHandle | null> => {
    assertValidId(input.id, 'resume.id')
    const dir = join(await this.ensureRoot(), input.id)
    const known = this.live.get(input.id)
    if (!(await workspaceExists(dir))) {
      // Removed behind our back (another provider instance, a user): forget it.
      if (known) known.destroyed = true
      this.live.delete(input.id)
      return null
    }
    if (known) return this.handleFor(known)
    const metadata = await readMetadata(dir, input.id)
    return this.handleFor(makeState({ id: input.id, dir, workspaceRoot: join(dir, 'workspace'), killGraceMs: this.killGraceMs, maxExecOutputBytes: this.maxExecOutputBytes, maxReadBytes: this.maxReadBytes, metadata }))
  }

  destroy = async (input: SandboxDestroyInput): Promise<void> => {
    assertValidId(input.id, 'destroy.id')
    const state = this.live.get(input.id)
    let killed: PromiseSettledResult<void>[] = []
    if (state) {
      state.destroyed = true
      this.live.delete(input.id)
      killed = await Promise.allSettled([...state.groups].map((group) => group.kill('SIGTERM')))
    }
    const dir = join(await this.ensureRoot(), input.id)
    // Processes that escaped their group and tree (setsid, daemons): by the sandbox's marker or their cwd.
    await stopSandboxStragglers(dir, input.id)
    try {
      // Not a bare fs.rm: the agent may have left a chain deeper than PATH_MAX or chmod 000 folders.
      await removeTree(dir)
    } catch (error) {
      throw fsError('destroy', dir, error)
    }
    // The directory is gone either way; a group that survived SIGKILL is still reported.
    const failed = killed.find((result): result is PromiseRejectedResult => result.status === 'rejected')
    if (failed) throw failed.reason
  }

  private handleFor(state: SandboxState): SandboxHandle {
    this.live.set(state.id, state)
    return createLocalHandle(state, () => this.destroy({ id: state.id }))
  }

  /**
   * Create the root once (mode 0700) and resolve its symlinks (macOS `/var` ->
   * `/private/var`); on every call check that it is still a folder this user
   * owns and only this user can write.
   */
  private async ensureRoot(): Promise<string> {
    this.realRoot ??= (async () => {
      try {
        await mkdir(this.root, { recursive: true, mode: 0o700 })
        return await realpath(this.root)
      } catch (error) {
        this.realRoot = undefined
        throw operationError('create-failed', `Could not create the local-process sandbox root ${this.root}: ${String(error)}. Pass a writable directory as localProcessSandbox({ root }).`, error)
      }
    })()
    const root = await this.realRoot
    await assertPrivateRoot(root)
    return root
  }
}

/**
 * Refuse a sandbox root another user could write: not a folder, owned by
 * another user, or writable by its group or by others (issue 27, item 2: a
 * shared folder let another local user plant journals and git config).
 * @throws LocalProcessSandboxError `create-failed` naming the problem and the fix.
 */
async function assertPrivateRoot(root: string): Promise<void> {
  const info = await lstat(root).catch((error: unknown) => {
    throw operationError('create-failed', `The local-process sandbox root ${root} cannot be read: ${String(error)}.`, error)
  })
  const uid = process.getuid?.()
  const fix = 'Remove it, or pass localProcessSandbox({ root }) a folder only this user owns and can write (mode 0700).'
  if (!info.isDirectory()) throw operationError('create-failed', `The local-process sandbox root ${root} is not a folder. ${fix}`)
  if (uid !== undefined && info.uid !== uid) throw operationError('create-failed', `The local-process sandbox root ${root} belongs to user ${info.uid}, not to this process's user ${uid}: that user could plant files in every sandbox and run journal under it. ${fix}`)
  if ((info.mode & 0o022) !== 0) throw operationError('create-failed', `The local-process sandbox root ${root} can be written by its group or by other users (mode ${(info.mode & 0o777).toString(8)}), who could plant files in every sandbox and run journal under it. ${fix}`)
}
