/**
 * A minimal `SandboxHandle` for core tests: `process.spawn`/`exec` run real
 * `sh -c` children on the host through node:child_process, in a process group
 * so `kill()` stops everything they started; git is the shared exec-backed
 * one. fs, ports and env throw `UnsupportedCapabilityError`. Core must not depend on the local-process
 * provider, so this stays a test helper, not a provider.
 */
import { spawn as spawnChild, type ChildProcess } from 'node:child_process'
import { constants } from 'node:os'
import { UnsupportedCapabilityError, type SandboxCapabilityName } from '../../src/contracts/errors.js'
import type { SandboxHandle } from '../../src/contracts/handle.js'
import { NO_CAPABILITIES } from '../../src/contracts/capabilities.js'
import { createExecBackedGit } from '../../src/git/exec-git.js'
import type { ExecResult, ProcessExit, ProcessOptions, SpawnedProcess } from '../../src/contracts/process.js'

/** A spawned child as the test sees it, to check it is gone afterwards. */
export interface FakeChild {
  readonly command: string
  readonly pid: number
  /** Resolves once the child exited and its stdio closed. */
  readonly closed: Promise<ProcessExit>
  /** True once `kill()` was called on it. */
  killed: boolean
  /** The same kill as the spawned process's. */
  kill: () => Promise<void>
}

/** The fake handle plus what it spawned. */
export interface FakeHandle extends SandboxHandle {
  readonly children: FakeChild[]
}

const KILL_GRACE_MS = 2_000

/** Build a fake handle whose processes run on the host with `sh -c` in `workspaceRoot`. */
export function createFakeHandle(workspaceRoot = process.cwd()): FakeHandle {
  const children: FakeChild[] = []

  async function spawn(command: string, options: ProcessOptions = {}): Promise<SpawnedProcess> {
    const child = spawnChild('/bin/sh', ['-c', command], {
      cwd: options.cwd ?? workspaceRoot,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // own process group, so kill() reaches grandchildren
    })
    const closed = new Promise<ProcessExit>((resolve, reject) => {
      child.once('error', reject)
      child.once('close', (code, signal) => {
        resolve(signal ? { exitCode: 128 + (constants.signals[signal] ?? 0), signal } : { exitCode: code ?? 0 })
      })
    })
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
    const record: FakeChild = { command, pid: child.pid!, closed, killed: false, kill: () => kill() }
    child.stdin!.on('error', () => undefined) // EPIPE surfaces through write()'s callback instead
    child.stdout!.setEncoding('utf8')
    child.stderr!.setEncoding('utf8')

    const kill = async (signal: 'SIGTERM' | 'SIGKILL' | 'SIGINT' = 'SIGTERM') => {
      record.killed = true
      if (child.exitCode !== null || child.signalCode !== null) return void (await closed)
      signalGroup(child, signal)
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), KILL_GRACE_MS)
      await closed.finally(() => clearTimeout(timer))
    }
    children.push(record)
    options.signal?.addEventListener('abort', () => void kill(), { once: true })

    return {
      pid: child.pid,
      stdout: child.stdout as AsyncIterable<string>,
      stderr: child.stderr as AsyncIterable<string>,
      stdin: {
        write: (data) => new Promise((resolve, reject) => child.stdin!.write(data, (error) => (error ? reject(error) : resolve()))),
        end: () => new Promise((resolve) => child.stdin!.end(resolve)),
      },
      wait: () => closed,
      kill,
    }
  }

  async function exec(command: string, options: ProcessOptions & { stdin?: string } = {}): Promise<ExecResult> {
    const child = await spawn(command, options)
    const collect = async (stream: AsyncIterable<string>) => {
      let text = ''
      for await (const chunk of stream) text += chunk
      return text
    }
    const input = (options.stdin ? child.stdin.write(options.stdin) : Promise.resolve())
      .then(() => child.stdin.end())
      .catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EPIPE') throw error // EPIPE: the command exited without reading stdin
      })
    const [stdout, stderr, exit] = await Promise.all([collect(child.stdout), collect(child.stderr), child.wait(), input])
    return { exitCode: exit.exitCode, stdout, stderr }
  }

  return {
    id: 'fake',
    provider: 'fake',
    capabilities: { ...NO_CAPABILITIES, exec: true, backgroundProcesses: true, writableStdin: true, killableProcesses: true },
    workspaceRoot,
    process: { spawn, exec },
    fs: unsupported('fs'),
    git: createExecBackedGit({ spawn, exec }, { provider: 'fake', workspaceRoot }),
    ports: unsupported('ports'),
    env: unsupported('env'),
    destroy: async () => {
      await Promise.all(children.map((c) => (c.killed ? c.closed : c.kill())))
    },
    children,
  }
}

/** Signal the whole process group; a group that is already gone is fine. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error // ESRCH: already gone
  }
}

/** An object whose every method throws `UnsupportedCapabilityError`. */
function unsupported<T>(capability: SandboxCapabilityName): T {
  return new Proxy({} as object, {
    get: (_target, method) => () => {
      throw new UnsupportedCapabilityError({ provider: 'fake', capability, method: String(method) })
    },
  }) as T
}
