/**
 * Where a run's journal lives and the shell commands that write, follow,
 * list, probe and delete it (bounded read: `bounded-read.ts`). Pure builders
 * and parsers. Invariant: values are quoted with `shellQuote` and run ids pass
 * `encodeRunId`, so a hostile id executes nothing. One file: every command
 * shares one path layout and one set of portable-shell rules.
 * Design notes: docs/design/journal.md
 */
import { posix } from 'node:path'
import { shellQuote } from '../shell/quote.js'
import { SandboxConfigError } from '../contracts/errors.js'
import { JournalError } from './errors.js'
import { decodeJournalRunId, encodeRunId } from './run-id.js'
import { EXIT_SENTINEL_KEY, EXIT_SENTINEL_NONCE_KEY, expectedJournalHeader, JOURNAL_HEADER_ERROR_KEY, JOURNAL_HEADER_KEY, JOURNAL_NONCE_HASH_KEY, JOURNAL_SALT_KEY, nonceHash, parseExitSentinel, parseJournalHeader, type JournalTrust } from './sentinel.js'

/** Where journals go inside the sandbox unless `journal.dir` says otherwise. Source: spec 000 "Durable runs". */
export const DEFAULT_JOURNAL_DIR = '/tmp/tanstack-runs'

/**
 * The journal folder a run in `handle` uses: `dir` when given, else the
 * handle's own `journalDir`, else {@link DEFAULT_JOURNAL_DIR}. Every entry
 * point that takes a handle and an optional folder resolves it this way, so
 * the writer, its readers, the reaper and the prune agree without being told.
 *
 * @param handle - The sandbox (only its optional `journalDir` is read).
 * @param dir - The folder the caller passed (`durability.journalDir`, `journal.dir`), if any.
 * @returns An absolute folder inside the sandbox.
 */
export function journalDirOf(handle: { readonly journalDir?: string | undefined }, dir?: string): string {
  return dir ?? handle.journalDir ?? DEFAULT_JOURNAL_DIR
}

/**
 * Shell lines that make `dir` (and missing parents) with mode 0700 and then
 * insist it is a real folder (not a link) owned by the user running the
 * shell, before anything is read from or written to it; they `exit 1` with a
 * message on stderr otherwise. A journal folder another local user made first
 * would otherwise hold every run's journal and baseline (issue 27, item 2).
 */
export function journalDirGuard(dir: string): string {
  const d = shellQuote(dir)
  const refusal = shellQuote(`the journal folder ${dir} is a link or belongs to another user, so another user could read or plant journals and baselines there; remove it, or give durability.journalDir a folder only this user owns`)
  return [`(umask 077; mkdir -p ${d}) || exit 1`, `if [ -L ${d} ] || [ ! -d ${d} ] || [ ! -O ${d} ]; then echo ${refusal} >&2; exit 1; fi`, `chmod 700 ${d} || exit 1`].join('\n')
}

/** Bytes of a journal's end the exit probe reads by default (64 KiB): more than any sentinel and the blank line before it. */
export const DEFAULT_EXIT_PROBE_BYTES = 64 * 1024

/** The absolute in-sandbox paths of one run's journal. */
export interface JournalPaths {
  /** The journal folder, e.g. `/tmp/tanstack-runs`. */
  readonly dir: string
  /** The agent's stdout plus header and sentinel: `<dir>/<encodeRunId(runId)>.ndjson`. */
  readonly journal: string
  /** The agent's stderr, never mixed into the journal: `<dir>/<encodeRunId(runId)>.err`. */
  readonly stderr: string
}

/** One journal a listing found. */
export interface JournalDirEntry {
  /** Absolute path of the `.ndjson` file. */
  readonly path: string
  /** Path relative to the journal folder, e.g. `run-7.ndjson`. */
  readonly name: string
  /** The run id the name decodes to, or `undefined` when it is not a name `encodeRunId` writes. */
  readonly runId: string | undefined
  /** Last modification, in ms since the epoch (whole seconds); only from {@link parseJournalMtimeListing}. */
  readonly mtimeMs?: number
}

/** What {@link parseJournalMtimeListing} returns. */
export interface JournalMtimeListing {
  /** The sandbox clock when the listing ran, in ms since the epoch (compare `mtimeMs` with this, not with the host clock). */
  readonly nowMs: number
  readonly entries: readonly JournalDirEntry[]
}

