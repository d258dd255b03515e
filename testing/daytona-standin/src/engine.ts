/**
 * The container side of the stand-in: one Docker container per sandbox
 * (dockerode), its `daytona` user and workdir created by a root exec at each
 * start, `docker exec` runs (with the sandbox's env, stdin, demultiplexed
 * stdout and stderr and the combined output in arrival order, to the end or
 * live), commits of a container to an image and their removal, and the
 * container's bridge address. No HTTP here: the route modules call these.
 */
import { randomUUID } from 'node:crypto'
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

/** The repository committed images are tagged into (`daytona-standin/snapshot:<uuid>`). */
export const COMMIT_REPOSITORY = 'daytona-standin/snapshot'

/** Options of {@link SandboxEngine.create}. */
export interface CreateOptions {
  /** The sandbox's env, given to every exec (not written into the container's config, so a commit does not carry it). */
  env: Record<string, string>
  /** No network at all (`NetworkMode: none`), for `networkBlockAll`. */
  networkBlockAll?: boolean
}

/** Host-side settings of every container, for tests (a Daytona snapshot would have the tools installed; the cloud reaches the internet). */
export interface ContainerSettings {
  /** Bind mounts (`source` on the host, `target` in the container). */
  mounts: { source: string; target: string; readOnly?: boolean }[]
  /** Map `host.docker.internal` to the host's bridge address, so a container reaches a server on the host. */
  hostGateway: boolean
}

/** The containers behind the sandboxes, all labelled so a test can find what is left. */
export class SandboxEngine {
  readonly docker: Docker
  /** Each container's sandbox env, added to every exec in it. */
  private readonly envs = new Map<string, Record<string, string>>()

  constructor(
    private readonly labels: Record<string, string>,
    docker?: Docker,
    private readonly settings: ContainerSettings = { mounts: [], hostGateway: false },
  ) {
    this.docker = docker ?? new Docker()
  }

  /** Create and start a container from a local `image` for a new sandbox; resolves once the user and workdir exist. */
  async create(sandboxId: string, image: string, options: CreateOptions): Promise<string> {
    const container = await this.docker.createContainer({
      Image: image,
      Cmd: ['sleep', 'infinity'],
      Labels: { ...this.labels, 'daytona-standin.sandbox': sandboxId },
      WorkingDir: '/',
      HostConfig: {
        Init: true,
        ...(options.networkBlockAll ? { NetworkMode: 'none' } : {}),
        ...(this.settings.mounts.length > 0 ? { Binds: this.settings.mounts.map((m) => `${m.source}:${m.target}${m.readOnly ? ':ro' : ''}`) } : {}),
        ...(this.settings.hostGateway && !options.networkBlockAll ? { ExtraHosts: ['host.docker.internal:host-gateway'] } : {}),
      },
    })
    this.envs.set(container.id, options.env)
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
    this.envs.delete(containerId)
  }

  /**
   * Commit the container's filesystem to a new local image (paused while it
   * is read), tagged `daytona-standin/snapshot:<uuid>` and carrying the
   * stand-in's labels plus `labels`; resolves with the image id.
   */
  async commit(containerId: string, labels: Record<string, string>): Promise<string> {
    // dockerode puts every option in the query and the body; `_query` and `_body` keep them apart (the body is the image config, whose labels are merged with the container's).
    const options = { _query: { container: containerId, repo: COMMIT_REPOSITORY, tag: randomUUID(), pause: true }, _body: { Labels: { ...this.labels, ...labels } } }
    const { Id } = (await this.docker.getContainer(containerId).commit(options)) as { Id: string }
    return Id
  }

  /** Remove a committed image: `removed` (or already gone), or `in-use` while a container or a child image still needs it. */
  async removeImage(imageId: string): Promise<'removed' | 'in-use'> {
    try {
      await this.docker.getImage(imageId).remove()
      return 'removed'
    } catch (error) {
      const status = (error as { statusCode?: number }).statusCode
      if (status === 404) return 'removed'
      if (status === 409) return 'in-use'
      throw error
    }
  }

  /** The container's address on Docker's default bridge, or `undefined` (no network, not running, gone). */
  async address(containerId: string): Promise<string | undefined> {
    try {
      const { NetworkSettings } = await this.docker.getContainer(containerId).inspect()
      return NetworkSettings.Networks?.bridge?.IPAddress || undefined
    } catch {
      return undefined
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

  /** The exec env: the sandbox's, then the request's. */
  private envOf(containerId: string, extra: Record<string, string> | undefined): string[] {
    return Object.entries({ ...this.envs.get(containerId), ...extra }).map(([k, v]) => `${k}=${v}`)
  }

  /** Run one exec to its end. Defaults: the sandbox user, the workdir. */
  async exec(containerId: string, request: ExecRequest): Promise<ExecResult> {
    const container = this.docker.getContainer(containerId)
    const exec = await container.exec({
      Cmd: request.cmd,
      User: request.user ?? SANDBOX_USER,
      WorkingDir: request.cwd ?? SANDBOX_WORKDIR,
      Env: this.envOf(containerId, request.env),
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
      Env: this.envOf(containerId, request.env),
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
