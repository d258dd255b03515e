/**
 * Processes found by an inherited environment entry: the entry names
 * ({@link HARNESS_RUN_TAG_ENV}, {@link SANDBOX_JOB_ENV}, {@link SANDBOX_ID_ENV}),
 * the shared sh lister {@link TAGGED_PIDS_SH}, and the sweep of a run's
 * leftovers. Invariant: it never touches a process without the exact entry.
 * Reads `/proc/<pid>/environ` (Linux only). Design notes: docs/design/shell.md
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { shellQuote } from './quote.js'

/** The environment variable that tags every process of one harness run: `<name>=<tag>`. */
export const HARNESS_RUN_TAG_ENV = 'TANSTACK_HARNESS_RUN'

/**
 * The environment entry every process of one provider job (one `exec` or
 * `spawn`) inherits: `TANSTACK_SANDBOX_JOB=<random id>`. Providers use it so
 * `kill()`, `timeoutMs` and abort reach processes that left the job's process
 * group and tree (`( setsid cmd & )`). Set last, over any caller env.
 */
export const SANDBOX_JOB_ENV = 'TANSTACK_SANDBOX_JOB'

/**
 * The environment entry every process a sandbox starts inherits, where the
 * provider needs it to find them at `destroy()` (local-process:
 * `TANSTACK_SANDBOX_ID=<sandbox id>`; Docker removes the container instead).
 */
export const SANDBOX_ID_ENV = 'TANSTACK_SANDBOX_ID'

/**
 * A POSIX sh function definition: `tagged_pids ENTRY` prints, one a line, the
 * pid of every process whose environment holds exactly `ENTRY` (a whole
 * `NAME=value` entry). Zombies have no environment and are never listed;
 * neither is a process the caller may not read. Needs grep (with `-z`) and
 * sed; GNU and BusyBox both work.
 */
export const TAGGED_PIDS_SH = 'tagged_pids() { grep -l -z -x -F -e "$1" /proc/[0-9]*/environ 2>/dev/null | sed -n "s#^/proc/\\([0-9][0-9]*\\)/environ\\$#\\1#p"; }'

/**
 * Lists the pids whose environment holds `$1` (the whole `NAME=tag` entry) as
 * one word each, leaving out the script's own processes; TERM, then up to
 * about 2 s of checks, then KILL; prints what it had to KILL. POSIX sh with
 * grep and sed (BusyBox has both).
 */
const STOP_TAGGED = [
  'entry=$1',
  TAGGED_PIDS_SH,
  'list() { tagged_pids "$entry"; }',
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