/** What {@link parseJournalExit} makes of an exit probe. */
export type JournalExitState =
  | { readonly state: 'missing' }
  | { readonly state: 'running' }
  | { readonly state: 'exited'; readonly exitCode: number }

/** An absolute folder without a trailing slash. */
function normalizeJournalDir(dir: string): string {
  if (typeof dir !== 'string' || !dir.startsWith('/')) {
    throw new SandboxConfigError('journal.dir', `Invalid option journal.dir: it must be an absolute folder inside the sandbox, e.g. ${DEFAULT_JOURNAL_DIR}; got ${JSON.stringify(dir)}.`)
  }
  const normalized = posix.normalize(dir).replace(/\/+$/, '')
  return normalized === '' ? '/' : normalized
}

/**
 * The journal paths of a run. Pure. Source: spec 000 "Durable runs".
 *
 * @param runId - The run's id (any string of 1 to 512 characters; see `encodeRunId`).
 * @param dir - Absolute journal folder. Default {@link DEFAULT_JOURNAL_DIR}.
 * @throws JournalError `invalid-run-id` for an unusable id; SandboxConfigError `journal.dir` for a relative `dir`.
 * @example
 * ```ts
 * journalPaths('run-7') // { dir: '/tmp/tanstack-runs', journal: '/tmp/tanstack-runs/run-7.ndjson', stderr: '/tmp/tanstack-runs/run-7.err' }
 * ```
 */
export function journalPaths(runId: string, dir: string = DEFAULT_JOURNAL_DIR): JournalPaths {
  const root = normalizeJournalDir(dir)
  const base = posix.join(root, encodeRunId(runId))
  return { dir: root, journal: `${base}.ndjson`, stderr: `${base}.err` }
}

/** Options of {@link journaledCommand}. */
export interface JournaledCommandOptions {
  /** A file to feed the agent as stdin; it is opened, then deleted, before the agent starts. Default: `/dev/null`. */
  readonly stdinFile?: string
  /**
   * Read the nonce, its sha256 and the launch's salt from the command's own
   * stdin, as one line `<nonce> <hash> <salt>` ({@link journalLaunchStdin}),
   * instead of drawing the nonce in the sandbox; the header then carries the
   * salt. The host does this when the provider keeps a `journalSecret`, so
   * readers can check the sentinel without trusting the journal. Default `false`.
   */
  readonly nonceFromStdin?: boolean
}

/**
 * The stdin of a launch with `nonceFromStdin`: `<nonce> <sha256(nonce)> <salt>` and a newline.
 *
 * @param nonce - 32 lowercase hex digits (`journalNonce`).
 * @param salt - The salt the nonce was made with, 32 lowercase hex digits.
 */
export function journalLaunchStdin(nonce: string, salt: string): string {
  return `${nonce} ${nonceHash(nonce)} ${salt}\n`
}

/** The exit status of {@link journaledCommand} when the run's journal exists already: another launch of the run's agent got there first. */
export const JOURNAL_EXISTS_EXIT = 3

/**
 * The shell command that starts `command` journaled and returns at once. It
 * creates the folder and both files (mode 0600), gets the nonce (drawn from
 * `/dev/urandom`, or read from stdin with `nonceFromStdin`), appends the
 * header, then runs `command` in the background with stdout appended to the
 * journal and stderr to the `.err` sidecar, and once it exited appends the
 * exit sentinel (after a newline, so it is a line of its own even when the
 * agent's last line had none). The background shell holds no descriptor of
 * the caller's, so the command survives the host that started it, and `exec`
 * returns as soon as it is launched. Source: spec 000 "Durable runs".
 *
 * The shell that holds the nonce and waits for the agent is a copy of
 * `/bin/sh` made execute-only (mode 0111) in a fresh folder and deleted once
 * started: Linux marks a process that runs a file its user cannot read as not
 * dumpable, and a process of the same user without `CAP_SYS_PTRACE` can then
 * neither read its memory (`/proc/<pid>/mem`, `environ`) nor `ptrace` it
 * (proc(5), "PR_SET_DUMPABLE" in prctl(2)). So the agent, its child, cannot
 * lift the nonce from its parent (issue 27, item 5). A user that can read
 * the copy anyway (root with `CAP_DAC_READ_SEARCH`, as on a host run as
 * root) is not held back; docs/journal.md says where this holds.
 *
 * @param paths - From {@link journalPaths}.
 * @param command - The agent's command line (run by `sh` in a subshell, stdin per `options`).
 * @param options - {@link JournaledCommandOptions}.
 * @returns One POSIX shell command. Exit status 0 once launched; {@link JOURNAL_EXISTS_EXIT} (3), launching nothing, when the run's journal exists already (the journal is created exclusively); 1 when the folder cannot be created; 127 when the nonce tools are missing (the header says so); 2 when `nonceFromStdin` got no well-formed line. Where the copy cannot run (no `cp`, a folder mounted noexec) the waiting shell is plain `/bin/sh` and the `.err` sidecar says so.
 */
