/**
 * What a forced exit (a second Ctrl-C) leaves behind: the run's temp
 * directory, any process still working in it (Claude Code's claude.exe, a
 * setup step, git) and, with Docker, the run's container. It only looks and
 * describes; it never deletes or kills. Synchronous, because it runs just
 * before `process.exit`.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { basename, sep } from 'node:path'
import { shellQuote } from '@tanstack/ai-sandbox'
import { DOCKER_RUN_LABEL } from './sandbox-target.js'

/**
 * Describe what is left of a run whose cleanup did not finish.
 *
 * @param temp - The run's temp directory (`tanstack-quickstart-…`); `undefined` when it was never made.
 * @param options - `docker`: the run used `--provider docker`, so a container may be left too.
 * @returns Lines for the terminal, each saying what is left and how to remove it.
 * @example
 * ```ts
 * process.stderr.write(`${describeLeftovers('/tmp/tanstack-quickstart-x1y2z3')}\n`)
 * ```
 */
export function describeLeftovers(temp: string | undefined, options: { docker?: boolean } = {}): string {
  if (temp === undefined) return '  Nothing had been created yet.'
  const lines: string[] = []
  if (options.docker) {
    const filter = shellQuote(`label=${DOCKER_RUN_LABEL}=${basename(temp)}`)
    lines.push(`  the run's Docker container may still exist (the agent inside it too); remove it with: docker rm -f $(docker ps -aq --filter ${filter})`)
  }
  if (existsSync(temp)) lines.push(`  left behind: ${temp} (sample repository, sandbox, Claude Code's HOME); remove it with: rm -rf ${shellQuote(temp)}`)
  const processes = processesIn(temp)
  if (processes === undefined) lines.push(`  processes started in the sandbox (claude.exe, setup steps) may still be running; look for them with: ps -ef | grep claude`)
  else if (processes.length > 0) {
    lines.push(`  still running in it: ${processes.map((p) => `${p.pid} (${p.name})`).join(', ')}; stop them with: kill ${processes.map((p) => p.pid).join(' ')}`)
  }
  return lines.length > 0 ? lines.join('\n') : '  Cleanup had finished: nothing was left behind.'
}

/** Processes whose working directory is inside `dir`, from /proc; `undefined` where there is no /proc (macOS). */
function processesIn(dir: string): { pid: number; name: string }[] | undefined {
  if (!existsSync('/proc/self/cwd')) return undefined
  const found: { pid: number; name: string }[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`)
      if (cwd === dir || cwd.startsWith(dir + sep)) found.push({ pid: Number(entry), name: readFileSync(`/proc/${entry}/comm`, 'utf8').trim() })
    } catch {
      // the process exited while we looked, or belongs to another user: not ours to report
    }
  }
  return found
}
