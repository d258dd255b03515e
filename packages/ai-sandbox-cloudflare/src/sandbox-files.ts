/**
 * The provider's own files inside a Cloudflare container: the folder layout,
 * the marker, the job script, the wrapper every call runs through, and the
 * one-command install. Invariants: no secret ever appears in a command line
 * (variables travel in files the job script sources and deletes); nothing
 * runs unless the marker written at create is still there (a container
 * restarted empty answers `TSB-GONE` instead); and everything the wrapper
 * prints is whole lines of base64 or ASCII, because Cloudflare's control
 * server passes command output on line by line (docs/design/cloudflare.md section 8).
 */
import { FS_SCRIPT, GROUP_KILLER, JOB_SCAN_AWK, SANDBOX_JOB_ENV } from '@tanstack/ai-sandbox/internal'
import { shellQuote } from '@tanstack/ai-sandbox'

/** The provider's folder in the container user's HOME (mode 0700). */
export const STATE_FOLDER = '.tanstack-sandbox'

/** Where each piece lives under the provider's folder `root`. */
export function statePaths(root: string) {
  return {
    root,
    /** One line, `{"id":…,"nonce":…}`, written last at create; every call checks it. */
    marker: `${root}/sandbox.json`,
    /** The wrapper every call runs through (the scripts live in `bin/`). */
    run: `${root}/bin/run.sh`,
    /** Sandbox-wide variables: one file per `create`/`env.set`, sourced in name order. */
    envDir: `${root}/env.d`,
    /** Per-job files: `<id>.env`, `<id>.in`, `<id>.cmd`, `<id>.out`, `<id>.err`, `<id>.pgid`, `<id>.kill`, `<id>.exit`. */
    jobs: `${root}/jobs`,
    /** Bytes on their way in or out through `writeFile`/`readFile`. */
    xfer: `${root}/xfer`,
  } as const
}

/** The paths of one sandbox's provider folder. */
export type StatePaths = ReturnType<typeof statePaths>

/**
 * The command's own shell: sources `env.d`, applies the call's variables,
 * forgets its helpers, and runs the command `$1`, or the text of file `$2`
 * (a command too long for one argument; the file is removed before it runs).
 */
const INNER = [
  'for f in "$__tanstack_root"/env.d/*; do [ -f "$f" ] && . "$f"; done; eval "$__tanstack_call_env"; unset __tanstack_root __tanstack_call_env',
  '[ -z "$2" ] && exec /bin/sh -c "$1"',
  'set -- "$(cat -- "$2"; printf .)" "$2"; rm -f -- "$2"',
  // Expanded before it runs, so the command sees no positional parameters.
  'eval "set --\n${1%.}"',
].join('\n')

/**
 * `sh job.sh <id> <physical workspace> <cwd> <command> [file]`: leaves the
 * caller's process group (`setsid`), records its group id, refuses to start
 * when a kill already came, reads the call's variables from a file (and
 * deletes it), marks itself `TANSTACK_SANDBOX_JOB=<id>`, enters the cwd only
 * if it stays inside the workspace, takes stdin from the call's file (or
 * none), notes that it started, and becomes the command's shell (`exec`, so
 * the job's exit is the command's own, a TERM trap's `exit 5` included), with
 * SIGINT and SIGQUIT back to their defaults: a background job of a
 * non-interactive shell (how the control server and the wrapper start one)
 * ignores both, and a shell cannot undo an ignore it inherited. With `file`,
 * the command is in `<id>.cmd`. A refusal is written to `<id>.status`.
 */
