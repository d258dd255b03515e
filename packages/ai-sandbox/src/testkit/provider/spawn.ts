/**
 * `process.spawn` conformance: streaming stdout/stderr, `wait()`, returning
 * before exit, the end of a job whose background child still holds its
 * output, stdin (`writableStdin`) and killing a whole job (`killableProcesses`),
 * including a `setsid` child. A failing kill check SIGKILLs the pids the job
 * recorded before it reports, so a failing case leaks nothing.
 * Design notes: docs/design/testkit.md
 */
import { describe, expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { SpawnedProcess } from '../../contracts/process.js'
import { describeError, violation, within } from './assert.js'
import { conformanceCase, skippedCase, useSharedSandbox } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { aliveScript, q, readStream, scratch, sh } from './io.js'
import { checkSpawnKillStopsEscapedChild, hasSetsid } from './cancel.js'

/** Run `check`; if it fails, SIGKILL every pid the job recorded in `<dir>/<file>` first (the kit's own cleanup), then rethrow. */
async function killRecordedOnFailure(handle: SandboxHandle, dir: string, check: () => Promise<void>, file = 'pids'): Promise<void> {
  try {
    await check()
  } catch (error) {
    await handle.process.exec(`[ -s ${file} ] && kill -KILL $(cat ${file}) 2>/dev/null; true`, { cwd: dir }).catch(() => undefined)
    throw error
  }
}

/** Drain both streams of a spawned process and wait for it. */
async function finish(child: SpawnedProcess): Promise<{ exitCode: number; signal?: string; stdout: string; stderr: string }> {
  const stdout = readStream(child.stdout, 'stdout')
  const stderr = readStream(child.stderr, 'stderr')
  const exit = await within(child.wait(), 'SpawnedProcess.wait() resolves once the process exits')
  return { ...exit, stdout: await stdout.done, stderr: await stderr.done }
}

/** stdout and stderr stream separately, `wait()` gives the exit code (repeatably), and `pid` is sane when present. */
export async function checkSpawnStreams(handle: SandboxHandle): Promise<void> {
  const child = await handle.process.spawn(`printf 'out ✓'; printf 'err' >&2; exit 7`)
  if (child.pid !== undefined) expect(Number.isInteger(child.pid) && child.pid > 0, `SpawnedProcess.pid is a positive integer when present (got ${child.pid})`).toBe(true)
  const result = await finish(child)
  expect(result.stdout, 'SpawnedProcess.stdout yields the process stdout as UTF-8 text').toBe('out ✓')
  expect(result.stderr, 'SpawnedProcess.stderr yields the process stderr').toBe('err')
  expect(result.exitCode, 'SpawnedProcess.wait() resolves with the exit code (exit 7 -> 7)').toBe(7)
  expect((await child.wait()).exitCode, 'calling wait() again resolves with the same exit').toBe(7)
}

/** 1 MB of spawned output arrives complete. */
export async function checkSpawnLargeOutput(handle: SandboxHandle): Promise<void> {
  const result = await finish(await handle.process.spawn('yes 0123456789abcde | head -c 1048576'))
  expect(result.stdout.length, 'SpawnedProcess.stdout delivers all 1 MB (no truncation)').toBe(1024 * 1024)
  expect(result.exitCode, 'the large-output process exits 0').toBe(0)
}

/**
 * With exec: spawn returns while the process still runs (it waits for a gate
 * file that only exec creates afterwards), and honours `cwd` and `env`.
 */
export async function checkSpawnReturnsBeforeExit(handle: SandboxHandle): Promise<void> {
  const dir = scratch('spawn-gate')
  await sh(handle, `mkdir -p ${q(dir)}`)
  const child = await handle.process.spawn('echo waiting; while [ ! -f gate ]; do sleep 0.1; done; printf "%s" "$CONF_SPAWN_ENV"', {
    cwd: `/workspace/${dir}`,
    env: { CONF_SPAWN_ENV: 'gate opened' },
  })
  const stdout = readStream(child.stdout, 'stdout')
  readStream(child.stderr, 'stderr')
  await stdout.until('waiting', 'SpawnedProcess.stdout streams output while the process is still running')
  await sh(handle, `touch ${q(`${dir}/gate`)}`)
  const exit = await within(child.wait(), 'SpawnedProcess.wait() resolves once the process exits')
  expect(exit.exitCode, 'spawn returned before the process exited, and it exits 0 once released').toBe(0)
  expect(await stdout.done, 'spawn({ cwd: "/workspace/<dir>", env }) runs in that directory with that env').toBe('waiting\ngate opened')
}

/** With writableStdin: `stdin.write` (text and bytes) reaches the process and `end()` closes it. */
export async function checkSpawnStdin(handle: SandboxHandle): Promise<void> {
  const child = await handle.process.spawn('cat')
  const stdout = readStream(child.stdout, 'stdout')
  readStream(child.stderr, 'stderr')
  await child.stdin.write('hello\n')
  await stdout.until('hello\n', 'stdin.write reaches a running process (cat echoes it before stdin ends)')
  await child.stdin.write(new TextEncoder().encode('wörld\n'))
  await child.stdin.end()
  const exit = await within(child.wait(), 'stdin.end() closes stdin, so cat exits and wait() resolves')
  expect(await stdout.done, 'stdin.write of text and bytes reaches the process unchanged').toBe('hello\nwörld\n')
  expect(exit.exitCode, 'stdin.end() closes stdin, so cat exits 0').toBe(0)
}

/**
 * With killableProcesses and exec: `kill()` stops a job and every process it
 * started (two background sleeps under a nested shell), `wait()` resolves,
 * and no pid of the job is still running afterwards.
 */
export async function checkSpawnKillJob(handle: SandboxHandle): Promise<void> {
  const dir = scratch('spawn-kill')
  await sh(handle, `mkdir -p ${q(dir)}`)
  const job = await handle.process.spawn(
    `echo $$ >> pids; sh -c 'sleep 300 & echo $! >> pids; sleep 300 & echo $! >> pids; echo $$ >> pids; echo started; wait'`,
    { cwd: dir },
  )
  const stdout = readStream(job.stdout, 'stdout')
  readStream(job.stderr, 'stderr')
  await killRecordedOnFailure(handle, dir, async () => {
    await stdout.until('started', 'a spawned job prints "started" while it runs')
    await within(
      job.kill().catch((error: unknown) => violation('SpawnedProcess.kill() resolves', `it threw ${describeError(error)}`)),
      'SpawnedProcess.kill() resolves once the job is gone',
    )
    const pids = (await sh(handle, `cat pids`, { cwd: dir })).stdout.split('\n').filter(Boolean)
    expect(pids.length, 'the job recorded its pids (outer shell, inner shell, two sleeps)').toBeGreaterThanOrEqual(4)
    const alive = await sh(handle, aliveScript(pids))
    expect(alive.stdout.trim(), 'after kill() resolves nothing of the job is left: these pids still run').toBe('')
    const exit = await within(job.wait(), 'wait() resolves after kill() (the job and its output pipes are gone)')
    expect(exit.exitCode, 'a killed process reports a non-zero exit (128+N for signal N)').not.toBe(0)
    await job.kill().catch((error: unknown) => violation('SpawnedProcess.kill() is safe to call more than once', `second kill threw ${describeError(error)}`))
  })
}

/**
 * With killableProcesses and exec: `kill()` also stops a child that left the
 * job's process group (and session) with `setsid`, as daemonising tools do;
 * "everything it started" includes it. Needs `setsid` in the sandbox.
 */
export async function checkSpawnKillSetsidChild(handle: SandboxHandle): Promise<void> {
  const dir = scratch('spawn-kill-setsid')
  await sh(handle, `mkdir -p ${q(dir)}`)
  const inner = `echo $$ >> pids; [ "$(cut -d' ' -f5 /proc/$$/stat)" = "$$" ] && echo left-group; echo started; exec sleep 812`
  const job = await handle.process.spawn(`echo $$ >> pids; sleep 811 & echo $! >> pids; setsid sh -c ${q(inner)} & wait`, { cwd: dir })
  const stdout = readStream(job.stdout, 'stdout')
  readStream(job.stderr, 'stderr')
  await killRecordedOnFailure(handle, dir, async () => {
    await stdout.until('started', 'a spawned job prints "started" once its setsid child runs')
    await within(
      job.kill().catch((error: unknown) => violation('SpawnedProcess.kill() resolves', `it threw ${describeError(error)}`)),
      'SpawnedProcess.kill() resolves once the job is gone',
    )
    const pids = (await sh(handle, `cat pids`, { cwd: dir })).stdout.split('\n').filter(Boolean)
    expect(pids.length, 'the job recorded its pids (shell, sleep, setsid child)').toBe(3)
    const alive = await sh(handle, aliveScript(pids))
    expect(alive.stdout.trim(), 'after kill() resolves no process the job started is left, not even one that called setsid: these pids still run').toBe('')
    await within(job.wait(), 'wait() resolves after kill()')
    expect(await stdout.done, 'the setsid child really left the job\'s process group (else this case proves nothing)').toContain('left-group')
  })
}

/**
 * With killableProcesses and exec: a job ends when its shell exits, even
 * though a background child it started (`sleep 813 &`, as a dev server would
 * be) still holds stdout and stderr: both streams end with everything the
 * shell wrote, and `wait()` resolves with the shell's exit code. The child
 * keeps running until `kill()`, which still stops it after the shell is gone.
 */
export async function checkSpawnEndsWhenShellExits(handle: SandboxHandle): Promise<void> {
  const dir = scratch('spawn-bg-output')
  await sh(handle, `mkdir -p ${q(dir)}`)
  const job = await handle.process.spawn('echo before; sleep 813 & echo $! > pid; echo after; echo err >&2; exit 3', { cwd: dir })
  const stdout = readStream(job.stdout, 'stdout')
  const stderr = readStream(job.stderr, 'stderr')
  let ended: { exitCode: number; stdout: string; stderr: string }
  try {
    const exit = await within(job.wait(), 'SpawnedProcess.wait() resolves once the shell exits, even while a background child it started still holds stdout and stderr')
    ended = {
      exitCode: exit.exitCode,
      stdout: await within(stdout.done, 'SpawnedProcess.stdout ends once the shell exits, even while a background child still holds it'),
      stderr: await within(stderr.done, 'SpawnedProcess.stderr ends once the shell exits, even while a background child still holds it'),
    }
  } catch (error) {
    await job.kill().catch(() => undefined) // the check already failed; stop the job so it leaks nothing
    throw error
  }
  await killRecordedOnFailure(
    handle,
    dir,
    async () => {
      const pid = (await sh(handle, 'cat pid', { cwd: dir })).stdout.trim()
      const aliveBefore = (await sh(handle, aliveScript([pid]))).stdout.trim()
      await within(
        job.kill().catch((error: unknown) => violation('SpawnedProcess.kill() resolves after the shell exited', `it threw ${describeError(error)}`)),
        'SpawnedProcess.kill() resolves once the job (the background child) is gone',
      )
      const aliveAfter = (await sh(handle, aliveScript([pid]))).stdout.trim()
      expect(ended, 'a job whose background child holds its output ends with the shell: everything the shell wrote, and its exit code').toEqual({ exitCode: 3, stdout: 'before\nafter\n', stderr: 'err\n' })
      expect(aliveBefore, 'the background child keeps running after the shell exited (until kill() or destroy())').toBe(pid)
      expect(aliveAfter, 'kill() after the shell exited still stops the background child it left: this pid still runs').toBe('')
    },
    'pid',
  )
}

/** With killableProcesses: `kill()` after the process exited resolves. */
export async function checkSpawnKillAfterExit(handle: SandboxHandle): Promise<void> {
  const child = await handle.process.spawn('true')
  await finish(child)
  await child.kill().catch((error: unknown) => violation('SpawnedProcess.kill() after exit resolves (safe to call any time)', `it threw ${describeError(error)}`))
}

/** Register the spawn group. */
export function registerSpawnConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  const { capabilities: caps } = ctx
  describe('spawn', () => {
    const sandbox = useSharedSandbox(getContext)
    const run = (title: string, check: (h: SandboxHandle) => Promise<void>) => conformanceCase(ctx, title, () => check(sandbox()))
    run('streams stdout and stderr; wait() gives the exit code', checkSpawnStreams)
    run('1 MB of output is not truncated', checkSpawnLargeOutput)
    if (caps.exec) run('returns before the process exits; honours cwd and env', checkSpawnReturnsBeforeExit)
    else skippedCase('spawn: returns before exit', 'the gate file is created with exec, and capabilities().exec is false')
    if (caps.writableStdin) run('stdin.write and end reach the process (cat echoes)', checkSpawnStdin)
    if (caps.killableProcesses) {
      run('kill() after exit resolves', checkSpawnKillAfterExit)
      if (caps.exec) {
        run('ends when the shell exits though a background child holds its output; kill() still stops that child', checkSpawnEndsWhenShellExits)
        run('kill() stops the job and every process it started', checkSpawnKillJob)
        conformanceCase(ctx, 'kill() also stops a child that left the process group with setsid', async ({ skip }) => {
          const handle = sandbox()
          if ((await handle.process.exec('command -v setsid')).exitCode !== 0) skip('setsid not found in the sandbox')
          await checkSpawnKillSetsidChild(handle)
        })
        conformanceCase(ctx, 'kill() stops every process of ( setsid sleep & ) ; sleep, whose setsid child\'s parent already exited, also after cd /', async ({ skip }) => {
          const handle = sandbox()
          if (!(await hasSetsid(handle))) skip('setsid not found in the sandbox')
          await checkSpawnKillStopsEscapedChild(handle)
        })
      } else skippedCase('spawn: kill leaves nothing behind, ends with the shell', 'the leftover-pid probe uses exec, and capabilities().exec is false')
    }
  })
}
