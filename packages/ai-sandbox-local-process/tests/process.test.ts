// process of the local-process provider: exec results, spawn streaming and
// stdin, group kills (TERM, escalation to KILL, abort, timeout) checked
// against `ps` so nothing of a job survives, and the inherited job and sandbox
// markers that let kill and destroy reach a child that left the group and
// tree (`( setsid sleep & )`).
import { randomInt } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { readFile, realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError, SandboxPathError } from '@tanstack/ai-sandbox'
import { TextStream } from '../src/text-stream.js'
import { collect, liveGroupMembers, rejectionOf, useTempRoot, waitFor } from './helpers/temp-root.js'

const temp = useTempRoot()

/** True while `pid` runs (a zombie has exited). */
function liveProcess(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!)
  } catch {
    return false
  }
}

/** Live processes on this machine with `arg` as one of their arguments (the unique `sleep 300.N` of a case). */
function processesWithArg(arg: string): number[] {
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

/** SIGKILL whatever a failed case left, then report it. */
function killAll(pids: readonly number[]): readonly number[] {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  return pids
}

/** A unique `sleep` argument and the command whose setsid child (after `cd /` if asked) sleeps with it while its parent is gone. */
function escapingCommand(cdRoot = false): { arg: string; command: string } {
  const arg = `300.${randomInt(1e9)}`
  return { arg, command: `( ${cdRoot ? 'cd / && ' : ''}setsid sleep ${arg} </dev/null >/dev/null 2>&1 & ) ; sleep 301` }
}

/** Read a pid the command wrote to `file` in the workspace, waiting until it is there. */
async function pidFrom(workspaceRoot: string, file: string): Promise<number> {
  let pid = 0
  await waitFor(async () => {
    pid = Number((await readFile(join(workspaceRoot, file), 'utf8').catch(() => '')).trim())
    return pid > 0
  }, `${file} to hold a pid`)
  return pid
}

describe('exec', () => {
  it('returns exit codes, stdout and stderr, and 128+N for a signal death', async () => {
    const handle = await temp.create()
    expect(await handle.process.exec('echo out; echo err >&2')).toEqual({ exitCode: 0, stdout: 'out\n', stderr: 'err\n' })
    expect((await handle.process.exec('exit 3')).exitCode).toBe(3)
    expect((await handle.process.exec('kill -9 $$')).exitCode).toBe(137)
    expect((await handle.process.exec('printf "%s" "é€𝄞"')).stdout).toBe('é€𝄞')
  })

  it('maps cwd onto the workspace and refuses a missing or outside one', async () => {
    const handle = await temp.create()
    await handle.fs.mkdir('sub/dir')
    expect((await handle.process.exec('pwd')).stdout.trim()).toBe(await realpath(handle.workspaceRoot))
    expect((await handle.process.exec('pwd', { cwd: 'sub/dir' })).stdout.trim()).toBe(join(handle.workspaceRoot, 'sub/dir'))
    expect((await handle.process.exec('pwd', { cwd: '/workspace/sub' })).stdout.trim()).toBe(join(handle.workspaceRoot, 'sub'))
    const missing = await rejectionOf(handle.process.exec('pwd', { cwd: 'nope' }))
    expect(missing).toBeInstanceOf(SandboxPathError)
    expect(missing.reason).toBe('not-found')
    expect((await rejectionOf(handle.process.exec('pwd', { cwd: '/tmp' }))).reason).toBe('escape')
  })

  it('merges host env, sandbox env and per-call env, in that order', async () => {
    const handle = await temp.create()
    await handle.env.set({ SANDBOX_ONLY: 'sandbox', OVERRIDDEN: 'sandbox' })
    const result = await handle.process.exec('printf "%s|%s|%s|%s" "$SANDBOX_ONLY" "$OVERRIDDEN" "$CALL_ONLY" "${PATH:+has-path}"', {
      env: { OVERRIDDEN: 'call', CALL_ONLY: 'call' },
    })
    expect(result.stdout).toBe('sandbox|call|call|has-path')
  })

  it('feeds stdin and closes it; without stdin the command sees EOF', async () => {
    const handle = await temp.create()
    expect((await handle.process.exec('cat', { stdin: 'hello\nworld' })).stdout).toBe('hello\nworld')
    expect(await handle.process.exec('cat; echo done')).toMatchObject({ exitCode: 0, stdout: 'done\n' })
  })

  it('kills the group and rejects with reason timeout', async () => {
    const handle = await temp.create()
    const run = handle.process.exec('echo $$ > pid; sleep 300 & sleep 300', { timeoutMs: 300 })
    const pgid = await pidFrom(handle.workspaceRoot, 'pid')
    const error = await rejectionOf(run)
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('timeout')
    expect(error.message).toContain('timed out')
    expect(liveGroupMembers(pgid)).toBe(0)
  })

  it('kill() outpaces a loop that ignores TERM and respawns setsid children (review finding)', async () => {
    const handle = await temp.create({ killGraceMs: 200 })
    const arg = `77.${randomInt(1e9)}`
    // Each respawned child is a new session that ignores TERM; the loop starts one every 50 ms.
    const child = await handle.process.spawn(`( setsid sh -c 'trap "" TERM HUP; while :; do setsid sh -c "trap \\"\\" TERM; sleep ${arg}" & sleep 0.05; done' & ) ; sleep 301`)
    await waitFor(() => processesWithArg(arg).length >= 3, 'the loop to start respawned sleeps')
    await child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(killAll(processesWithArg(arg)), 'respawned sleeps left after kill()').toEqual([])
  })

  it('kills the group when the AbortSignal fires', async () => {
    const handle = await temp.create()
    const controller = new AbortController()
    const run = handle.process.exec('echo $$ > pid; sleep 300', { signal: controller.signal })
    const pgid = await pidFrom(handle.workspaceRoot, 'pid')
    controller.abort()
    const error = await rejectionOf(run)
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.message).toContain('aborted')
    expect(liveGroupMembers(pgid)).toBe(0)
    expect((await rejectionOf(handle.process.exec('true', { signal: controller.signal }))).reason).toBe('aborted')
  })

  it('validates its options', async () => {
    const handle = await temp.create()
    expect(await rejectionOf(handle.process.exec('true', { timeoutMs: -5 }))).toBeInstanceOf(SandboxConfigError)
    expect(await rejectionOf(handle.process.exec('  '))).toBeInstanceOf(SandboxConfigError)
    const badEnv = await rejectionOf(handle.process.exec('true', { env: { N: 1 as unknown as string } }))
    expect(badEnv).toBeInstanceOf(SandboxConfigError)
    expect(badEnv.field).toBe('exec.env.N')
  })
})

