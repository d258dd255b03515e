/**
 * The provider's own files inside a Daytona sandbox: the folder layout, the
 * job script every command runs through, and the one-time install of the
 * scripts (job, confined fs, group killer). Invariant: no secret ever appears
 * in a command line: per-call and sandbox-wide variables travel in files the
 * job script sources and deletes. Design notes: docs/design/daytona.md (section 11)
 */
import { FS_SCRIPT, GROUP_KILLER, JOB_SCAN_AWK, SANDBOX_JOB_ENV } from '@tanstack/ai-sandbox/internal'
import { shellQuote } from '@tanstack/ai-sandbox'

/** The provider's folder in the sandbox (mode 0700, the sandbox user's). */
export const STATE_DIR = '/tmp/.tanstack-sandbox'

/** Where each piece lives under {@link STATE_DIR}. */
export const PATHS = {
  job: `${STATE_DIR}/job.sh`,
  fs: `${STATE_DIR}/fs.sh`,
  killer: `${STATE_DIR}/kill.sh`,
  scan: `${STATE_DIR}/scan.awk`,
  /** Sandbox-wide variables: one file per `create`/`env.set`, sourced in name order. */
  envDir: `${STATE_DIR}/env.d`,
  /** Per-job files: `<id>.env`, `<id>.in`, `<id>.pgid`, `<id>.kill`. */
  jobs: `${STATE_DIR}/jobs`,
  /** Bytes on their way in or out through the files API. */
  xfer: `${STATE_DIR}/xfer`,
} as const

/** Marks the job script's header line on stderr: \x01 never starts a real message. */
export const HEADER_MARK = '\u0001tanstack-sandbox-job '

/**
 * Runs as `sh job.sh <id> <physical workspace> <cwd> <command>`:
 * - leaves the daemon's process group (`setsid`, which does not fork for a non-leader), so the job is a group of its own;
 * - records its group id, then refuses to start when a kill already came (the killer writes `.kill` before reading `.pgid`, so one of the two always sees the other);
 * - sources the sandbox-wide variables, then the call's (and deletes that file), and marks itself with `TANSTACK_SANDBOX_JOB=<id>`;
 * - enters the cwd only if it stays inside the workspace, prints its header, and runs the command with the call's stdin (or none).
 */
export const JOB_SCRIPT = [
  'd=' + STATE_DIR + '/jobs; id=$1',
  'read -r _ _ _ _ pg _ < /proc/$$/stat 2>/dev/null || pg=$$',
  'if [ "$pg" != "$$" ] && command -v setsid >/dev/null 2>&1; then exec setsid /bin/sh "$0" "$@"; fi',
  'printf %s "$$" > "$d/$id.pgid"',
  '[ -e "$d/$id.kill" ] && exit 143',
  `for f in ${PATHS.envDir}/*; do [ -f "$f" ] && . "$f"; done`,
  'if [ -f "$d/$id.env" ]; then . "$d/$id.env"; rm -f "$d/$id.env"; fi',
  `export ${SANDBOX_JOB_ENV}="$id"`,
  `if ! cd -P -- "$3" 2>/dev/null; then printf '\\001tanstack-sandbox-job cwd-missing\\n' >&2; exit 125; fi`,
  `case "$(pwd -P)/" in "$2"/*) ;; *) printf '\\001tanstack-sandbox-job cwd-escape\\n' >&2; exit 125 ;; esac`,
  'if [ -f "$d/$id.in" ]; then exec 0< "$d/$id.in"; rm -f "$d/$id.in"; else exec 0< /dev/null; fi',
  `printf '\\001tanstack-sandbox-job pgid=%s\\n' "$$" >&2`,
  '/bin/sh -c "$4"',
  's=$?',
  'rm -f "$d/$id.pgid" "$d/$id.kill"',
  'exit $s',
].join('\n')

/**
 * `sh kill.sh <id> <signal> <grace steps>`: ask the job to stop. Writes the
 * `.kill` mark first, then kills the group it recorded (and every process
 * carrying its marker) with the shared group killer; exit 0 once nothing of
 * the job is left, 3 when something survived SIGKILL.
 */
const KILL_SCRIPT = [
  'd=' + STATE_DIR + '/jobs',
  ': > "$d/$1.kill"',
  'g=$(cat "$d/$1.pgid" 2>/dev/null)',
  // Not started yet: it will see the mark and exit; a group id of 0 would mean "my own group".
  'case "$g" in ""|0|*[!0-9]*) g=2147483647 ;; esac',
  `/bin/sh -c "$(cat ${PATHS.killer})" tanstack-sandbox-kill "$g" "$2" "$3" "$(cat ${PATHS.scan})" "${SANDBOX_JOB_ENV}=$1"`,
  's=$?',
  'rm -f "$d/$1.pgid" "$d/$1.in" "$d/$1.env"',
  'exit $s',
].join('\n')

/** The files the install uploads, by path. */
export function scriptFiles(): { path: string; text: string }[] {
  return [
    { path: PATHS.job, text: JOB_SCRIPT },
    { path: PATHS.fs, text: FS_SCRIPT },
    { path: PATHS.killer, text: GROUP_KILLER },
    { path: PATHS.scan, text: JOB_SCAN_AWK },
    { path: `${STATE_DIR}/kill-job.sh`, text: KILL_SCRIPT },
  ]
}

/** The session command that runs one job. */
export function jobCommand(id: string, physicalRoot: string, cwd: string, command: string): string {
  return `/bin/sh ${PATHS.job} ${id} ${shellQuote(physicalRoot)} ${shellQuote(cwd)} ${shellQuote(command)}`
}

/** The session command that kills job `id` (signal without `SIG`, grace in 50 ms steps). */
export function killCommand(id: string, signal: string, graceSteps: number): string {
  return `/bin/sh ${STATE_DIR}/kill-job.sh ${id} ${signal} ${graceSteps}`
}

/**
 * Shell text that exports `env`: what a job sources from its `.env` file or
 * an `env.d` entry. Values are single-quoted, so nothing in them is expanded.
 */
export function envFileText(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join('')
}

/**
 * Prepares (idempotently) a new or resumed sandbox, as the sandbox user: the
 * provider's folders (0700) and the workspace exist. Prints the physical
 * workspace root. Argument: the workspace.
 */
export const PREPARE_SCRIPT = [
  'set -e',
  'umask 077',
  `mkdir -p ${PATHS.envDir} ${PATHS.jobs} ${PATHS.xfer}`,
  `chmod 700 ${STATE_DIR}`,
  'umask 022',
  'mkdir -p -- "$1" 2>/dev/null || sudo -n mkdir -p -- "$1"',
  '[ -w "$1" ] || sudo -n chown "$(id -u):$(id -g)" "$1"',
  'cd -P -- "$1"',
  'pwd -P',
  // Whether the scripts are there (a sandbox resumed after a restart that cleared /tmp needs them again).
  `[ -f ${PATHS.job} ] && [ -f ${STATE_DIR}/kill-job.sh ] && echo installed || echo missing`,
].join('\n')