export function journaledCommand(paths: JournalPaths, command: string, options: JournaledCommandOptions = {}): string {
  const j = shellQuote(paths.journal)
  const e = shellQuote(paths.stderr)
  const parent = shellQuote(posix.dirname(paths.journal))
  const stdin = options.stdinFile === undefined ? '</dev/null' : `<${shellQuote(options.stdinFile)}`
  const removeStdin = options.stdinFile === undefined ? '' : `rm -f ${shellQuote(options.stdinFile)}; `
  const missing = 'the sandbox needs od, tr, sha256sum and /dev/urandom to draw the journal nonce'
  const nonce = options.nonceFromStdin
    ? [`read -r n h s || n=`, `case "$n$h$s" in *[!0-9a-f]*) n= ;; esac`, `if [ \${#n} -ne 32 ] || [ \${#h} -ne 64 ] || [ \${#s} -ne 32 ]; then echo 'the journal launch expected "<nonce> <hash> <salt>" on stdin' >&2; exit 2; fi`]
    : [
        `n=$(od -An -N16 -tx1 /dev/urandom 2>/dev/null | tr -d ' \\n')`,
        `h=$(printf %s "$n" | sha256sum 2>/dev/null); h=\${h%% *}`,
        `if [ \${#n} -ne 32 ] || [ \${#h} -ne 64 ]; then printf '{"${JOURNAL_HEADER_KEY}":1,"${JOURNAL_HEADER_ERROR_KEY}":"${missing}"}\\n' >> ${j}; echo ${shellQuote(missing)} >&2; exit 127; fi`,
      ]
  const header = options.nonceFromStdin
    ? `printf '{"${JOURNAL_HEADER_KEY}":1,"${JOURNAL_NONCE_HASH_KEY}":"%s","${JOURNAL_SALT_KEY}":"%s"}\\n' "$h" "$s" >> ${j}`
    : `printf '{"${JOURNAL_HEADER_KEY}":1,"${JOURNAL_NONCE_HASH_KEY}":"%s"}\\n' "$h" >> ${j}`
  // $1 is the execute-only copy of sh this runs as; it deletes it first (a running program needs no file). $0 stays `sh`.
  const waiter = [
    `if [ -n "$1" ]; then rm -f "$1"; rmdir "\${1%/*}" 2>/dev/null; fi`,
    ...nonce,
    header,
    // The agent's subshell forgets the nonce before it runs anything; only the waiting shell prints it.
    `( (unset n h s; ${removeStdin}${command}) ${stdin} >> ${j} 2>> ${e}; c=$?; printf '\\n{"${EXIT_SENTINEL_KEY}":%d,"${EXIT_SENTINEL_NONCE_KEY}":"%s"}\\n' "$c" "$n" >> ${j} ) </dev/null >/dev/null 2>&1 &`,
  ].join('\n')
  const w = `${paths.dir}/.waiter.`
  const exposed = shellQuote(`journal: the waiting shell could not run as an execute-only copy of /bin/sh from ${paths.dir} (cp or chmod missing, or the folder is mounted noexec), so it runs as /bin/sh and a process of the sandbox user could read its nonce; give durability.journalDir a folder that allows running programs`)
  return [
    journalDirGuard(paths.dir),
    `(umask 077; mkdir -p ${parent}) || exit 1`,
    // Created exclusively (noclobber): of two hosts that launch one run's agent, one gets the journal and the other
    // exits 3 without starting anything, so a run never has two agents (a takeover that starts it fresh, a host that woke).
    `if ! (umask 077; set -C; : > ${j}) 2>/dev/null; then if [ -e ${j} ]; then echo 'journal: this run has a journal already: its agent was launched by another host' >&2; exit ${JOURNAL_EXISTS_EXIT}; fi; exit 1; fi`,
    `(umask 077; : >> ${e}) || exit 1`,
    `w=${shellQuote(w)}$$; rm -rf "$w"`,
    `if (umask 077; mkdir "$w") && cp /bin/sh "$w/sh" && chmod 111 "$w/sh" && "$w/sh" -c : 2>/dev/null; then exec "$w/sh" -c ${shellQuote(waiter)} sh "$w/sh"; fi`,
    // Fallback: a folder that cannot run programs still journals, unprotected, and the .err sidecar says so.
    `rm -rf "$w"; echo ${exposed} >> ${e}`,
    `exec /bin/sh -c ${shellQuote(waiter)} sh ''`,
  ].join('\n')
}

