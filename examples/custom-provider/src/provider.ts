/**
 * `directorySandbox()`: the example provider of docs/writing-a-provider.md.
 * Each sandbox is a directory on this machine, `<root>/<id>/workspace`, with
 * its environment saved beside it in `<root>/<id>/env.json`; commands run
 * with `/bin/sh` on the host. Everything a sandbox is lives on disk or in the
 * environment of its processes, so any provider instance (another process,
 * after a restart) can resume or destroy it by id.
 * Not isolation: processes run as the current user. Linux only (`/proc`).
 */
import { randomUUID } from 'node:crypto'
import { mkdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import { createExecBackedGit, NO_CAPABILITIES, parseOptions, SandboxOperationError, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import type { SandboxCapabilities, SandboxCreateInput, SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'
import { createDirectoryFs } from './fs.js'
import { createDirectoryProcess, parseEnv, stopTagged } from './process.js'

/** `provider.name` and `handle.provider`. */
export const PROVIDER_NAME = 'directory'

/** Default ms between SIGTERM and SIGKILL in `kill()` and `destroy()`. */
export const DEFAULT_KILL_GRACE_MS = 2000

/** Default bound of one `fs.read`/`readBytes` and of one `exec`'s output: 64 MiB. */
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

/**
 * What this provider promises. Every `true` is checked by the conformance
 * kit; every `false` must make its method throw `UnsupportedCapabilityError`.
 */
export const DIRECTORY_CAPABILITIES: SandboxCapabilities = Object.freeze({
  ...NO_CAPABILITIES,
  fs: true,
  exec: true,
  env: true,
  backgroundProcesses: true,
  writableStdin: true,
  killableProcesses: true,
  durableFilesystem: true,
  isolated: false, // host processes see the host: adapters must never claim isolation
})

/** Options of {@link directorySandbox}. */
export interface DirectorySandboxConfig {
  /** Folder holding one sub-folder per sandbox. Default `<os.tmpdir()>/directory-sandboxes`. */
  root?: string
  /** ms between the first signal of `kill()`/`destroy()` and SIGKILL. Default 2000. */
  killGraceMs?: number
  /** Largest file `fs.read`/`readBytes` load, in bytes; larger throws `SandboxLimitError` `file-too-large`. Default 64 MiB. */
  maxReadBytes?: number
  /** Most stdout plus stderr one `exec` collects, in bytes; past it the command is killed and `SandboxLimitError` `exec-output-too-large` thrown. Default 64 MiB. */
  maxExecOutputBytes?: number
}

const configSchema = z
  .object({
    root: z.string().min(1, 'expected a directory path').optional(),
    killGraceMs: z.number().int('expected whole milliseconds').min(0).max(60_000).optional(),
    maxReadBytes: z.number().int('expected whole bytes').positive().optional(),
    maxExecOutputBytes: z.number().int('expected whole bytes').positive().optional(),
  })
  .strict()

/** Ids are UUIDs; anything else is not ours, and is never joined into a path. */
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * Create the directory provider.
 *
 * @param config - `root` (default `<os.tmpdir()>/directory-sandboxes`),
 *   `killGraceMs` (default 2000 ms), `maxReadBytes` and `maxExecOutputBytes`
 *   (default 64 MiB each).
 * @returns A {@link SandboxProvider} named `directory`. It has no
 *   `restoreSnapshot`, and its handles have no `snapshot` or `fork`
 *   (those flags are false); `ports.connect` throws `UnsupportedCapabilityError`.
 * @throws SandboxConfigError naming the field (`directorySandbox.killGraceMs`).
 * @throws SandboxOperationError `create-failed` on a system without `/proc`.
 * @example
 * ```ts
 * const provider = directorySandbox()
 * const handle = await provider.create()
 * console.log((await handle.process.exec('echo hi')).stdout) // hi
 * await handle.destroy()
 * ```
 */
export function directorySandbox(config: DirectorySandboxConfig = {}): SandboxProvider {
  const options = parseOptions(configSchema, config, 'directorySandbox')
  if (process.platform !== 'linux') {
    throw new SandboxOperationError('create-failed', PROVIDER_NAME, `directorySandbox() finds a sandbox's processes through /proc, which ${process.platform} does not have. Use it on Linux.`)
  }
  const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS
  const maxExecOutputBytes = options.maxExecOutputBytes ?? DEFAULT_MAX_BYTES
  const configuredRoot = resolve(options.root ?? join(tmpdir(), 'directory-sandboxes'))
  let realRoot: Promise<string> | undefined
  /** The root, created once, with its symlinks resolved (so confinement compares real paths). */
  const rootDir = () =>
    (realRoot ??= mkdir(configuredRoot, { recursive: true })
      .then(() => realpath(configuredRoot))
      .catch((error: unknown) => {
        realRoot = undefined // try again next time
        throw new SandboxOperationError('create-failed', PROVIDER_NAME, `Could not create the sandbox root ${configuredRoot}: ${String(error)}. Pass a writable folder as directorySandbox({ root }).`, { cause: error })
      }))

  async function handleFor(id: string): Promise<SandboxHandle> {
    const dir = join(await rootDir(), id)
    const workspaceRoot = join(dir, 'workspace')
    const envFile = join(dir, 'env.json')
    const assertAlive = async () => {
      if (!(await stat(workspaceRoot).catch(() => undefined))) {
        throw new SandboxOperationError('destroyed', PROVIDER_NAME, `Sandbox ${id} was destroyed; create or resume another one.`)
      }
    }
    // The handle keeps no state of its own: the environment is read from disk for every process,
    // so every handle on this sandbox (in this process or another) sees each env.set.
    const readEnv = async () => JSON.parse(await readFile(envFile, 'utf8')) as Record<string, string>
    const processes = createDirectoryProcess({ provider: PROVIDER_NAME, sandboxId: id, workspaceRoot, killGraceMs, maxExecOutputBytes, env: readEnv, assertAlive })
    return {
      id,
      provider: PROVIDER_NAME,
      capabilities: DIRECTORY_CAPABILITIES,
      workspaceRoot,
      fs: createDirectoryFs(workspaceRoot, PROVIDER_NAME, assertAlive, options.maxReadBytes ?? DEFAULT_MAX_BYTES),
      process: processes,
      git: createExecBackedGit(processes, { provider: PROVIDER_NAME, workspaceRoot }),
      env: {
        set: async (vars) => {
          const added = parseEnv(vars, 'env.set')
          await assertAlive()
          await writeFile(envFile, JSON.stringify({ ...(await readEnv()), ...added }))
        },
      },
      ports: {
        connect: async () => {
          throw new UnsupportedCapabilityError({ provider: PROVIDER_NAME, capability: 'ports', method: 'ports.connect', hint: 'Processes of a directory sandbox listen on the host itself: connect to http://127.0.0.1:<port>.' })
        },
      },
      // Processes run on the host, so a host server on loopback is reachable from inside.
      hostAccess: async () => ({ hostname: '127.0.0.1', listenAddress: '127.0.0.1' }),
      // snapshot and fork are left out: their flags are false.
      destroy: () => provider.destroy({ id }),
    }
  }

  const provider: SandboxProvider = {
    name: PROVIDER_NAME,
    capabilities: () => DIRECTORY_CAPABILITIES,

    async create(input: SandboxCreateInput = {}) {
      if (input.signal?.aborted) throw new SandboxOperationError('aborted', PROVIDER_NAME, 'create() was not started: its AbortSignal is already aborted.', { cause: input.signal.reason })
      const env = parseEnv(input.env ?? {}, 'create.env')
      const id = randomUUID()
      const dir = join(await rootDir(), id)
      try {
        await mkdir(join(dir, 'workspace'), { recursive: true })
        await writeFile(join(dir, 'env.json'), JSON.stringify(env))
      } catch (error) {
        await rm(dir, { recursive: true, force: true })
        throw new SandboxOperationError('create-failed', PROVIDER_NAME, `Could not create ${dir}: ${String(error)}`, { cause: error })
      }
      return handleFor(id)
    },

    async resume({ id }) {
      if (!ID.test(id)) return null // not an id this provider issues: unknown, not an error
      const dir = join(await rootDir(), id)
      const found = await Promise.all([stat(join(dir, 'workspace')), stat(join(dir, 'env.json'))]).catch(() => undefined)
      return found ? handleFor(id) : null
    },

    async destroy({ id }) {
      if (!ID.test(id)) return
      const dir = join(await rootDir(), id)
      const doomed = `${dir}.destroying`
      // Move the folder away first: from now on resume finds nothing and no new process can start in it.
      await rename(dir, doomed).catch((error: unknown) => {
        if ((error as { code?: string }).code !== 'ENOENT') throw error
      })
      // Then every process (found by its tag, wherever it runs from), then the files.
      await stopTagged(`${id}/`, 'SIGTERM', killGraceMs, PROVIDER_NAME)
      await rm(doomed, { recursive: true, force: true })
    },
  }
  return provider
}
