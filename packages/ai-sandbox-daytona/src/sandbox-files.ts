/**
 * The provider's own files inside a Daytona sandbox: the folder layout, the
 * job script every command runs through, and the one-time install of the
 * scripts (job, confined fs, group killer). Invariant: no secret ever appears
 * in a command line: per-call and sandbox-wide variables travel in files the
 * job script sources and deletes. Design notes: docs/design/daytona.md (section 11)
 */
import { FS_SCRIPT, GROUP_KILLER, JOB_SCAN_AWK, SANDBOX_JOB_ENV } from '@tanstack/ai-sandbox/internal'
import { shellQuote } from '@tanstack/ai-sandbox'

/** The provider's folder in the sandbox's HOME (mode 0700): it outlives restarts and restores, as HOME does. */
export const STATE_FOLDER = '.tanstack-sandbox'

/** Where each piece lives under the provider's folder `root`. */
export function statePaths(root: string) {
  return {
    root,
    job: `${root}/job.sh`,
    fs: `${root}/fs.sh`,
    killer: `${root}/kill.sh`,
    scan: `${root}/scan.awk`,
    killJob: `${root}/kill-job.sh`,
    /** Sandbox-wide variables: one file per `create`/`env.set`, sourced in name order. */
    envDir: `${root}/env.d`,
    /** Per-job files: `<id>.env`, `<id>.in`, `<id>.pgid`, `<id>.kill`. */
    jobs: `${root}/jobs`,
    /** Bytes on their way in or out through the files API. */
    xfer: `${root}/xfer`,
  } as const
}

/** The paths of one sandbox's provider folder. */
export type StatePaths = ReturnType<typeof statePaths>

/** Marks the job script's header line on stderr: \x01 never starts a real message. */
export const HEADER_MARK = '\u0001tanstack-sandbox-job '

/** The command's own shell: sources `env.d`, applies the call's variables, forgets its helpers, and runs the command. */
const INNER = 'for f in "$__tanstack_root"/env.d/*; do [ -f "$f" ] && . "$f"; done; eval "$__tanstack_call_env"; unset __tanstack_root __tanstack_call_env; exec /bin/sh -c "$1"'

/**
 * Runs as `sh job.sh <id> <physical workspace> <cwd> <command>`:
 * - leaves the daemon's process group (`setsid`, which does not fork for a non-leader), so the job is a group of its own;
 * - records its group id, then refuses to start when a kill already came (the killer writes `.kill` before reading `.pgid`, so one of the two always sees the other);
 * - reads the call's variables as one string (and deletes that file), and marks itself with `TANSTACK_SANDBOX_JOB=<id>`; the
 *   sandbox-wide and the call's variables apply only in the command's own shell, so a caller's PATH or LD_PRELOAD cannot break the wrapper;
 * - enters the cwd only if it stays inside the workspace, prints its header, and runs the command with the call's stdin (or none).
 */
export const JOB_SCRIPT = [
  'r=${0%/*}; d=$r/jobs; id=$1',
  'read -r _ _ _ _ pg _ < /proc/$$/stat 2>/dev/null || pg=$$',
  'if [ "$pg" != "$$" ] && command -v setsid >/dev/null 2>&1; then exec setsid /bin/sh "$0" "$@"; fi',
  'printf %s "$$" > "$d/$id.pgid"',
  'if [ -e "$d/$id.kill" ]; then rm -f "$d/$id.pgid" "$d/$id.kill" "$d/$id.env" "$d/$id.in"; exit 143; fi',
  // The call's variables only become a variable here (the file assigns one string); the wrapper's own tools keep its PATH.
  '__tanstack_call_env=; if [ -f "$d/$id.env" ]; then . "$d/$id.env"; rm -f "$d/$id.env"; fi',
  `export ${SANDBOX_JOB_ENV}="$id"`,
  `if ! cd -P -- "$3" 2>/dev/null; then printf '\\001tanstack-sandbox-job cwd-missing\\n' >&2; exit 125; fi`,
  `case "$(pwd -P)/" in "$2"/*) ;; *) printf '\\001tanstack-sandbox-job cwd-escape\\n' >&2; exit 125 ;; esac`,
  'if [ -f "$d/$id.in" ]; then exec 0< "$d/$id.in"; rm -f "$d/$id.in"; else exec 0< /dev/null; fi',
  `printf '\\001tanstack-sandbox-job pgid=%s\\n' "$$" >&2`,
  // The command's shell applies the sandbox's and the call's variables, then becomes the command.
  `__tanstack_root=$r __tanstack_call_env=$__tanstack_call_env /bin/sh -c ${shellQuote(INNER)} tanstack-job "$4"`,
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
  'r=${0%/*}; d=$r/jobs',
  ': > "$d/$1.kill"',
  'g=$(cat "$d/$1.pgid" 2>/dev/null)',
  // Not started yet: it will see the mark and exit; a group id of 0 would mean "my own group".
  'case "$g" in ""|0|*[!0-9]*) g=2147483647 ;; *) started=1 ;; esac',
  `/bin/sh -c "$(cat "$r"/kill.sh)" tanstack-sandbox-kill "$g" "$2" "$3" "$(cat "$r"/scan.awk)" "${SANDBOX_JOB_ENV}=$1"`,
  's=$?',
  'rm -f "$d/$1.pgid" "$d/$1.in" "$d/$1.env"',
  // A job that had started no longer needs the mark; one that had not yet will see it, and remove it.
  '[ -n "$started" ] && rm -f "$d/$1.kill"',
  'exit $s',
].join('\n')