const JOB_SCRIPT = [
  'r=${0%/*}; r=${r%/*}; d=$r/jobs; id=$1',
  'read -r _ _ _ _ pg _ < /proc/$$/stat 2>/dev/null || pg=$$',
  'if [ "$pg" != "$$" ] && command -v setsid >/dev/null 2>&1; then exec setsid /bin/sh "$0" "$@"; fi',
  'printf %s "$$" > "$d/$id.pgid"',
  'cf=; [ "$5" = file ] && cf=$d/$id.cmd',
  'if [ -e "$d/$id.kill" ]; then rm -f "$d/$id.pgid" "$d/$id.kill" "$d/$id.env" "$d/$id.in" "$d/$id.cmd"; printf killed > "$d/$id.status"; exit 143; fi',
  '__tanstack_call_env=; if [ -f "$d/$id.env" ]; then . "$d/$id.env"; rm -f "$d/$id.env"; fi',
  `export ${SANDBOX_JOB_ENV}="$id"`,
  'if ! cd -P -- "$3" 2>/dev/null; then rm -f "$d/$id.cmd"; printf cwd-missing > "$d/$id.status"; exit 125; fi',
  'case "$(pwd -P)/" in "$2"/*) ;; *) rm -f "$d/$id.cmd"; printf cwd-escape > "$d/$id.status"; exit 125 ;; esac',
  'if [ -f "$d/$id.in" ]; then exec 0< "$d/$id.in"; rm -f "$d/$id.in"; else exec 0< /dev/null; fi',
  // GNU env (coreutils 8.31+) resets the signals; without it the command keeps what it inherited.
  'sd=; env --default-signal=INT,QUIT true 2>/dev/null && sd="env --default-signal=INT,QUIT"',
  'printf %s "$$" > "$d/$id.started"',
  `__tanstack_root=$r __tanstack_call_env=$__tanstack_call_env exec $sd /bin/sh -c ${shellQuote(INNER)} tanstack-job "$4" "$cf"`,
].join('\n')

/**
 * `sh kill-job.sh <id> <signal> <grace steps>`: writes the `.kill` mark
 * first, then kills the group the job recorded and every process carrying
 * its marker with core's group killer; exit 0 once nothing of the job is
 * left, 3 when something survived SIGKILL.
 */
const KILL_SCRIPT = [
  'r=${0%/*}; r=${r%/*}; d=$r/jobs',
  ': > "$d/$1.kill"',
  'g=$(cat "$d/$1.pgid" 2>/dev/null)',
  'case "$g" in ""|0|*[!0-9]*) g=2147483647 ;; *) started=1 ;; esac',
  `/bin/sh -c "$(cat "$r"/bin/kill.sh)" tanstack-sandbox-kill "$g" "$2" "$3" "$(cat "$r"/bin/scan.awk)" "${SANDBOX_JOB_ENV}=$1"`,
  's=$?',
  'rm -f "$d/$1.pgid" "$d/$1.in" "$d/$1.env" "$d/$1.cmd"',
  '[ -n "$started" ] && rm -f "$d/$1.kill"',
  'exit $s',
].join('\n')

/** Bytes of output per framed line of a spawned job (64 KiB of base64). */
const SPAWN_CHUNK = 49152

/**
 * `sh run.sh <marker> <id> <max bytes> <mode> …`, the wrapper of every call.
 * Prints `TSB-GONE` when the marker differs (a container restarted empty).
 * Modes: `job <physical root> <cwd> <command> [file]` (exec), `fs <args>`,
 * `fsin <source> <args>` (a write: the script reads the source file, then it
 * is removed), `fsout <target> <args>` (a read: the script writes the target
 * file), `kill <job id> <signal> <steps>`; each ends with the frame
 * `TSB1 <exit> <stdout bytes> <stderr bytes> <status>[ too-large]`,
 * `O<base64>`, `E<base64>`, `TSB-END`. Mode `spawn <physical root> <cwd>
 * <command> [file]` runs the job in the background and streams `P <pgid>` or
 * `R <refusal>`, then `O<base64>`/`E<base64>` lines of at most 48 KiB as the
 * files grow, and `X <exit>` once the job's shell exited and what it wrote
 * before that was sent (a background child still writing is not waited for).
 */
