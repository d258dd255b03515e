/**
 * The container side of the stand-in: one Docker container per sandbox
 * (dockerode), its `daytona` user and workdir created by a root exec at each
 * start, and `docker exec` runs with stdin, demultiplexed stdout and stderr
 * and the combined output in arrival order, to the end or live. No HTTP here: the routes in
 * control.ts and toolbox.ts call these.
 */
import Docker from 'dockerode'

/** The user commands run as, as on Daytona's default images. */
export const SANDBOX_USER = 'daytona'
/** The user's home, which Daytona's images and docs use. */
export const SANDBOX_HOME = `/home/${SANDBOX_USER}`
/** The working directory commands and relative paths start from. */
export const SANDBOX_WORKDIR = `${SANDBOX_HOME}/workspace`

/** What one exec produced. */
export interface ExecResult {
  exitCode: number
  stdout: Buffer
  stderr: Buffer
  /** stdout and stderr in the order the engine delivered them. */
  combined: Buffer
}

/** One exec request: argv, and optionally user, env, cwd and stdin bytes. */
export interface ExecRequest {
  cmd: string[]
  user?: string
  env?: Record<string, string>
  cwd?: string
  stdin?: Buffer
}

/** A running exec with its stdin open: output chunks as they arrive, and its end. */
export interface LiveExec {
  /** Write to the process's stdin (there is no end-of-input). */
  write(data: Buffer | string): void
  /** Resolves with the exit code once the process ended and its output was delivered. */
  readonly done: Promise<number>
}

/** Root prologue run at every start, for an image without the user or the folder (the daytona image has both; a no-op there). */
const PREPARE_SCRIPT = [
  `id -u ${SANDBOX_USER} >/dev/null 2>&1 || useradd -m -u 1000 -s /bin/bash ${SANDBOX_USER}`,
  `mkdir -p ${SANDBOX_WORKDIR}`,
  `chown ${SANDBOX_USER}:${SANDBOX_USER} ${SANDBOX_HOME} ${SANDBOX_WORKDIR}`,
].join(' && ')

/** The containers behind the sandboxes, all labelled so a test can find what is left. */
export class SandboxEngine {
  readonly docker: Docker

  constructor(
    private readonly labels: Record<string, string>,
    docker?: Docker,
  ) {
    this.docker = docker ?? new Docker()
  }

  /** Create and start a container from a local `image` for a new sandbox; resolves once the user and workdir exist. */
  async create(sandboxId: string, image: string, env: Record<string, string>): Promise<string> {
    const container = await this.docker.createContainer({
      Image: image,
      Cmd: ['sleep', 'infinity'],
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      Labels: { ...this.labels, 'daytona-standin.sandbox': sandboxId },
      WorkingDir: '/',
      HostConfig: { Init: true },
    })
    try {
      await this.start(container.id)
    } catch (error) {
      await this.remove(container.id)
      throw error
    }
    return container.id
  }

  /** Start a stopped container and prepare its user and workdir. */
  async start(containerId: string): Promise<void> {
    const container = this.docker.getContainer(containerId)
    const info = await container.inspect()
    if (!info.State.Running) await container.start()
    const prepared = await this.exec(containerId, { cmd: ['sh', '-c', PREPARE_SCRIPT], user: 'root', cwd: '/' })
    if (prepared.exitCode !== 0) throw new Error(`preparing the sandbox user failed (${prepared.exitCode}): ${prepared.combined.toString()}`)
  }

  /** Stop the container (its filesystem is kept). */
  async stop(containerId: string, force: boolean): Promise<void> {
    const container = this.docker.getContainer(containerId)
    const info = await container.inspect()
    if (!info.State.Running) return
    await container.stop({ t: force ? 0 : 2 })
  }