/**
 * Follow a journal from byte `fromByte` (default 0) as it grows: create it if
 * missing, then `tail -c +N -f`. Creating first matters: `tail -f` on a
 * missing file exits at once, so a reader racing the agent's first write
 * would read nothing; and `-c +N` rather than plain `-f` matters because plain
 * `tail -f` starts at the last 10 lines. Output is the journal's raw bytes
 * (not base64: `base64` buffers a pipe that never closes). Kill the process to stop it.
 * Where `tail` takes a fractional `-s` (GNU), it polls every 100 ms when
 * inotify does not reach the file (overlayfs in Docker), instead of once a second.
 *
 * A follow never outlives its journal: a watchdog beside the `tail` (a
 * background `sh` loop, one look a second) stops it two seconds
 * ({@link FOLLOW_GONE_GRACE_S}) after the file is gone (deleted by the
 * run's own reader once it read the sentinel, or pruned), replaced by a link,
 * or renamed over by another file (its inode changed: `tail -f` would follow
 * the old one forever), or, where `/proc` exists, once
 * {@link FOLLOW_NO_WAITER_LOOKS} looks in a row, one every {@link FOLLOW_WAITER_LOOK_S}
 * seconds, find no process of the run's waiting shell (it was
 * killed, or could not write the sentinel: a full disk), and exits by itself
 * once the `tail` was killed. A journal that is a link is not followed at all. Either way the follow ends
 * without the sentinel, so the reader follows again and, with no progress,
 * gives up after its `stallMs` (`journal-stalled`). Without it a host that dies while following
 * leaves its `tail -f` of a deleted file in the sandbox for the sandbox's
 * whole life: nobody is left to kill it, and on Docker nothing makes it exit.
 *
 * @param paths - From {@link journalPaths}.
 * @param fromByte - Absolute byte offset to start at. Default 0.
 */
export function journalFollowCommand(paths: JournalPaths, fromByte = 0): string {
  const j = shellQuote(paths.journal)
  // `$$` is the shell's pid, which `exec` hands to `tail`: the watchdog kills exactly the tail it guards.
  // The file the tail follows is the one whose inode the watchdog took first: gone, a link or another inode at the path ends the follow.
  // With /proc it also looks for the run's waiting shell (a process whose command line holds this path and the header's key,
  // spelled here in two parts so this script's own command line never matches) every FOLLOW_WAITER_LOOK_S seconds, and
  // counts the looks in a row that find none. A look reads every process's command line (on local-process, the host's),
  // so it is rarer than the file checks.
  const countWaiter = paths.journal.includes("'")
    ? ''
    : `n=$((n+1)); if [ $n -ge ${FOLLOW_WAITER_LOOK_S} ] && [ -d /proc/self ]; then n=0; k=${JOURNAL_NONCE_HASH_KEY.slice(0, 5)}; if [ -z "$(grep -lF -- ${shellQuote(paths.journal)} $(grep -lF "\${k}${JOURNAL_NONCE_HASH_KEY.slice(5)}" /proc/[0-9]*/cmdline 2>/dev/null) </dev/null 2>/dev/null)" ]; then g=$((g+1)); else g=0; fi; fi; `
  const watchdog = `(g=0; n=0; set -- $(ls -di ${j}); i=$1; while kill -0 $$ 2>/dev/null; do ${countWaiter}set -- $(ls -di ${j} 2>/dev/null); if [ ! -e ${j} ] || [ -L ${j} ] || [ "$1" != "$i" ] || [ $g -ge ${FOLLOW_NO_WAITER_LOOKS} ]; then sleep ${FOLLOW_GONE_GRACE_S}; kill $$ 2>/dev/null; exit 0; fi; sleep 1; done) </dev/null >/dev/null 2>&1 &`
  const from = checkedJournalOffset(fromByte) + 1
  // GNU tail polls once a second where inotify does not reach (overlayfs: Docker); `-s 0.1` polls every 100 ms there. BusyBox refuses a fraction: it keeps its default.
  const follow = `if tail -s ${FOLLOW_POLL_S} -c 0 /dev/null >/dev/null 2>&1; then exec tail -s ${FOLLOW_POLL_S} -c +${from} -f ${j}; else exec tail -c +${from} -f ${j}; fi`
  const refuseLink = `if [ -L ${j} ]; then echo ${shellQuote(`the journal ${paths.journal} is a link, not the file its shell made; it is not followed`)} >&2; exit 1; fi`
  return `${journalDirGuard(paths.dir)}\n${refuseLink}\n(umask 077; mkdir -p ${shellQuote(posix.dirname(paths.journal))} && : >> ${j}) && { ${watchdog} } && ${follow}`
}

