/**
 * A deliberately naive "bind-mount" sandbox provider, for proving the fs race
 * and symlink cases of the provider kit look where such a provider's `fs`
 * really acts: on the host.
 *
 * Shape: the workspace is a host folder (outside `/tmp`), `exec`/`spawn` run
 * `/bin/sh` in a mount namespace of their own (`unshare -rm`) whose `/tmp` is
 * a private folder of the sandbox, as a container's `/tmp` would be, while the
 * workspace keeps its host path. `fs` runs in the test process on the host
 * and confines paths the naive way: check (lexical, then `realpath`, looked at
 * again a few times while it leads outside, as for a rename in progress),
 * then act on the unchecked path with plain `node:fs`. Between the two it waits until
 * the agent has swapped a symlink in (at most 60 ms), the timing a busy host
 * hits now and then, so the race the kit runs reliably shows the escape. `exec({ cwd })` is confined properly (`cd -P`, then `pwd -P` must
 * be inside), so only `fs` is at fault.
 *
 * With `{ write: 'temp-then-rename' }` its `fs.write` is the one of finding
 * M2 instead: after the same check (plus an `lstat` of the target) it writes a
 * temp file `.w-<id>` in the target's folder by path string, then renames it
 * onto the target, and lets Node's errors through raw. It waits for the swap
 * before the temp write and for the swap back before the rename, so the temp
 * file lands in the outside folder and the rename then fails with a raw
 * `ENOENT`: an escape that surfaces as a foreign error.
 *
 * Not a real provider: no resume across instances, no env, ports or git.
 * Needs Linux and `unshare -rm` (user and mount namespaces); see
 * {@link bindMountSupport}.
 */