/** The provider's scripts, by file name under its folder; {@link prepareCommand} installs them. */
const SCRIPT_FILES: readonly (readonly [name: string, text: string])[] = [
  ['job.sh', JOB_SCRIPT],
  ['fs.sh', FS_SCRIPT],
  ['kill.sh', GROUP_KILLER],
  ['scan.awk', JOB_SCAN_AWK],
  ['kill-job.sh', KILL_SCRIPT],
]

/** The session command that runs one job. */
export function jobCommand(paths: StatePaths, id: string, physicalRoot: string, cwd: string, command: string): string {
  return `/bin/sh ${shellQuote(paths.job)} ${id} ${shellQuote(physicalRoot)} ${shellQuote(cwd)} ${shellQuote(command)}`
}

/** The session command that kills job `id` (signal without `SIG`, grace in 50 ms steps). */
export function killCommand(paths: StatePaths, id: string, signal: string, graceSteps: number): string {
  return `/bin/sh ${shellQuote(paths.killJob)} ${id} ${signal} ${graceSteps}`
}

/**
 * Prepares (idempotently) a new or resumed sandbox, as the sandbox user, in
 * one command: the provider's folder (0700, in HOME, or in /tmp when HOME is
 * not writable) and the workspace exist, and the scripts are written
 * (again: a resume after a provider upgrade gets the new ones, a restore
 * that lost them gets them back). Each script goes to a temp file renamed
 * over the old one, so a job already reading it keeps the old copy. Prints
 * the physical workspace root and the folder. Arguments: the workspace,
 * then each script's name and text.
 */
const PREPARE_SCRIPT = [
  'set -e',
  `if [ -n "$HOME" ] && [ -d "$HOME" ] && [ -w "$HOME" ]; then r=$HOME/${STATE_FOLDER}; else r=/tmp/${STATE_FOLDER}-$(id -u); fi`,
  'umask 077',
  'mkdir -p "$r/env.d" "$r/jobs" "$r/xfer"',
  'chmod 700 "$r"',
  'w=$1; shift',
  'while [ "$#" -ge 2 ]; do printf %s "$2" > "$r/.$1.$$"; mv -f "$r/.$1.$$" "$r/$1"; shift 2; done',
  'umask 022',
  'mkdir -p -- "$w" 2>/dev/null || sudo -n mkdir -p -- "$w"',
  '[ -w "$w" ] || sudo -n chown "$(id -u):$(id -g)" "$w"',
  'cd -P -- "$w"',
  'pwd -P',
  'printf "%s\\n" "$r"',
].join('\n')

/** The command that runs {@link PREPARE_SCRIPT} for `workdir`: one round trip makes a sandbox ready. */
export function prepareCommand(workdir: string): string {
  const scripts = SCRIPT_FILES.map(([name, text]) => `${shellQuote(name)} ${shellQuote(text)}`).join(' ')
  return `/bin/sh -c ${shellQuote(PREPARE_SCRIPT)} prepare ${shellQuote(workdir)} ${scripts}`
}
