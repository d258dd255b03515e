/**
 * Benchmark (i): survivors of a cancel. A command shaped like
 * `( setsid sleep 300.N & ) ; sleep 301.N` leaves a child that is in a new
 * session and whose parent already exited, so no process-tree walk finds it;
 * the second shape also does `cd /` in that child, so no working-directory
 * sweep finds it either. Each shape is cancelled `iterations` times by each of
 * exec's AbortSignal, exec's `timeoutMs`, spawn's `kill()` and
 * `handle.destroy()`, on local-process and (when the engine answers) Docker,
 * and the bench counts the `sleep 300.N` processes still running afterwards
 * (goal: 0). Processes are found on this machine's `/proc` by their unique
 * argument, so a Docker engine must run here. Every survivor is SIGKILLed
 * after it was counted, and every sandbox is destroyed.
 */
import { randomInt } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { BenchError } from './stats.js'

/** The two command shapes. */
export type CancelShape = 'setsid child' | 'setsid child, cd /'
/** The four ways of cancelling. */
export type CancelKind = 'exec abort' | 'exec timeoutMs' | 'spawn kill()' | 'handle.destroy()'

/** One row: survivors of `iterations` cancels of one shape by one kind on one provider. */
export interface CancelSurvivorRow {
  readonly provider: string
  readonly shape: CancelShape
  readonly cancel: CancelKind
  readonly iterations: number
  /** Iterations whose setsid child was seen running before the cancel (the others prove nothing). */
  readonly started: number
  /** `sleep 300.N` and `sleep 301.N` processes still running after the cancel resolved, summed over the iterations. */
  readonly survivors: number
  /** Why the row did not run. */
  readonly skipped?: string
}

const SHAPES: readonly CancelShape[] = ['setsid child', 'setsid child, cd /']
const KINDS: readonly CancelKind[] = ['exec abort', 'exec timeoutMs', 'spawn kill()', 'handle.destroy()']
/** `timeoutMs` of the timed-out exec, ms: long enough for the child to start, even through `docker exec`. */
const TIMEOUT_MS = 600
/** Longest wait for the setsid child to appear, ms (a hang guard). */
const START_BOUND_MS = 10_000

/** The command of `shape` for the unique suffix `n`: its escaping child runs `sleep 300.<n>`, its shell `sleep 301.<n>`. */
export function cancelShapeCommand(shape: CancelShape, n: number): string {
  const child = shape === 'setsid child' ? `setsid sleep 300.${n}` : `cd / && setsid sleep 300.${n}`
  return `( ${child} </dev/null >/dev/null 2>&1 & ) ; sleep 301.${n}`
}

/**
 * Count survivors of every shape and cancel on local-process and Docker.
 *
 * @param localProvider - A local-process provider.
 * @param options.iterations - Cancels per row. Default 100.
 * @param options.dockerImage - Image of the Docker rows. Default `tanstack-sandbox-busybox:latest`.
 * @throws BenchError `bench-failed` when a cancel does not reject as the contract says.
 */
export async function benchCancelSurvivors(localProvider: SandboxProvider, options: { iterations?: number; dockerImage?: string } = {}): Promise<CancelSurvivorRow[]> {
  const { iterations = 100, dockerImage = 'tanstack-sandbox-busybox:latest' } = options
  const rows = await measureProvider('local-process', localProvider, iterations)
  const docker = dockerSandbox({ image: dockerImage, labels: { 'tanstack-bench': 'cancel-survivors' }, killGraceMs: 500 })
  try {
    rows.push(...(await measureProvider(`docker ${dockerImage}`, docker, iterations)))
  } catch (error) {
    if (error instanceof BenchError) throw error
    const skipped = (error as Error).message.split('\n')[0]
    for (const shape of SHAPES) for (const cancel of KINDS) rows.push({ provider: `docker ${dockerImage}`, shape, cancel, iterations: 0, started: 0, survivors: 0, skipped })
  }
  return rows
}

async function measureProvider(name: string, provider: SandboxProvider, iterations: number): Promise<CancelSurvivorRow[]> {
  const rows: CancelSurvivorRow[] = []
  const shared = await provider.create()
  try {
    for (const shape of SHAPES) {
      for (const cancel of KINDS) {
        let started = 0
        let survivors = 0
        for (let i = 0; i < iterations; i++) {
          const n = randomInt(1e9)
          const handle = cancel === 'handle.destroy()' ? await provider.create() : shared
          started += (await cancelOnce(handle, cancel, cancelShapeCommand(shape, n), `300.${n}`)) ? 1 : 0
          const left = [...processesWithArg(`300.${n}`), ...processesWithArg(`301.${n}`)]
          survivors += left.length
          for (const pid of left) killQuietly(pid)
        }
        rows.push({ provider: name, shape, cancel, iterations, started, survivors })
      }
    }
  } finally {
    await shared.destroy()
  }
  return rows
}

/** Start `command`, wait for its setsid child, cancel it; true when the child was seen before the cancel. */
async function cancelOnce(handle: SandboxHandle, cancel: CancelKind, command: string, arg: string): Promise<boolean> {
  if (cancel === 'exec abort') {
    const controller = new AbortController()
    const run = handle.process.exec(command, { signal: controller.signal })
    run.catch(() => undefined)
    const seen = await appeared(arg, run)
    controller.abort()
    await expectRejection(run, 'aborted', cancel)
    return seen
  }
  if (cancel === 'exec timeoutMs') {
    const run = handle.process.exec(command, { timeoutMs: TIMEOUT_MS })
    run.catch(() => undefined)
    const seen = await appeared(arg, run)
    await expectRejection(run, 'timeout', cancel)
    return seen
  }
  const job = await handle.process.spawn(command)
  void job.wait().catch(() => undefined)
  const seen = await appeared(arg, job.wait())
  if (cancel === 'spawn kill()') await job.kill()
  else await handle.destroy()
  return seen
}

/** Poll until a process with `arg` runs (true) or `settled` settles first (false). */
async function appeared(arg: string, settled: Promise<unknown>): Promise<boolean> {
  let done = false
  void settled.then(
    () => (done = true),
    () => (done = true),
  )
  const deadline = Date.now() + START_BOUND_MS
  while (!done && Date.now() < deadline) {
    if (processesWithArg(arg).length > 0) return true
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return false
}

async function expectRejection(run: Promise<unknown>, reason: string, cancel: CancelKind): Promise<void> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e as { reason?: string },
  )
  if (error?.reason !== reason) throw new BenchError(`${cancel}: expected the exec to reject with reason "${reason}", got ${error ? String(error.reason) : 'a result'}`)
}

/** Live processes on this machine (containers included) with `arg` as one of their arguments. */
export function processesWithArg(arg: string): number[] {
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').split('\0').includes(arg)) pids.push(Number(name))
    } catch {
      // exited meanwhile
    }
  }
  return pids
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // already gone
  }
}