import { spawn, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { lstat, mkdir, readdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { basename, dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  NO_CAPABILITIES,
  SandboxOperationError,
  SandboxPathError,
  UnsupportedCapabilityError,
  type ProcessOptions,
  type SandboxCapabilities,
  type SandboxDirEntry,
  type SandboxFs,
  type SandboxHandle,
  type SandboxProvider,
  type SpawnedProcess,
} from '../../src/contracts/index.js'
import { toWorkspaceRelative } from '../../src/paths/workspace-path.js'

const NAME = 'naive-bind-mount'
const CAPABILITIES: SandboxCapabilities = { ...NO_CAPABILITIES, fs: true, exec: true, backgroundProcesses: true, killableProcesses: true }
/** Exit status of the cwd guard when `cd -P` landed outside the workspace. */
const CWD_ESCAPE = 211
/** The host folder the sandboxes live in: not `/tmp`, which the sandboxes' own `/tmp` hides. */
const HOST_BASE = '/var/tmp'

/**
 * Whether this machine can run the provider; `{ ok: false, reason }` names what is missing.
 * @throws Error with that reason under `REQUIRE_USER_NAMESPACES=1` (CI sets it), so CI fails instead of skipping.
 */
export function bindMountSupport(): { ok: true } | { ok: false; reason: string } {
  const missing = missingBindMountSupport()
  if (missing === undefined) return { ok: true }
  if (process.env.REQUIRE_USER_NAMESPACES === '1') throw new Error(`REQUIRE_USER_NAMESPACES=1 but the bind-mount test provider cannot run: ${missing}`)
  return { ok: false, reason: missing }
}

function missingBindMountSupport(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux mount namespaces'
  if (!existsSync(HOST_BASE)) return `${HOST_BASE} does not exist`
  const probe = spawnSync('unshare', ['-rm', '/bin/sh', '-c', 'mount -t tmpfs none /tmp'], { encoding: 'utf8' })
  if (probe.status !== 0) return `unshare -rm cannot mount (${(probe.stderr || String(probe.error)).trim()})`
  return undefined
}

/** Options of {@link naiveBindMountProvider}. */
export interface NaiveBindMountOptions {
  /**
   * How `fs.write` acts on the checked path: `'direct'` (default) writes it
   * with `writeFile`; `'temp-then-rename'` writes a temp file next to it by
   * path string and renames that over it, raw Node errors and all (finding M2).
   */
  readonly write?: 'direct' | 'temp-then-rename'
}

/** The provider, and `dispose()` removing every folder it made (call it after the test). */
export function naiveBindMountProvider(options: NaiveBindMountOptions = {}): { provider: SandboxProvider; dispose: () => void } {
  const base = mkdtempSync(join(HOST_BASE, 'naive-bind-mount-'))
  const live = new Map<string, SandboxHandle>()
  let next = 0
  const provider: SandboxProvider = {
    name: NAME,
    capabilities: () => CAPABILITIES,
    create: async () => {
      const id = `bind-${++next}`
      const workspace = join(base, id, 'workspace')
      const privateTmp = join(base, id, 'tmp')
      mkdirSync(workspace, { recursive: true })
      mkdirSync(privateTmp, { mode: 0o1777 })
      const groups = new Set<number>()
      const handle: SandboxHandle = {
        id,
        provider: NAME,
        capabilities: CAPABILITIES,
        workspaceRoot: workspace,
        fs: naiveHostFs(workspace, options.write ?? 'direct'),
        process: processes(workspace, privateTmp, groups),
        git: new Proxy({} as SandboxHandle['git'], { get: (_, method) => unsupported('exec', `git.${String(method)}`) }),
        ports: { connect: unsupported('ports', 'ports.connect') },
        env: { set: unsupported('env', 'env.set') },
        destroy: async () => {
          for (const pgid of groups) signalGroup(pgid, 'SIGKILL')
          live.delete(id)
          rmSync(join(base, id), { recursive: true, force: true })
        },
      }
      live.set(id, handle)
      return handle
    },
    resume: async ({ id }) => live.get(id) ?? null,
    destroy: async ({ id }) => live.get(id)?.destroy(),
  }
  return { provider, dispose: () => rmSync(base, { recursive: true, force: true }) }
}

function unsupported(capability: 'exec' | 'ports' | 'env', method: string): () => Promise<never> {
  return async () => {
    throw new UnsupportedCapabilityError({ provider: NAME, capability, method })
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal)
  } catch {
    // the group is gone
  }
}

/**
 * The pause between check and act: until one of `paths` is a symlink (the
 * agent swapped it in), at most {@link PAUSE_MS}. This is the unlucky timing
 * a busy host hits now and then, made the rule so one race in a few shows it.
 */
async function untilSwapped(paths: readonly string[]): Promise<void> {
  const deadline = Date.now() + PAUSE_MS
  while (Date.now() < deadline) {
    const links = await Promise.all(paths.map((path) => lstat(path).then((stats) => stats.isSymbolicLink(), () => false)))
    if (links.some(Boolean)) return
    await sleep(1)
  }
}

/** The second pause of the temp-then-rename write: until `path` is a real folder again (swapped back), at most {@link PAUSE_MS}. */
async function untilSwappedBack(path: string): Promise<void> {
  const deadline = Date.now() + PAUSE_MS
  while (Date.now() < deadline) {
    if (await lstat(path).then((stats) => stats.isDirectory(), () => false)) return
    await sleep(1)
  }
}

/** How often the check looks again at a path that leads outside before refusing it. */
const CHECK_ATTEMPTS = 25

/** The longest pause between a check and its act, ms. */
const PAUSE_MS = 60

function inside(real: string, root: string): boolean {
  return real === root || real.startsWith(`${root}/`)
}

/** `fs` on the host: check, pause, act on the unchecked path. Every failure is a sandbox error, but those of a `'temp-then-rename'` write. */
function naiveHostFs(workspace: string, write: 'direct' | 'temp-then-rename'): SandboxFs {
  const resolved = async (absolute: string) =>
    realpath(absolute).catch(async () => join(await realpath(dirname(absolute)).catch(() => dirname(absolute)), basename(absolute)))
  const check = async (path: string): Promise<string> => {
    const absolute = join(workspace, toWorkspaceRelative(path, workspace))
    // A path that leads out may be mid-rename by the agent: look again a few times before refusing it.
    for (let attempt = 0; !inside(await resolved(absolute), workspace); attempt++) {
      if (attempt === CHECK_ATTEMPTS) throw new SandboxPathError('symlink-escape', path, `${path} leads outside the workspace`)
      await sleep(2)
    }
    await untilSwapped([absolute, dirname(absolute)])
    return absolute
  }
  const act = async <T>(path: string, run: (absolute: string) => Promise<T>): Promise<T> => {
    const absolute = await check(path)
    try {
      return await run(absolute)
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === 'ENOENT') throw new SandboxPathError('not-found', path, `${path} does not exist`, { cause: error })
      throw new SandboxOperationError('fs-failed', NAME, `fs on ${path} failed: ${String(error)}`, { cause: error })
    }
  }
  return {
    read: (path) => act(path, (absolute) => readFile(absolute, 'utf8')),
    readBytes: (path) => act(path, async (absolute) => new Uint8Array(await readFile(absolute))),
    write:
      write === 'direct'
        ? (path, data) => act(path, (absolute) => writeFile(absolute, data))
        : async (path, data) => {
            // Finding M2's write: check, lstat, temp file by path string, rename; Node's errors pass through raw.
            const absolute = await check(path)
            const existing = await lstat(absolute).catch(() => undefined)
            if (existing && !existing.isFile()) throw new SandboxPathError('special-file', path, `${path} is not a regular file`)
            const temp = join(dirname(absolute), `.w-${randomUUID().slice(0, 8)}`)
            await writeFile(temp, data)
            await untilSwappedBack(dirname(absolute))
            await rename(temp, absolute)
          },
    list: (path = '.') =>
      act(path, async (absolute) => {
        const entries = await readdir(absolute, { withFileTypes: true })
        const relative = toWorkspaceRelative(path, workspace)
        return entries
          .map((entry): SandboxDirEntry => ({
            name: entry.name,
            path: relative === '' || relative === '.' ? entry.name : `${relative}/${entry.name}`,
            type: entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'directory' : entry.isFile() ? 'file' : 'other',
          }))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      }),
    mkdir: (path) => act(path, async (absolute) => void (await mkdir(absolute, { recursive: true }))),
    remove: (path) => act(path, (absolute) => rm(absolute, { recursive: true, force: true })),
    rename: async (from, to) => {
      const target = await check(to)
      await act(from, (absolute) => rename(absolute, target))
    },
    exists: (path) => act(path, (absolute) => lstat(absolute).then(() => true, () => false)),
  }
}

