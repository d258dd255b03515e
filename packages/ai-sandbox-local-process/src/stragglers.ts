/**
 * The sweep that catches processes which left their process group (`setsid`,
 * daemonising tools): on Linux, any process whose working directory is inside
 * a sandbox directory being destroyed is killed. Elsewhere (no `/proc`) the
 * sweep does nothing and process groups are the only reach.
 */
import { readdir, readlink } from 'node:fs/promises'
import { errnoCode } from './errors.js'

/**
 * SIGKILL every process whose cwd is `dir` or below it.
 * @returns The pids that were signalled.
 */
export async function killProcessesUnder(dir: string): Promise<number[]> {
  let entries: string[]
  try {
    entries = await readdir('/proc')
  } catch {
    return [] // no procfs (macOS): nothing to sweep
  }
  const killed: number[] = []
  for (const entry of entries) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue
    let cwd: string
    try {
      cwd = await readlink(`/proc/${pid}/cwd`)
    } catch {
      continue // exited, or not ours to inspect
    }
    if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue
    try {
      process.kill(pid, 'SIGKILL')
      killed.push(pid)
    } catch (error) {
      if (errnoCode(error) !== 'ESRCH' && errnoCode(error) !== 'EPERM') throw error
    }
  }
  return killed
}