/** Seconds between two looks at the journal of a GNU `tail -f` that cannot use inotify (overlayfs). */
const FOLLOW_POLL_S = '0.1'

/** Seconds between two looks for the run's waiting shell (each reads every process's command line). */
const FOLLOW_WAITER_LOOK_S = 5

/**
 * Looks in a row that find no waiting shell of the run before a follow ends
 * (5 to 10 s after the shell is gone): longer than the moment between the
 * agent's exit and the sentinel, which ends the reader by itself.
 */
const FOLLOW_NO_WAITER_LOOKS = 2

/**
 * Seconds a follow's `tail` keeps running after its journal is gone, so a
 * reader still behind (BusyBox's `tail -f` polls once a second) gets the last
 * bytes, the sentinel included, before the watchdog stops it.
 */
const FOLLOW_GONE_GRACE_S = 2

/** Exit status 0 when the journal exists (`test -f`). */
export function journalExistsCommand(paths: JournalPaths): string {
  return `test -f ${shellQuote(paths.journal)}`
}

/**
 * List the `.ndjson` files under a journal folder, one absolute path per line
 * (nothing when the folder does not exist). Parse with {@link parseJournalList}.
 *
 * @param dir - The journal folder. Default {@link DEFAULT_JOURNAL_DIR}.
 */
export function journalListCommand(dir: string = DEFAULT_JOURNAL_DIR): string {
  const d = shellQuote(normalizeJournalDir(dir))
  return `if [ -d ${d} ]; then find ${d} -type f -name '*.ndjson'; fi`
}