const RUN_SCRIPT = [
  'r=${0%/*}; r=${r%/*}; d=$r/jobs',
  '{ read -r m < "$r/sandbox.json"; } 2>/dev/null || m=',
  'if [ "$m" != "$1" ]; then printf "TSB-GONE\\n"; exit 0; fi',
  'id=$2 max=$3 mode=$4; shift 4',
  'o=$d/$id.out e=$d/$id.err',
  'size() { n=$(wc -c < "$1" 2>/dev/null) || n=0; echo $((n + 0)); }',
  'frame() {',
  '  st=-; [ -f "$d/$id.status" ] && st=$(cat "$d/$id.status")',
  '  ob=$(size "$o") eb=$(size "$e")',
  '  if [ $((ob + eb)) -gt "$max" ]; then printf "TSB1 %s %s %s %s too-large\\n" "$1" "$ob" "$eb" "$st"',
  '  else',
  '    printf "TSB1 %s %s %s %s\\n" "$1" "$ob" "$eb" "$st"',
  '    printf O; base64 < "$o" | tr -d "\\n"; printf "\\n"',
  '    printf E; base64 < "$e" | tr -d "\\n"; printf "\\n"',
  '  fi',
  '  printf "TSB-END\\n"',
  '  rm -f "$o" "$e" "$d/$id.status" "$d/$id.started"',
  '}',
  'case $mode in',
  'job) /bin/sh "$r/bin/job.sh" "$id" "$@" > "$o" 2> "$e" < /dev/null; s=$?; rm -f "$d/$id.pgid" "$d/$id.kill"; frame $s ;;',
  'fs) LC_ALL=C /bin/sh "$r/bin/fs.sh" "$@" > "$o" 2> "$e" < /dev/null; frame $? ;;',
  'fsin) src=$1; shift; LC_ALL=C /bin/sh "$r/bin/fs.sh" "$@" < "$src" > "$o" 2> "$e"; s=$?; rm -f "$src"; frame $s ;;',
  'fsout) dst=$1; shift; LC_ALL=C /bin/sh "$r/bin/fs.sh" "$@" > "$dst" 2> "$e" < /dev/null; s=$?; if [ $s = 0 ]; then size "$dst" > "$o"; else rm -f "$dst"; : > "$o"; fi; frame $s ;;',
  'kill) /bin/sh "$r/bin/kill-job.sh" "$@" > "$o" 2> "$e" < /dev/null; frame $? ;;',
  'spawn)',
  '  : > "$o"; : > "$e"',
  '  ( /bin/sh "$r/bin/job.sh" "$id" "$@" > "$o" 2> "$e" < /dev/null; s=$?; rm -f "$d/$id.pgid" "$d/$id.kill"; printf %s "$s" > "$d/$id.x"; mv -f "$d/$id.x" "$d/$id.exit" ) &',
  '  oo=0 eo=0 said= lo= le=',
  '  while :; do',
  '    if [ -z "$lo" ] && [ -f "$d/$id.exit" ]; then lo=$(size "$o") le=$(size "$e"); fi',
  '    if [ -z "$said" ]; then',
  '      if [ -f "$d/$id.started" ]; then printf "P %s\\n" "$(cat "$d/$id.started")"; said=1',
  '      elif [ -f "$d/$id.status" ]; then printf "R %s\\n" "$(cat "$d/$id.status")"; said=1',
  '      elif [ -n "$lo" ]; then printf "R none\\n"; said=1; fi',
  '    fi',
  '    moved=',
  `    n=\${lo:-$(size "$o")}; n=$((n - oo)); if [ "$n" -gt 0 ]; then [ "$n" -gt ${SPAWN_CHUNK} ] && n=${SPAWN_CHUNK}; printf "O%s\\n" "$(tail -c +$((oo + 1)) "$o" | head -c "$n" | base64 | tr -d "\\n")"; oo=$((oo + n)); moved=1; fi`,
  `    n=\${le:-$(size "$e")}; n=$((n - eo)); if [ "$n" -gt 0 ]; then [ "$n" -gt ${SPAWN_CHUNK} ] && n=${SPAWN_CHUNK}; printf "E%s\\n" "$(tail -c +$((eo + 1)) "$e" | head -c "$n" | base64 | tr -d "\\n")"; eo=$((eo + n)); moved=1; fi`,
  '    if [ -n "$lo" ] && [ -z "$moved" ]; then printf "X %s\\n" "$(cat "$d/$id.exit")"; rm -f "$o" "$e" "$d/$id.exit" "$d/$id.status" "$d/$id.started"; exit 0; fi',
  '    [ -n "$moved" ] || sleep 0.05',
  '  done ;;',
  'esac',
].join('\n')