describe('spawn', () => {
  it('buffers output for a consumer that starts late', async () => {
    const handle = await temp.create()
    const child = await handle.process.spawn('echo hello; echo oops >&2; exit 4')
    expect(await child.wait()).toEqual({ exitCode: 4 })
    expect((await collect(child.stdout)).join('')).toBe('hello\n')
    expect((await collect(child.stderr)).join('')).toBe('oops\n')
  })

  it('never splits a UTF-8 character across chunks', async () => {
    const handle = await temp.create()
    // 3-byte characters over several 64 KiB pipe reads: read boundaries fall inside characters.
    const child = await handle.process.spawn(`node -e "process.stdout.write('€'.repeat(200000))"`)
    const chunks = await collect(child.stdout)
    expect((await child.wait()).exitCode).toBe(0)
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.some((chunk) => chunk.includes('\uFFFD'))).toBe(false)
    expect(chunks.join('')).toBe('€'.repeat(200000))
  })

  it('decodes a character split between two pushes (TextStream)', async () => {
    const stream = new TextStream()
    const euro = new TextEncoder().encode('a€b')
    stream.push(euro.subarray(0, 2))
    stream.push(euro.subarray(2, 3))
    stream.push(euro.subarray(3))
    stream.end()
    expect(await collect(stream)).toEqual(['a', '€b'])
  })

  it('writes to stdin and ends it', async () => {
    const handle = await temp.create()
    const child = await handle.process.spawn('cat')
    await child.stdin.write('line one\n')
    await child.stdin.write(new TextEncoder().encode('line two\n'))
    await child.stdin.end()
    await child.stdin.end()
    expect((await collect(child.stdout)).join('')).toBe('line one\nline two\n')
    expect(await child.wait()).toEqual({ exitCode: 0 })
    expect(await rejectionOf(child.stdin.write('late'))).toBeInstanceOf(SandboxOperationError)
  })

  it('kill() stops the whole process tree', async () => {
    const handle = await temp.create()
    const child = await handle.process.spawn(`sh -c 'sleep 300 & sleep 300 & wait'`)
    const pgid = child.pid!
    await waitFor(() => liveGroupMembers(pgid) >= 3, 'the shell and both sleeps to start')
    await child.kill()
    expect(liveGroupMembers(pgid)).toBe(0)
    expect(await child.wait()).toMatchObject({ signal: 'SIGTERM', exitCode: 143 })
    await child.kill() // idempotent
  })

  it('kill() also stops a child that left the group with setsid (sleep 812)', async () => {
    const handle = await temp.create()
    const child = await handle.process.spawn('sleep 811 & setsid sh -c "echo \\$\\$ > setsid.pid; exec sleep 812" & wait')
    const pid = await pidFrom(handle.workspaceRoot, 'setsid.pid')
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]), 'the child left the job\'s process group').not.toBe(child.pid)
    await child.kill()
    await child.wait()
    expect(liveProcess(pid), `pid ${pid} (sleep 812) is gone after kill()`).toBe(false)
  })

  it('wait() resolves once kill() finished even when an escaped process still holds stdout', async () => {
    const handle = await temp.create()
    // Double fork + setsid + dropping the job marker (the documented limit): the escaped sleep is
    // neither in the group, nor a descendant, nor marked when kill() scans.
    const child = await handle.process.spawn('( setsid env -u TANSTACK_SANDBOX_JOB -u TANSTACK_SANDBOX_ID sh -c "echo \\$\\$ > escaped.pid; exec sleep 855" & ) ; echo before; sleep 856')
    const pid = await pidFrom(handle.workspaceRoot, 'escaped.pid')
    try {
      const stdout = collect(child.stdout)
      const stderr = collect(child.stderr)
      await child.kill()
      const pending = Symbol('still pending')
      const outcome = await Promise.race([child.wait(), new Promise((resolve) => setTimeout(() => resolve(pending), 10_000))])
      expect(outcome, 'wait() resolved after kill()').toMatchObject({ signal: 'SIGTERM', exitCode: 143 })
      expect((await stdout).join('')).toBe('before\n')
      expect(await stderr).toEqual([])
      expect(liveProcess(pid), 'the escaped sleep without markers still runs (only destroy\'s cwd sweep reaches it)').toBe(true)
    } finally {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
  })

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const handle = await temp.create({ killGraceMs: 200 })
    // An ignored signal stays ignored across fork and exec, so every sleep ignores TERM too.
    const child = await handle.process.spawn(`trap '' TERM; sleep 300 & sleep 300 & wait`)
    const pgid = child.pid!
    await waitFor(() => liveGroupMembers(pgid) >= 3, 'the shell and both sleeps to start')
    await child.kill('SIGTERM')
    expect(liveGroupMembers(pgid)).toBe(0)
    expect(await child.wait()).toMatchObject({ signal: 'SIGKILL', exitCode: 137 })
  })

  it('kills the group when the AbortSignal fires', async () => {
    const handle = await temp.create()
    const controller = new AbortController()
    const child = await handle.process.spawn('sleep 300 & sleep 300', { signal: controller.signal })
    const pgid = child.pid!
    await waitFor(() => liveGroupMembers(pgid) >= 2, 'both sleeps to start')
    controller.abort()
    expect((await child.wait()).signal).toBe('SIGTERM')
    await waitFor(() => liveGroupMembers(pgid) === 0, 'the group to be gone')
  })

  it('refuses to start with an aborted signal and validates kill signals', async () => {
    const handle = await temp.create()
    const error = await rejectionOf(handle.process.spawn('true', { signal: AbortSignal.abort() }))
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('aborted')
    const child = await handle.process.spawn('true')
    expect(await rejectionOf(child.kill('SIGHUP' as 'SIGTERM'))).toBeInstanceOf(SandboxConfigError)
    await child.wait()
  })
})

