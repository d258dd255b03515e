/**
 * The race swapper on the host side: when the race folder the kit made
 * through `exec` is also visible from the kit's host at the same absolute
 * path, the kit swaps the folder from a worker thread in its own process
 * instead of from a shell loop inside the sandbox.
 * Design notes: docs/design/testkit.md
 */
import { randomUUID } from 'node:crypto'
import { readFileSync, rmSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import type { SandboxHandle } from '../../contracts/handle.js'
import { q } from './io.js'

/** The name of the probe file the kit writes through `exec` in a race folder, to find it on the host. */
const PROBE = 'host-probe'

/** A shell command (run in the sandbox's workspace) writing the probe of race folder `dir`; returns the token it wrote. */
export function hostProbe(dir: string): { command: string; token: string } {
  const token = randomUUID()
  return { command: `printf '%s' ${q(token)} > ${q(`${dir}/${PROBE}`)}`, token }
}

/**
 * The host path of the workspace-relative race folder `dir` when the host
 * where the kit runs sees it at the same absolute path (the probe written
 * through `exec` reads back with `node:fs` there), else `undefined`. The
 * probe is removed on the host.
 */
export function hostRaceFolder(handle: SandboxHandle, dir: string, token: string): string | undefined {
  if (!isAbsolute(handle.workspaceRoot)) return undefined
  const folder = join(handle.workspaceRoot, dir)
  try {
    if (readFileSync(join(folder, PROBE), 'utf8') !== token) return undefined
  } catch {
    return undefined
  }
  rmSync(join(folder, PROBE), { force: true })
  return folder
}

/** A running host swapper. */
export interface HostSwapper {
  /** Stop the loop (it ends with the real folder in place when it can), and resolve with the number of swaps it made. */
  stop: () => Promise<number>
}

/**
 * The longest a state (the folder, the link) is held, ms. Measured on a
 * 2-CPU host against a check-then-act write (realpath, lstat, writeFile,
 * rename): holding each state asleep for a random 0 to 0.1 ms put 5 to 190
 * temp files outside per 1 000 calls; no hold (a swap every ~80 µs, the
 * worker busy) 0 to 21; a busy-waiting hold fewer still, since it takes the
 * CPU from the raced calls. A setImmediate loop on the kit's own thread
 * (no hold) found 3 and 41 in 2 s where the worker found 92 and 108.
 */
const HOLD_MS = 0.1

/**
 * The loop the worker runs (CommonJS, `eval`): flip `<folder>/d` between the
 * real folder and a symlink to `canary` until the stop flag is set. A raced
 * call that creates `d` while it is briefly missing (write and mkdir create
 * parents) would jam the flipping, so such a folder is moved aside
 * (`stray<n>`), as the shell swapper does. Every call is synchronous and
 * every failure is ignored: the raced calls change the folder meanwhile.
 * Each state is held for a random moment up to {@link HOLD_MS}, so windows
 * of many widths are hit.
 */
const WORKER = `
const { renameSync, symlinkSync, unlinkSync } = require('node:fs')
const { workerData } = require('node:worker_threads')
const { folder, canary, flags, holdMs } = workerData
// Hold a state for a random moment up to holdMs, asleep (the raced calls need the CPU); a stop wakes it at once.
const hold = () => Atomics.wait(flags, 0, 0, Math.random() * holdMs)
const d = folder + '/d'
const real = folder + '/real'
const attempt = (step) => { try { step(); return true } catch { return false } }
let n = 0
while (Atomics.load(flags, 0) === 0) {
  n++
  attempt(() => renameSync(d, real))
  attempt(() => symlinkSync(canary, d))
  hold()
  attempt(() => unlinkSync(d))
  if (!attempt(() => renameSync(real, d))) {
    attempt(() => renameSync(d, folder + '/stray' + n))
    attempt(() => renameSync(real, d))
  }
  hold()
}
Atomics.store(flags, 1, n)
`

/**
 * Start swapping `<folder>/d` for a symlink to `canary` in a worker thread.
 * @param folder - The race folder's host path (from {@link hostRaceFolder}).
 * @param canary - The outside folder's absolute path.
 * @returns The swapper, once its thread runs; call `stop()` in a `finally`.
 */
export async function startHostSwapper(folder: string, canary: string): Promise<HostSwapper> {
  const flags = new Int32Array(new SharedArrayBuffer(8))
  const worker = new Worker(WORKER, { eval: true, workerData: { folder, canary, flags, holdMs: HOLD_MS } })
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
  worker.on('error', () => undefined) // a failed loop only means fewer swaps; the stop below still ends it
  await new Promise<void>((resolve) => {
    worker.once('online', resolve)
    void exited.then(resolve)
  })
  return {
    stop: async () => {
      Atomics.store(flags, 0, 1)
      Atomics.notify(flags, 0)
      const late = setTimeout(() => void worker.terminate(), 5_000)
      await exited
      clearTimeout(late)
      return Atomics.load(flags, 1)
    },
  }
}