/** The provider's scripts, by file name under its `bin` folder. */
const SCRIPT_FILES: readonly (readonly [name: string, text: string])[] = [
  ['run.sh', RUN_SCRIPT],
  ['job.sh', JOB_SCRIPT],
  ['fs.sh', FS_SCRIPT],
  ['kill.sh', GROUP_KILLER],
  ['scan.awk', JOB_SCAN_AWK],
  ['kill-job.sh', KILL_SCRIPT],
]

/** A marker line: what `create` writes and every call expects. */
export function markerLine(id: string, nonce: string): string {
  return JSON.stringify({ id, nonce })
}

/** The session command that runs the wrapper in `mode` for call `id` (`max`: the exec output bound). */
export function runCommand(paths: StatePaths, marker: string, id: string, max: number, mode: string, args: readonly string[]): string {
  const script = paths.run
  return `if [ -f ${shellQuote(script)} ]; then /bin/sh ${shellQuote(script)} ${[marker, id, String(max), mode, ...args].map(shellQuote).join(' ')}; else printf 'TSB-GONE\\n'; fi`
}

/**
 * Prepares a container, in one command: `create` makes the provider's
 * folder (0700, in HOME, or in /tmp when HOME is not writable), writes the
 * scripts (each to a temp file renamed over the old one) and then the marker,
 * and makes the workspace; `resume` does the same only if a marker is there
 * (else prints `TSB-NONE`), keeping it. Prints `TSB-READY`, the physical
 * workspace root, the folder and the marker line.
 * Arguments: mode, marker (create), workspace, then each script's name and text.
 */
const PREPARE_SCRIPT = [
  'set -e',
  `if [ -n "$HOME" ] && [ -d "$HOME" ] && [ -w "$HOME" ]; then r=$HOME/${STATE_FOLDER}; else r=/tmp/${STATE_FOLDER}-$(id -u); fi`,
  'mode=$1 m=$2 w=$3; shift 3',
  'if [ "$mode" = resume ]; then { read -r m < "$r/sandbox.json"; } 2>/dev/null || m=; if [ -z "$m" ]; then printf "TSB-NONE\\n"; exit 0; fi; fi',
  'umask 077',
  'mkdir -p "$r/bin" "$r/env.d" "$r/jobs" "$r/xfer"',
  'chmod 700 "$r"',
  'while [ "$#" -ge 2 ]; do printf %s "$2" > "$r/bin/.$1.$$"; mv -f "$r/bin/.$1.$$" "$r/bin/$1"; shift 2; done',
  'if [ "$mode" = create ]; then printf "%s\\n" "$m" > "$r/.sandbox.json.$$"; mv -f "$r/.sandbox.json.$$" "$r/sandbox.json"; fi',
  'umask 022',
  'mkdir -p -- "$w"',
  'cd -P -- "$w"',
  'printf "TSB-READY\\n%s\\n%s\\n%s\\n" "$(pwd -P)" "$r" "$m"',
].join('\n')

/** The command that runs {@link PREPARE_SCRIPT}: one round trip makes a container ready (or says it holds no sandbox). */
export function prepareCommand(mode: 'create' | 'resume', marker: string, workdir: string): string {
  const scripts = SCRIPT_FILES.map(([name, text]) => `${shellQuote(name)} ${shellQuote(text)}`).join(' ')
  return `/bin/sh -c ${shellQuote(PREPARE_SCRIPT)} prepare ${shellQuote(mode)} ${shellQuote(marker)} ${shellQuote(workdir)} ${scripts}`
}
