/**
 * The sweep `destroy()` runs after killing the groups it knows: on Linux it
 * SIGKILLs, until none is left, every process carrying the sandbox's marker
 * (`TANSTACK_SANDBOX_ID=<id>`), every descendant of one, and every process
 * whose working directory is inside the sandbox directory. Without `/proc`
 * it does nothing. Design notes: docs/design/local-process.md
 */
import { readdir, readlink } from 'node:fs/promises'
import { SANDBOX_ID_ENV } from '@tanstack/ai-sandbox/internal'
import { errnoCode, operationError } from './errors.js'
import { scanMarked, signalJobProcess } from './job-tree.js'

/** How long stragglers may survive SIGKILL before the sweep gives up, in ms. */
const SWEEP_DEADLINE_MS = 30_000

/**
 * SIGKILL every process of sandbox `id` (its marker entry, or a cwd at `dir`
 * or below it) and resolve once none is left.
 * @param dir - The sandbox directory `<root>/<id>`.
 * @param id - The sandbox id, the value of `TANSTACK_SANDBOX_ID`.
 * @returns The pids that were signalled.
 * @throws SandboxOperationError `timeout` when some survive SIGKILL for 30 s.
 */
export async function stopSandboxStragglers(dir: string, id: string): Promise<number[]> {
  const killed = new Set<number>()
  /** Pids we may not signal (another user's): reported by nobody, skipped from then on. */
  const foreign = new Set<number>()
  const deadline = Date.now() + SWEEP_DEADLINE_MS
  let interval = 10
  for (;;) {
    const marked = await scanMarked(`${SANDBOX_ID_ENV}=${id}`)
    const under = (await processesUnder(dir)).filter((pid) => !marked.has(pid) && !foreign.has(pid))
    if (marked.size === 0 && under.length === 0) return [...killed]
    if (Date.now() >= deadline) {
      throw operationError('timeout', `Sandbox ${id} still has live processes ${SWEEP_DEADLINE_MS} ms after SIGKILL: ${[...marked.keys(), ...under].join(', ')} (stuck in uninterruptible I/O, or owned by another user?).`)
    }
    await Promise.all([...marked].map(([pid, start]) => signalJobProcess(pid, start, 'SIGKILL')))
    for (const pid of under) if (!killPid(pid)) foreign.add(pid)
    for (const pid of [...marked.keys(), ...under]) killed.add(pid)
    await new Promise((resolve) => setTimeout(resolve, interval))
    interval = Math.min(interval * 2, 100)
  }
}

/** Pids (never this process, nor init) whose cwd is `dir` or below it; empty without `/proc`. */
async function processesUnder(dir: string): Promise<number[]> {
  let entries: string[]
  try {
    entries = await readdir('/proc')
  } catch {
    return [] // no procfs (macOS): nothing to sweep
  }
  const found: number[] = []
  await Promise.all(
    entries.map(async (entry) => {
      const pid = Number(entry)
      if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return
      let cwd: string
      try {
        cwd = await readlink(`/proc/${pid}/cwd`)
      } catch {
        return // exited (a zombie has no cwd), or not ours to inspect
      }
      if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(pid)
    }),
  )
  return found
}

/** SIGKILL `pid`; false when it is not ours to signal. */
function killPid(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL')
  } catch (error) {
    if (errnoCode(error) === 'EPERM') return false
    if (errnoCode(error) !== 'ESRCH') throw error
  }
  return true
}
