/**
 * Cancel conformance: no process outlives its cancel. Each check cancels a
 * command that leaves a `setsid` child whose parent already exited (exec's
 * AbortSignal, exec's `timeoutMs`, spawn's `kill()`, `handle.destroy()`),
 * then looks for it in `/proc/<pid>/cmdline`. The kit then SIGKILLs every
 * process it started, so a failing case leaks nothing.
 * Design notes: docs/design/testkit.md
 */
import { randomInt } from 'node:crypto'
import { expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { ProviderConformanceContext } from './context.js'
import { describeError, expectSandboxError, violation, within } from './assert.js'
import { q, readStream, sh } from './io.js'

/** The two command shapes: a setsid child whose parent exited, and the same child after `cd /`. */
export type EscapeShape = 'setsid' | 'setsid after cd /'

/** Every shape the cancel checks run. */
export const ESCAPE_SHAPES: readonly EscapeShape[] = ['setsid', 'setsid after cd /']

/** One escaping command and the unique `sleep` arguments of its two processes. */
export interface EscapingCommand {
  readonly shape: EscapeShape
  readonly command: string
  /** `300.N` (the escaped child) and `301.N` (the job's own sleep). */
  readonly args: readonly [string, string]
}

/** `timeoutMs` of the timed-out exec, ms: long enough for the child to start through any provider's exec. */
const CANCEL_TIMEOUT_MS = 1000

/** A fresh command of `shape` with unique sleep arguments. */
export function escapingCommand(shape: EscapeShape): EscapingCommand {
  const n = randomInt(1e9)
  const child = `${shape === 'setsid after cd /' ? 'cd / && ' : ''}setsid sleep 300.${n}`
  return { shape, command: `( ${child} </dev/null >/dev/null 2>&1 & ) ; sleep 301.${n}`, args: [`300.${n}`, `301.${n}`] }
}

/**
 * A shell script printing the pid of every live process that has one of
 * `args` as a whole argument, one a line, or `no-proc`. Zombies have no
 * command line. The patterns are written with `[.]`, so the script's own
 * grep never matches itself. GNU and BusyBox grep both work.
 */
export function processesWithArgsScript(args: readonly string[]): string {
  const patterns = args.map((arg) => `-e ${q(arg.replace(/\./g, '[.]'))}`).join(' ')
  return [
    '[ -r /proc/self/cmdline ] || { echo no-proc; exit 0; }',
    `grep -l -z -x ${patterns} /proc/[0-9]*/cmdline 2>/dev/null | sed -n 's#^/proc/\\([0-9][0-9]*\\)/cmdline$#\\1#p'`,
    'true',
  ].join('\n')
}

/** Pids of live processes with one of `args`, as `observer` sees them; `null` without `/proc`. */
export async function processesWithArgs(observer: SandboxHandle, args: readonly string[]): Promise<string[] | null> {
  const out = (await sh(observer, processesWithArgsScript(args))).stdout.trim()
  if (out === 'no-proc') return null
  return out.split('\n').filter(Boolean)
}

/** SIGKILL every process with one of `args` (the kit's own cleanup); never throws. */
export async function killProcessesWithArgs(observer: SandboxHandle, args: readonly string[]): Promise<void> {
  await observer.process.exec(`for p in $(${processesWithArgsScript(args)}); do kill -KILL "$p" 2>/dev/null; done; true`).catch(() => undefined)
}

/**
 * Wait until the escaped child of `escape` runs (seen through `observer`);
 * fails as setup when `settled` (the command's own promise) settles first or
 * it never appears. Resolves `false` without `/proc`.
 */
async function started(observer: SandboxHandle, escape: EscapingCommand, settled: Promise<unknown>): Promise<boolean> {
  let outcome: string | undefined
  void settled.then(
    () => (outcome = 'it resolved'),
    (error: unknown) => (outcome = `it threw ${describeError(error)}`),
  )
  const poll = async (): Promise<boolean> => {
    for (;;) {
      const found = await processesWithArgs(observer, [escape.args[0]])
      if (found === null) return false
      if (found.length > 0) return true
      if (outcome !== undefined) violation('conformance setup: the escaping command starts its setsid child', `before sleep ${escape.args[0]} appeared, ${outcome} (is setsid working in the sandbox?)`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  return within(poll(), `conformance setup: the setsid child (sleep ${escape.args[0]}) of ${escape.command} starts`)
}

/**
 * Run `cancel` on fresh escaping commands, `iterations` times per shape, and
 * after each one fail naming `rule` when a process of it still runs. The
 * processes are SIGKILLed (through `observer`) before any failure propagates.
 */
async function eachCancel(
  observer: () => SandboxHandle,
  iterations: number,
  rule: string,
  cancel: (escape: EscapingCommand) => Promise<boolean>,
): Promise<void> {
  for (const shape of ESCAPE_SHAPES) {
    for (let i = 0; i < iterations; i++) {
      const escape = escapingCommand(shape)
      try {
        if (!(await cancel(escape))) return // no /proc: nothing can be looked at
        const left = await processesWithArgs(observer(), escape.args)
        expect(left, `${rule} (shape ${JSON.stringify(escape.command)}): these pids still run`).toEqual([])
      } finally {
        await killProcessesWithArgs(observer(), escape.args)
      }
    }
  }
}

/**
 * With exec: aborting `exec({ signal })` stops every process the command
 * started, also a setsid child whose parent already exited (and one that did
 * `cd /`), and exec rejects with reason `aborted`.
 */
export async function checkExecAbortStopsEscapedChild(handle: SandboxHandle, iterations = 2): Promise<void> {
  await eachCancel(() => handle, iterations, 'aborting process.exec stops every process the command started', async (escape) => {
    const controller = new AbortController()
    const run = handle.process.exec(escape.command, { signal: controller.signal })
    run.catch(() => undefined)
    if (!(await started(handle, escape, run))) return abandon(controller, run)
    controller.abort()
    await expectSandboxError(() => within(run, 'process.exec settles after its AbortSignal fired'), 'an aborted process.exec rejects with a SandboxError reason "aborted"', 'aborted')
    return true
  })
}

/**
 * With exec: `exec({ timeoutMs })` stops every process the command started
 * when the time is up, also a setsid child whose parent already exited, and
 * rejects with reason `timeout`.
 */
export async function checkExecTimeoutStopsEscapedChild(handle: SandboxHandle, iterations = 2): Promise<void> {
  await eachCancel(() => handle, iterations, 'process.exec({ timeoutMs }) stops every process the command started', async (escape) => {
    const run = handle.process.exec(escape.command, { timeoutMs: CANCEL_TIMEOUT_MS })
    run.catch(() => undefined)
    const seen = await started(handle, escape, run)
    await expectSandboxError(() => within(run, 'process.exec settles once timeoutMs passed'), 'a timed-out process.exec rejects with a SandboxError reason "timeout"', 'timeout')
    return seen
  })
}

/**
 * With killableProcesses and exec: `kill()` of a spawned job stops every
 * process it started, also a setsid child whose parent already exited, and
 * `wait()` resolves.
 */
export async function checkSpawnKillStopsEscapedChild(handle: SandboxHandle, iterations = 2): Promise<void> {
  await eachCancel(() => handle, iterations, 'SpawnedProcess.kill() stops every process the job started', async (escape) => {
    const job = await handle.process.spawn(escape.command)
    readStream(job.stdout, 'stdout')
    readStream(job.stderr, 'stderr')
    const waited = job.wait()
    waited.catch(() => undefined)
    const seen = await started(handle, escape, waited)
    await within(
      job.kill().catch((error: unknown) => violation('SpawnedProcess.kill() resolves', `it threw ${describeError(error)}`)),
      'SpawnedProcess.kill() resolves once the job is gone',
    )
    await within(waited, 'wait() resolves after kill()')
    return seen
  })
}

/**
 * With exec: `handle.destroy()` stops every process the sandbox started,
 * also a setsid child whose parent already exited and that did `cd /`. The
 * command runs through `spawn` when advertised (else in the background of an
 * exec); survivors are looked for from a second sandbox, which sees them
 * where the provider's processes share one process table (local-process);
 * where it does not (containers), the check cannot see and the removal of the
 * sandbox is what it relies on, and one round is run.
 */
export async function checkDestroyStopsEscapedChildren(ctx: ProviderConformanceContext, iterations = 2): Promise<void> {
  const observer = await ctx.create({ labels: { purpose: 'conformance-cancel-observer' } })
  await eachCancel(() => observer, iterations, 'handle.destroy() stops every process of the sandbox', async (escape) => {
    const handle = await ctx.create()
    let settled: Promise<unknown>
    if (ctx.capabilities.backgroundProcesses) {
      const job = await handle.process.spawn(escape.command)
      readStream(job.stdout, 'stdout')
      readStream(job.stderr, 'stderr')
      settled = job.wait()
    } else {
      await sh(handle, `sh -c ${q(escape.command)} >/dev/null 2>&1 &`)
      settled = new Promise(() => undefined)
    }
    settled.catch(() => undefined)
    let visible: boolean
    try {
      if (!(await started(handle, escape, settled))) return false
      visible = ((await processesWithArgs(observer, [escape.args[0]])) ?? []).length > 0
    } catch (error) {
      await killProcessesWithArgs(handle, escape.args)
      throw error
    }
    await within(
      handle.destroy().catch((error: unknown) => violation('handle.destroy() resolves', `it threw ${describeError(error)}`)),
      'handle.destroy() resolves once the sandbox is gone',
    )
    // A second sandbox that cannot see the first one's processes (own process table) cannot look: one round is enough.
    return visible
  })
}

/** No `/proc`: stop the command the usual way and report "could not look". */
async function abandon(controller: AbortController, run: Promise<unknown>): Promise<boolean> {
  controller.abort()
  await run.catch(() => undefined)
  return false
}

/** True when `setsid` is on the sandbox's PATH (the cancel checks need it; callers skip without it). */
export async function hasSetsid(handle: SandboxHandle): Promise<boolean> {
  return (await handle.process.exec('command -v setsid')).exitCode === 0
}
