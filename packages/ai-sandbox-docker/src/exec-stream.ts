/**
 * One `docker exec` over the Engine API: create, start hijacked, demultiplex
 * stdout/stderr into sinks, report the exit code. Owns the connection's life
 * and its flow control. Invariant: `exit` resolves only after the stream ended
 * and every byte reached the sinks; the exit code then comes from the engine.
 * Design notes: docs/design/docker.md
 */
import type { Duplex } from 'node:stream'
import type Docker from 'dockerode'
import { Demuxer } from './demux.js'
import type { DemuxSinks } from './demux.js'
import { isMissingContainer, statusOf } from './errors.js'

/** What to run. */
export interface ExecRequest {
  /** argv; never a shell string (values travel as arguments, unquoted). */
  cmd: string[]
  /** `uid[:gid]` or a name; `undefined` uses the container's user. */
  user?: string
  /** `NAME=value` entries added to the container's environment. */
  env?: string[]
  /** Attach stdin (the caller writes to `stdin` and must end it). */
  stdin?: boolean
}

/** A started exec. */
export interface RunningExec {
  /** The hijacked connection: write stdin here, `end()` closes the process's stdin. */
  readonly stdin: Duplex
  /**
   * The exit code once the output ended; `null` when the exec or its
   * container vanished (removed while it ran).
   */
  readonly exit: Promise<number | null>
  /** True when the connection ended in the middle of a frame. */
  readonly truncated: () => boolean
  /** Drop the connection (the process keeps running: use a job kill for that). */
  readonly close: () => void
  /**
   * Stop reading the connection (backpressure: the process blocks once the
   * engine's buffers are full) until {@link RunningExec.resume}. While paused,
   * the exec is inspected every {@link PAUSED_PROBE_MS}: once its process is
   * gone the connection is resumed for good, because the engine finishes an
   * exec (and starts no other exec in that container) only after that exec's
   * output is delivered.
   */
  readonly pause: () => void
  /** Read the connection again. */
  readonly resume: () => void
}

/** How often a paused exec is checked for a process that has gone, in ms. */
export const PAUSED_PROBE_MS = 500

/**
 * Create and start an exec in `container`.
 * @throws the engine's error (callers map it with `engineError`).
 */
export async function startExec(container: Docker.Container, request: ExecRequest, sinks: DemuxSinks): Promise<RunningExec> {
  const exec = await container.exec({
    Cmd: request.cmd,
    ...(request.user !== undefined && request.user !== '' ? { User: request.user } : {}),
    ...(request.env && request.env.length > 0 ? { Env: request.env } : {}),
    AttachStdin: request.stdin === true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  })
  const socket = await exec.start({ hijack: true, stdin: request.stdin === true })
  const demux = new Demuxer(sinks)
  socket.on('data', (chunk: Buffer) => demux.push(chunk))
  const ended = new Promise<void>((resolve) => {
    // A write to the stdin of a process that already exited can fail (EPIPE):
    // the output and exit code are still what counts, so every ending resolves.
    socket.once('end', () => resolve())
    socket.once('close', () => resolve())
    socket.on('error', () => resolve())
  })
  const exit = ended.then(async () => {
    socket.destroy()
    return exitCodeOf(exec)
  })
  const flow = pausable(socket, exec, ended)
  return { stdin: socket, exit, truncated: () => demux.truncated, close: () => socket.destroy(), ...flow }
}

/** Pause and resume `socket`, never leaving it paused once the exec's process has gone (see {@link RunningExec.pause}). */
function pausable(socket: Duplex, exec: Docker.Exec, ended: Promise<void>): Pick<RunningExec, 'pause' | 'resume'> {
  let probe: ReturnType<typeof setInterval> | undefined
  let released = false
  const resume = () => {
    clearInterval(probe)
    probe = undefined
    socket.resume()
  }
  void ended.then(() => {
    released = true
    resume()
  })
  const check = async () => {
    try {
      if ((await exec.inspect()).Running) return
    } catch {
      // The exec or its container is gone: nothing is left to hold back.
    }
    released = true
    resume()
  }
  return {
    pause: () => {
      if (released || probe) return
      socket.pause()
      probe = setInterval(() => void check(), PAUSED_PROBE_MS)
      probe.unref()
    },
    resume,
  }
}

/**
 * Ask the engine for the exit code, polling while it still says "running"
 * (the output can end before the process does, e.g. after `exec >&- 2>&-`).
 */
async function exitCodeOf(exec: Docker.Exec): Promise<number | null> {
  let pause = 2
  for (;;) {
    let info: Docker.ExecInspectInfo
    try {
      info = await exec.inspect()
    } catch (error) {
      // The exec (or its whole container) was removed: nothing to report.
      if (statusOf(error) === 404 || isMissingContainer(error)) return null
      throw error
    }
    if (!info.Running) return info.ExitCode ?? null
    await new Promise((resolve) => setTimeout(resolve, pause))
    pause = Math.min(pause * 2, 250)
  }
}