/** `exec` and `spawn`: `/bin/sh` in a mount namespace whose `/tmp` is the sandbox's own; `cwd` confined with `cd -P` and `pwd -P`. */
function processes(workspace: string, privateTmp: string, groups: Set<number>): SandboxHandle['process'] {
  const start = async (command: string, options: ProcessOptions) => {
    const cwd = join(workspace, toWorkspaceRelative(options.cwd ?? '.', workspace))
    const guard = `mount --bind "$1" /tmp && cd -P -- "$2" && case "$(pwd -P)/" in "$3"/*) ;; *) exit ${CWD_ESCAPE};; esac && exec /bin/sh -c "$4"`
    const child = spawn('unshare', ['-rm', '/bin/sh', '-c', guard, 'sh', privateTmp, cwd, workspace, command], {
      env: { ...process.env, ...options.env },
      detached: true,
      stdio: 'pipe',
    })
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', (error) => reject(new SandboxOperationError('spawn-failed', NAME, `Could not start unshare: ${String(error)}`, { cause: error })))
    })
    child.stdin.on('error', () => undefined)
    const pgid = child.pid as number
    groups.add(pgid)
    const exit = new Promise<{ exitCode: number; signal?: string }>((resolve) =>
      child.once('exit', (code, signal) => {
        groups.delete(pgid)
        resolve(signal ? { exitCode: 128 + (signal === 'SIGKILL' ? 9 : 15), signal } : { exitCode: code ?? 0 })
      }),
    )
    options.signal?.addEventListener('abort', () => signalGroup(pgid, 'SIGKILL'), { once: true })
    return { child, pgid, exit }
  }
  return {
    exec: async (command, options = {}) => {
      const job = await start(command, options)
      let stdout = ''
      let stderr = ''
      job.child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
      job.child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      job.child.stdin.end(options.stdin ?? '')
      // Listen for the ends before the exit: a stream that ended first would otherwise cost the whole 250 ms.
      const drained = Promise.all([once(job.child.stdout, 'end'), once(job.child.stderr, 'end')]).catch(() => undefined)
      const exit = await job.exit
      await Promise.race([drained, sleep(250)])
      if (exit.exitCode === CWD_ESCAPE) throw new SandboxPathError('symlink-escape', options.cwd ?? '.', `exec cwd ${String(options.cwd)} leads outside the workspace`)
      return { exitCode: exit.exitCode, stdout, stderr }
    },
    spawn: async (command, options = {}): Promise<SpawnedProcess> => {
      const job = await start(command, options)
      return {
        pid: job.pgid,
        stdout: job.child.stdout.setEncoding('utf8'),
        stderr: job.child.stderr.setEncoding('utf8'),
        stdin: {
          write: (data) => new Promise<void>((resolve, reject) => job.child.stdin.write(data, (error) => (error ? reject(error) : resolve()))),
          end: () => new Promise<void>((resolve) => job.child.stdin.end(resolve)),
        },
        wait: () => job.exit,
        kill: async (signal = 'SIGTERM') => {
          signalGroup(job.pgid, signal)
          await job.exit
        },
      }
    },
  }
}