  /** Remove the container and its anonymous volumes; an already missing one is fine. */
  async remove(containerId: string): Promise<void> {
    try {
      await this.docker.getContainer(containerId).remove({ force: true, v: true })
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode !== 404) throw error
    }
  }

  /** Whether the container is running (false when it is gone). */
  async running(containerId: string): Promise<boolean> {
    try {
      return (await this.docker.getContainer(containerId).inspect()).State.Running
    } catch {
      return false
    }
  }

  /** Run one exec to its end. Defaults: the sandbox user, the workdir. */
  async exec(containerId: string, request: ExecRequest): Promise<ExecResult> {
    const container = this.docker.getContainer(containerId)
    const exec = await container.exec({
      Cmd: request.cmd,
      User: request.user ?? SANDBOX_USER,
      WorkingDir: request.cwd ?? SANDBOX_WORKDIR,
      Env: Object.entries(request.env ?? {}).map(([k, v]) => `${k}=${v}`),
      AttachStdin: request.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    })
    const socket = await exec.start({ hijack: true, stdin: request.stdin !== undefined })
    const frames = new FrameReader()
    socket.on('data', (chunk: Buffer) => frames.push(chunk))
    const ended = new Promise<void>((resolve) => {
      socket.once('end', resolve)
      socket.once('close', resolve)
      socket.on('error', () => resolve())
    })
    if (request.stdin !== undefined) socket.end(request.stdin)
    await ended
    socket.destroy()
    const { ExitCode } = await exec.inspect()
    return { exitCode: ExitCode ?? -1, ...frames.result() }
  }

  /** Start an exec with stdin attached and kept open; `onOutput` gets each stdout (1) or stderr (2) chunk as it arrives. */
  async spawn(containerId: string, request: Omit<ExecRequest, 'stdin'>, onOutput: (stream: 1 | 2, bytes: Buffer) => void): Promise<LiveExec> {
    const exec = await this.docker.getContainer(containerId).exec({
      Cmd: request.cmd,
      User: request.user ?? SANDBOX_USER,
      WorkingDir: request.cwd ?? SANDBOX_WORKDIR,
      Env: Object.entries(request.env ?? {}).map(([k, v]) => `${k}=${v}`),
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    })
    const socket = await exec.start({ hijack: true, stdin: true })
    const frames = new FrameReader(onOutput)
    socket.on('data', (chunk: Buffer) => frames.push(chunk))
    const done = new Promise<void>((resolve) => {
      socket.once('end', resolve)
      socket.once('close', resolve)
      socket.on('error', () => resolve())
    }).then(async () => {
      socket.destroy()
      return (await exec.inspect()).ExitCode ?? -1
    })
    return {
      write: (data) => {
        if (!socket.destroyed) socket.write(data)
      },
      done,
    }
  }
}

/**
 * Reads the engine's multiplexed exec stream: frames of an 8-byte header
 * (stream type in byte 0, big-endian length in bytes 4-7) and a payload;
 * type 1 is stdout, 2 stderr.
 */
class FrameReader {
  private pending: Buffer = Buffer.alloc(0)
  private readonly parts: { stream: 1 | 2; bytes: Buffer }[] = []

  constructor(private readonly onPart?: (stream: 1 | 2, bytes: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    while (this.pending.length >= 8) {
      const length = this.pending.readUInt32BE(4)
      if (this.pending.length < 8 + length) break
      const type = this.pending[0]
      if (type === 1 || type === 2) {
        const bytes = this.pending.subarray(8, 8 + length)
        if (this.onPart) this.onPart(type, bytes)
        else this.parts.push({ stream: type, bytes })
      }
      this.pending = this.pending.subarray(8 + length)
    }
  }

  result(): Omit<ExecResult, 'exitCode'> {
    const of = (stream: 1 | 2) => Buffer.concat(this.parts.filter((p) => p.stream === stream).map((p) => p.bytes))
    return { stdout: of(1), stderr: of(2), combined: Buffer.concat(this.parts.map((p) => p.bytes)) }
  }
}