describe('job and sandbox markers', () => {
  it('every job carries its own TANSTACK_SANDBOX_JOB and the sandbox\'s TANSTACK_SANDBOX_ID, which a caller cannot override', async () => {
    const handle = await temp.create()
    const show = 'printf "%s %s" "$TANSTACK_SANDBOX_JOB" "$TANSTACK_SANDBOX_ID"'
    const [a, b] = await Promise.all([handle.process.exec(show), handle.process.exec(show, { env: { TANSTACK_SANDBOX_JOB: 'fake', TANSTACK_SANDBOX_ID: 'fake' } })])
    const [jobA, idA] = a.stdout.split(' ')
    const [jobB, idB] = b.stdout.split(' ')
    expect(jobA).toMatch(/^[0-9a-f-]{36}$/)
    expect(jobB).toMatch(/^[0-9a-f-]{36}$/)
    expect(jobA, 'each job gets a fresh marker').not.toBe(jobB)
    expect([idA, idB]).toEqual([handle.id, handle.id])
  })

  it('kill() after the shell exited still stops the setsid child it left (parent gone, not in the group)', async () => {
    const handle = await temp.create()
    const arg = `300.${randomInt(1e9)}`
    const child = await handle.process.spawn(`( setsid sleep ${arg} </dev/null >/dev/null 2>&1 & ) ; exit 0`)
    await waitFor(() => processesWithArg(arg).length === 1, 'the setsid child to start')
    expect((await child.wait()).exitCode).toBe(0)
    await child.kill()
    expect(killAll(processesWithArg(arg)), 'the child left by an exited shell').toEqual([])
  })

  for (const cdRoot of [false, true]) {
    const shape = cdRoot ? '( cd / && setsid sleep & ) ; sleep' : '( setsid sleep & ) ; sleep'
    it(`exec abort, exec timeoutMs and spawn kill() leave nothing of ${shape}, 5 times each`, async () => {
      const handle = await temp.create({ killGraceMs: 500 })
      const left: number[] = []
      for (let i = 0; i < 5; i++) {
        const aborted = escapingCommand(cdRoot)
        const controller = new AbortController()
        const run = handle.process.exec(aborted.command, { signal: controller.signal })
        await waitFor(() => processesWithArg(aborted.arg).length === 1, 'the setsid child to start')
        controller.abort()
        expect((await rejectionOf(run)).reason).toBe('aborted')
        left.push(...killAll(processesWithArg(aborted.arg)))

        const timed = escapingCommand(cdRoot)
        const timedRun = handle.process.exec(timed.command, { timeoutMs: 1000 })
        await waitFor(() => processesWithArg(timed.arg).length === 1, 'the setsid child to start')
        expect((await rejectionOf(timedRun)).reason).toBe('timeout')
        left.push(...killAll(processesWithArg(timed.arg)))

        const killed = escapingCommand(cdRoot)
        const job = await handle.process.spawn(killed.command)
        await waitFor(() => processesWithArg(killed.arg).length === 1, 'the setsid child to start')
        await job.kill()
        expect((await job.wait()).signal).toBe('SIGTERM')
        left.push(...killAll(processesWithArg(killed.arg)))
      }
      expect(left, 'survivors of 15 cancels').toEqual([])
    })
  }

  it('destroy() from another provider instance stops a setsid child that did cd / (found by TANSTACK_SANDBOX_ID)', async () => {
    const handle = await temp.create()
    const { arg, command } = escapingCommand(true)
    const job = await handle.process.spawn(command)
    void job.wait().catch(() => undefined)
    await waitFor(() => processesWithArg(arg).length === 1, 'the setsid child to start')
    // A fresh instance knows no group of this sandbox: only the marker sweep can find the child.
    await temp.provider().destroy({ id: handle.id })
    expect(killAll(processesWithArg(arg)), 'the child in / after destroy()').toEqual([])
    // The group (sleep 301) is in the sandbox directory's tree of cwds, or marked: gone too.
    await handle.destroy()
  })
})
