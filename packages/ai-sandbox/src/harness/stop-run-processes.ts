/**
 * Processes a harness run left behind outside its process tree. An agent's
 * tool shell may start `cmd &`, `nohup …` or a double fork; once that shell
 * exits, such a process is re-parented to init and no longer descends from the
 * CLI, so killing the CLI's job misses it. Every CLI of a run is started with
 * {@link HARNESS_RUN_TAG_ENV} set to a tag unique to that run, processes
 * inherit their environment, and this module stops every process inside the
 * sandbox whose environment carries the tag. It never touches a process
 * without the exact tag. Reads `/proc/<pid>/environ` (Linux); elsewhere it
 * finds nothing.
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { shellQuote } from '../shell/quote.js'

/** The environment variable that tags every process of one harness run: `<name>=<tag>`. */
export const HARNESS_RUN_TAG_ENV = 'TANSTACK_HARNESS_RUN'

/**
 * Lists the pids whose environment holds `$1` (the whole `NAME=tag` entry) as
 * one word each, leaving out the script's own processes; TERM, then up to
 * about 2 s of checks, then KILL; prints what it had to KILL. POSIX sh with
 * grep and sed (BusyBox has both).
 */
const STOP_TAGGED = [
  'entry=$1',
  'list() { grep -l -z -x -F -e "$entry" /proc/[0-9]*/environ 2>/dev/null | sed -n "s#^/proc/\\([0-9][0-9]*\\)/environ\\$#\\1#p"; }',
  'pids=$(list)',
  '[ -z "$pids" ] && exit 0',
  'kill -TERM $pids 2>/dev/null',
  'i=0',
  'while [ $i -lt 20 ]; do',
  '  sleep 0.1 2>/dev/null || sleep 1',
  '  pids=$(list)',
  '  [ -z "$pids" ] && exit 0',
  '  i=$((i+1))',
  'done',
  'kill -KILL $pids 2>/dev/null',
  'echo "killed: $pids"',
].join('\n')

/**
 * Stop every process in the sandbox tagged with `tag` (TERM, then KILL after
 * about 2 s).
 *
 * @param handle - The run's sandbox (capability `exec`; without it nothing is done).
 * @param tag - The run's tag, the value of {@link HARNESS_RUN_TAG_ENV}.
 * @returns The script's report: `''` when every tagged process ended on TERM (or none was found), else `killed: <pids>`.
 * @throws whatever `handle.process.exec` throws (a destroyed sandbox, for instance).
 * @example
 * ```ts
 * await stopTaggedProcesses(handle, 'run-7f3a…')
 * ```
 */
export async function stopTaggedProcesses(handle: SandboxHandle, tag: string): Promise<string> {
  if (!handle.capabilities.exec) return ''
  const entry = `${HARNESS_RUN_TAG_ENV}=${tag}`
  const result = await handle.process.exec(`sh -c ${shellQuote(STOP_TAGGED)} stop-tagged ${shellQuote(entry)}`, { timeoutMs: 30_000 })
  return result.stdout.trim()
}