/** Parse {@link journalListCommand}'s output into entries (sorted by name). */
export function parseJournalList(stdout: string, dir: string = DEFAULT_JOURNAL_DIR): JournalDirEntry[] {
  const root = normalizeJournalDir(dir)
  const entries: JournalDirEntry[] = []
  for (const line of stdout.split('\n')) {
    const entry = entryFor(line, root)
    if (entry) entries.push(entry)
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/**
 * List the journals under a folder with their modification times: the
 * sandbox clock first (`date +%s`), then `<mtime seconds> <path>` per journal.
 * Uses `date -r FILE`, which GNU and BusyBox both have. Parse with
 * {@link parseJournalMtimeListing}.
 *
 * @param dir - The journal folder. Default {@link DEFAULT_JOURNAL_DIR}.
 */
export function journalMtimeListCommand(dir: string = DEFAULT_JOURNAL_DIR): string {
  const d = shellQuote(normalizeJournalDir(dir))
  return `date +%s; if [ -d ${d} ]; then find ${d} -type f -name '*.ndjson' | while IFS= read -r f; do m=$(date -r "$f" +%s 2>/dev/null) && printf '%s %s\\n' "$m" "$f"; done; fi`
}

/**
 * Parse {@link journalMtimeListCommand}'s output.
 *
 * @throws JournalError `read-failed` when the first line is not the sandbox clock.
 */
export function parseJournalMtimeListing(stdout: string, dir: string = DEFAULT_JOURNAL_DIR): JournalMtimeListing {
  const root = normalizeJournalDir(dir)
  const lines = stdout.split('\n')
  const now = Number((lines[0] ?? '').trim())
  if (!Number.isSafeInteger(now) || now <= 0) {
    throw new JournalError('read-failed', `A journal listing did not start with the sandbox clock (${JSON.stringify((lines[0] ?? '').slice(0, 80))}); check that the sandbox has date, find and sh.`)
  }
  const entries: JournalDirEntry[] = []
  for (const line of lines.slice(1)) {
    const match = /^(\d+) (\/.*)$/.exec(line)
    if (!match) continue
    const entry = entryFor(match[2]!, root)
    if (entry) entries.push({ ...entry, mtimeMs: Number(match[1]) * 1000 })
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return { nowMs: now * 1000, entries }
}

/**
 * Look at a journal without reading it whole: prints `missing`, or `present`,
 * then the base64 of its first line (at most 4 KiB: the header) and, after a
 * line `.`, the base64 of its last `bytes`. Parse with {@link parseJournalExit}.
 *
 * @param paths - From {@link journalPaths}.
 * @param bytes - How much of the end to read. Default {@link DEFAULT_EXIT_PROBE_BYTES}.
 */
export function journalExitProbeCommand(paths: JournalPaths, bytes: number = DEFAULT_EXIT_PROBE_BYTES): string {
  const j = shellQuote(paths.journal)
  return `if [ -f ${j} ]; then echo present; head -c 4096 ${j} | head -n 1 | base64; echo .; tail -c ${Math.max(1, Math.trunc(bytes))} ${j} | base64; else echo missing; fi`
}

/**
 * Whether a journal's agent exited, from {@link journalExitProbeCommand}'s
 * output: `exited` only for a GENUINE sentinel (its nonce matches the
 * trusted header, else the journal's own), `running` for a journal without
 * one, `missing` for no journal.
 *
 * @param stdout - The probe's output.
 * @param trust - The provider's secret and the run id (`journalTrustOf`): the
 *   sentinel is then checked against the hash the secret gives, not the
 *   journal's own header, and a journal the agent rewrote never reads as exited.
 * @throws JournalError `read-failed` when the output is not what the probe prints.
 */
export function parseJournalExit(stdout: string, trust?: JournalTrust): JournalExitState {
  const lines = stdout.split('\n')
  const status = (lines[0] ?? '').trim()
  if (status === 'missing') return { state: 'missing' }
  const dot = lines.indexOf('.')
  if (status !== 'present' || dot === -1) {
    throw new JournalError('read-failed', `A journal exit probe printed something unexpected (${JSON.stringify(stdout.slice(0, 120))}); check that the sandbox has head, tail and base64.`)
  }
  const head = Buffer.from(lines.slice(1, dot).join(''), 'base64').toString('utf8')
  const own = parseJournalHeader(head.split('\n')[0] ?? '')
  const header = expectedJournalHeader(own, trust)
  // A journal that does not start with its header (or not the expected one) was rewritten: nothing in it says the run ended.
  if (own?.nonceHash === undefined || header?.nonceHash !== own.nonceHash) return { state: 'running' }
  const tail = Buffer.from(lines.slice(dot + 1).join(''), 'base64').toString('utf8')
  // The tail's first line may be cut; a sentinel is short and always starts a line of its own.
  for (const line of tail.split('\n')) {
    const sentinel = parseExitSentinel(line, header)
    if (sentinel && header?.error === undefined) return { state: 'exited', exitCode: sentinel.exitCode }
  }
  return { state: 'running' }
}

/** Delete a run's journal and sidecar, then the folders a long run id made (only when empty). */
export function journalCleanupCommand(paths: JournalPaths): string {
  const parts = [`rm -f ${shellQuote(paths.journal)} ${shellQuote(paths.stderr)}`]
  for (let folder = posix.dirname(paths.journal); folder !== paths.dir && folder.startsWith(`${paths.dir}/`); folder = posix.dirname(folder)) {
    parts.push(`rmdir ${shellQuote(folder)} 2>/dev/null`)
  }
  return `${parts.join('; ')}; true`
}

/** The last `bytes` of the run's stderr sidecar (nothing when it does not exist). */
export function journalStderrTailCommand(paths: JournalPaths, bytes: number): string {
  const e = shellQuote(paths.stderr)
  return `if [ -f ${e} ]; then tail -c ${Math.max(1, Math.trunc(bytes))} ${e}; fi`
}

function entryFor(path: string, root: string): JournalDirEntry | undefined {
  const prefix = root === '/' ? '/' : `${root}/`
  if (!path.startsWith(prefix) || !path.endsWith('.ndjson')) return undefined
  const name = path.slice(prefix.length)
  const decoded = decodeJournalRunId(name)
  return { path, name, runId: decoded.ok ? decoded.runId : undefined }
}

/**
 * A journal byte offset, checked: a whole number >= 0. Internal to the journal's commands.
 *
 * @throws JournalError `read-failed` otherwise.
 */
export function checkedJournalOffset(fromByte: number): number {
  if (!Number.isSafeInteger(fromByte) || fromByte < 0) throw new JournalError('read-failed', `A journal offset must be a whole number of bytes >= 0; got ${String(fromByte)}.`)
  return fromByte
}
