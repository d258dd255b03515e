// A command whose background child still holds stdout/stderr (`sleep 300 &`, a
// dev server, a writing loop) ends when its shell exits: spawn's streams and
// wait(), exec, and a setup step during bootstrap. The child itself keeps
// running until kill() or destroy(), which these tests check, then clean up.
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace } from '@tanstack/ai-sandbox'
import { collect, useTempRoot } from './helpers/temp-root.js'

const temp = useTempRoot()

/** A hang guard, not a timing claim: far above the provider's drain window. */
const HANG_BOUND_MS = 10_000

/** Await `promise`, failing with `what` if it is still pending after {@link HANG_BOUND_MS}. */
async function settles<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still pending after ${HANG_BOUND_MS} ms (hang)`)), HANG_BOUND_MS)
  })
  try {
    return await Promise.race([promise, hang])
  } finally {
    clearTimeout(timer)
  }
}

/** True while `pid` runs (a zombie has exited). */
function liveProcess(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!)
  } catch {
    return false
  }
}

/** The pid a command wrote to `file` in `workspaceRoot`. */
async function pidIn(workspaceRoot: string, file: string): Promise<number> {
  return Number((await readFile(join(workspaceRoot, file), 'utf8')).trim())
}

/** SIGKILL whatever pids the files name (cleanup when a check failed before kill/destroy ran). */
async function killPidFiles(workspaceRoot: string, files: readonly string[]): Promise<void> {
  for (const file of files) {
    killPids([await pidIn(workspaceRoot, file).catch(() => 0)])
  }
}

/** SIGKILL each pid that still runs. */
function killPids(pids: readonly number[]): void {
  for (const pid of pids) if (pid > 0 && liveProcess(pid)) process.kill(pid, 'SIGKILL')
}

describe('a background child that keeps the output pipes open', () => {
  it('spawn: stdout and stderr end and wait() resolves when the shell exits; kill() still stops the child', async () => {
    const handle = await temp.create()
    const child = await handle.process.spawn('echo hi; sleep 861 & echo $! > bg.pid; echo done; echo err >&2')
    try {
      const [stdout, stderr, exit] = await settles(Promise.all([collect(child.stdout), collect(child.stderr), child.wait()]), 'spawn streams and wait()')
      expect(exit).toEqual({ exitCode: 0 })
      expect(stdout.join('')).toBe('hi\ndone\n')
      expect(stderr.join('')).toBe('err\n')
      const pid = await pidIn(handle.workspaceRoot, 'bg.pid')
      expect(liveProcess(pid), 'the background sleep outlives the shell').toBe(true)
      await settles(child.kill(), 'kill()')
      expect(liveProcess(pid), 'kill() after the shell exited still stops its background child').toBe(false)
    } finally {
      await killPidFiles(handle.workspaceRoot, ['bg.pid'])
    }
  })

  it('spawn: a background loop that keeps writing does not keep the streams open', async () => {
    const handle = await temp.create()
    const child = await handle.process.spawn('echo hi; (while :; do echo tick; sleep 0.05; done) & echo $! > loop.pid; echo done')
    try {
      const [stdout, exit] = await settles(Promise.all([collect(child.stdout), child.wait(), collect(child.stderr)]), 'spawn streams and wait()')
      expect(exit.exitCode).toBe(0)
      expect(stdout.join('')).toMatch(/^hi\n(tick\n)*done\n/)
      await settles(child.kill(), 'kill()')
      expect(liveProcess(await pidIn(handle.workspaceRoot, 'loop.pid')), 'the loop is gone after kill()').toBe(false)
    } finally {
      await killPidFiles(handle.workspaceRoot, ['loop.pid'])
    }
  })

  it('exec: resolves with all the shell wrote; the child is left running until destroy()', async () => {
    const handle = await temp.create()
    let pid = 0
    try {
      // 300 000 bytes: more than a pipe buffer, so the shell's own output is read in full before the pipes close.
      const result = await settles(handle.process.exec(`head -c 300000 /dev/zero | tr '\\0' x; sleep 862 & echo $! > bg.pid; echo err >&2`), 'exec')
      expect(result).toEqual({ exitCode: 0, stdout: 'x'.repeat(300_000), stderr: 'err\n' })
      pid = await pidIn(handle.workspaceRoot, 'bg.pid')
      expect(liveProcess(pid), 'exec leaves its background child running').toBe(true)
      await handle.destroy()
      expect(liveProcess(pid), 'destroy() stops what an exec left running').toBe(false)
    } finally {
      killPids([pid])
      await killPidFiles(handle.workspaceRoot, ['bg.pid'])
    }
  })

  it('setup: a step that starts a background process without redirecting it does not hang bootstrap', async () => {
    const sandbox = defineSandbox({
      id: 'background-setup',
      provider: temp.provider(),
      workspace: defineWorkspace({
        setup: ['sleep 863 & echo $! > bg.pid', '(while :; do echo tick; sleep 0.05; done) & echo $! > loop.pid', 'echo next > after.txt'],
      }),
    })
    const run = { threadId: 'thread-background', runId: 'run-1' }
    const handle = await settles(sandbox.ensure(run), 'bootstrap (sandbox.ensure)')
    const pids = [await pidIn(handle.workspaceRoot, 'bg.pid'), await pidIn(handle.workspaceRoot, 'loop.pid')]
    try {
      expect(await handle.fs.read('after.txt'), 'the steps after the background ones ran').toBe('next\n')
      expect(liveProcess(pids[0]!), 'a setup step may leave a process running').toBe(true)
      await sandbox.destroy({ key: sandbox.key(run) })
      expect(pids.filter(liveProcess), 'destroying the sandbox stops what setup left running').toEqual([])
    } finally {
      killPids(pids)
      await handle.destroy()
    }
  })
})
