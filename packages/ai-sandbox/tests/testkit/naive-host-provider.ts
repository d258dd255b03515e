/**
 * A deliberately naive sandbox provider over real host processes, for testing
 * the cancel checks of the provider kit and the kit's own cleanup after a
 * failing case. Each sandbox is a temp directory; `exec` and `spawn` run
 * `/bin/sh -c` as a new process-group leader, and abort, `timeoutMs`, `kill()`
 * and `destroy()` signal that group only, as a provider without a tree walk or
 * marker would: a `( setsid sleep & )` child whose parent exited survives.
 * Every process it starts carries `NAIVE_HOST_RUN=<tag>` in its environment,
 * so a test finds all of them on the host. Not a real provider: no
 * confinement, no fs, no escalation to SIGKILL.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  NO_CAPABILITIES,
  SandboxOperationError,
  UnsupportedCapabilityError,
  type ExecOptions,
  type ProcessOptions,
  type SandboxCapabilities,
  type SandboxCapabilityName,
  type SandboxHandle,
  type SandboxProvider,
  type SpawnedProcess,
} from '../../src/contracts/index.js'

/** The environment entry every process of a naive provider carries: `NAIVE_HOST_RUN=<tag>`. */
export const NAIVE_TAG_ENV = 'NAIVE_HOST_RUN'

const CAPABILITIES: SandboxCapabilities = { ...NO_CAPABILITIES, exec: true, backgroundProcesses: true, killableProcesses: true }

/** Build the naive provider; every process it starts carries `NAIVE_HOST_RUN=<tag>`. */
export function naiveHostProvider(tag: string): SandboxProvider {
  const live = new Map<string, SandboxHandle>()
  let next = 0
  const provider: SandboxProvider = {
    name: 'naive-host',
    capabilities: () => CAPABILITIES,
    create: async () => {
      const id = `naive-${++next}`
      const dir = mkdtempSync(join(tmpdir(), 'naive-host-'))
      const groups = new Set<number>()
      const handle = makeHandle(id, dir, tag, groups, async () => {
        for (const pgid of groups) signalGroup(pgid, 'SIGKILL')
        live.delete(id)
        rmSync(dir, { recursive: true, force: true })
      })
      live.set(id, handle)
      return handle
    },
    resume: async ({ id }) => live.get(id) ?? null,
    destroy: async ({ id }) => live.get(id)?.destroy(),
  }
  return provider
}

function unsupported(capability: SandboxCapabilityName, method: string): () => Promise<never> {
  return async () => {
    throw new UnsupportedCapabilityError({ provider: 'naive-host', capability, method })
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
 * One started shell: its output so far, its exit, and a group-only kill.
 * A shell that cannot start (the sandbox folder is gone after `destroy()`)
 * is a `SandboxOperationError` `spawn-failed`, never an unhandled 'error'.
 */
async function start(dir: string, tag: string, groups: Set<number>, command: string, options: ProcessOptions) {
  const child = spawn('/bin/sh', ['-c', command], { cwd: dir, env: { ...process.env, ...options.env, [NAIVE_TAG_ENV]: tag }, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
  } catch (error) {
    throw new SandboxOperationError('spawn-failed', 'naive-host', `Could not start /bin/sh in ${dir}: ${String(error)}`, { cause: error })
  }
  child.on('error', () => undefined)
  const pgid = child.pid!
  groups.add(pgid)
  const exit = new Promise<{ exitCode: number; signal?: string }>((resolve) =>
    child.once('exit', (code, signal) => {
      groups.delete(pgid)
      resolve(signal ? { exitCode: 128 + (signal === 'SIGKILL' ? 9 : 15), signal } : { exitCode: code ?? 0 })
    }),
  )
  return { child, pgid, exit, kill: (signal: NodeJS.Signals = 'SIGTERM') => signalGroup(pgid, signal) }
}

function makeHandle(id: string, dir: string, tag: string, groups: Set<number>, destroy: () => Promise<void>): SandboxHandle {
  const exec = async (command: string, options: ExecOptions = {}) => {
    const job = await start(dir, tag, groups, command, options)
    let stdout = ''
    let stderr = ''
    job.child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    job.child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    job.child.stdin.on('error', () => undefined) // EPIPE when the shell exits before reading stdin
    job.child.stdin.end(options.stdin ?? '')
    let stopped: 'timeout' | 'aborted' | undefined
    const stop = (reason: 'timeout' | 'aborted') => {
      stopped ??= reason
      job.kill()
    }
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => stop('timeout'), options.timeoutMs)
    const onAbort = () => stop('aborted')
    options.signal?.addEventListener('abort', onAbort, { once: true })
    try {
      const exit = await job.exit
      // 'exit' can come before the last 'data' of the pipes; wait for them to end (bounded: an escaped child may hold them open).
      await Promise.race([Promise.all([once(job.child.stdout, 'end'), once(job.child.stderr, 'end')]), new Promise((resolve) => setTimeout(resolve, 250))])
      if (stopped) throw new SandboxOperationError(stopped, 'naive-host', `Command ${stopped === 'timeout' ? 'timed out' : 'aborted'}: ${command}`)
      return { exitCode: exit.exitCode, stdout, stderr }
    } finally {
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
    }
  }
  const spawnProcess = async (command: string, options: ProcessOptions = {}): Promise<SpawnedProcess> => {
    const job = await start(dir, tag, groups, command, options)
    options.signal?.addEventListener('abort', () => job.kill(), { once: true })
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
        job.kill(signal)
        await job.exit
      },
    }
  }
  return {
    id,
    provider: 'naive-host',
    capabilities: CAPABILITIES,
    workspaceRoot: dir,
    fs: new Proxy({} as SandboxHandle['fs'], { get: (_, method) => unsupported('fs', `fs.${String(method)}`) }),
    git: new Proxy({} as SandboxHandle['git'], { get: (_, method) => unsupported('exec', `git.${String(method)}`) }),
    process: { exec, spawn: spawnProcess },
    ports: { connect: unsupported('ports', 'ports.connect') },
    env: { set: unsupported('env', 'env.set') },
    destroy,
  }
}

/** Pids of live processes carrying `NAIVE_HOST_RUN=<tag>`, after waiting up to 1 s for them to go. */
export async function naiveTaggedProcesses(tag: string): Promise<string[]> {
  if (process.platform !== 'linux') return []
  const needle = Buffer.from(`\0${NAIVE_TAG_ENV}=${tag}\0`)
  const tagged = () =>
    readdirSync('/proc').filter((name) => {
      try {
        return /^\d+$/.test(name) && Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`)]).includes(needle)
      } catch {
        return false
      }
    })
  for (let i = 0; i < 50 && tagged().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  return tagged()
}
