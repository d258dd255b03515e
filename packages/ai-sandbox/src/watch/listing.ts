/**
 * The portable workspace listing behind the poll watcher and every
 * reconciliation: one `find` through `exec`, parsed into a map from
 * workspace-relative path to a change signature (inode, size, mtime with ns).
 * Invariant: a listed path is a plain workspace-relative path (no empty, `.`
 * or `..` segment) decoded from valid UTF-8; anything else is left out.
 * Design notes: docs/design/watch.md
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { shellJoin, shellQuote } from '../shell/quote.js'
import { WorkspaceWatchError } from './errors.js'

/** Path to signature (`'<inode> <size> <mtime>'`); files and symlinks only, never directories. */
export type WorkspaceListing = ReadonlyMap<string, string>

/** One difference between two listings. */
export interface ListingChange {
  readonly type: 'create' | 'change' | 'delete'
  /** Workspace-relative, `/`-separated. */
  readonly path: string
}

/** Told about a name the listing leaves out; a name that is not UTF-8 comes with every byte outside printable ASCII as `\xNN`. */
export type ListingSkip = (name: string, why: 'not-utf8' | 'not-plain') => void

/** The signature `stat` prints per file; no `%n`, the name travels encoded. */
const SIGNATURE_FORMAT = '%i %s %y'

/**
 * One batch of names from `find`: the names NUL-terminated in base64, a `:`
 * line (outside the base64 alphabet), then one signature line per name in
 * the same order. When a file is gone by the time `stat` runs (it then
 * prints one line fewer and fails), a `!` line discards the batch's lines so
 * far and each name is stat'ed on its own, a gone one printing `-`.
 */
const BATCH_SCRIPT = [
  `printf '%s\\0' "$@" | base64`,
  'echo :',
  `stat -c ${shellQuote(SIGNATURE_FORMAT)} "$@" 2>/dev/null || { echo !; for f do stat -c ${shellQuote(SIGNATURE_FORMAT)} "$f" 2>/dev/null || echo -; done; }`,
].join('\n')

/** Exits 127 naming a missing tool (inside a batch its failure would pass unnoticed). */
const TOOLS_CHECK = 'for t in find stat base64; do command -v "$t" >/dev/null 2>&1 || { echo "$t: not found" >&2; exit 127; }; done'

const BASE64_LINE = /^[A-Za-z0-9+/=]+$/
const SIGNATURE_LINE = /^\d+ \d+ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [+-]\d{4}$/
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * The shell command that lists every file and symlink below the current
 * directory, pruning `ignore` entries (a name prunes that name at any depth;
 * an entry with a `/` prunes that workspace-relative path).
 *
 * @example
 * ```ts
 * listCommand(['.git', 'node_modules'])
 * // for t in find stat base64; do ...; done
 * // find . \( -name .git -o -name node_modules \) -prune -o \( -type f -o -type l \) -exec sh -c '<batch script>' sh {} +
 * ```
 */
export function listCommand(ignore: readonly string[]): string {
  const prunes = ignore.map((entry) => (entry.includes('/') ? `-path ${shellQuote(`./${entry.replace(/^\.?\/+|\/+$/g, '')}`)}` : `-name ${shellQuote(entry)}`))
  const prune = prunes.length > 0 ? `\\( ${prunes.join(' -o ')} \\) -prune -o ` : ''
  return `${TOOLS_CHECK}\nfind . ${prune}\\( -type f -o -type l \\) -exec ${shellJoin(['sh', '-c', BATCH_SCRIPT, 'sh'])} {} +`
}

/**
 * Parse the output of {@link listCommand}. A name that is not UTF-8, or not
 * a plain path below `.`, is left out and reported to `onSkip`; a file gone
 * between `find` and `stat` is left out silently.
 *
 * @throws WorkspaceWatchError `list-failed` when the output does not have the
 *   command's shape (a truncated or foreign output must not read as deletions).
 * @example
 * ```ts
 * parseListing('Li9hAA==\n:\n1630978 3 2026-11-29 09:27:09.542328599 +0000\n').get('a') // '1630978 3 2026-11-29 09:27:09.542328599 +0000'
 * ```
 */
export function parseListing(stdout: string, onSkip?: ListingSkip): Map<string, string> {
  const listing = new Map<string, string>()
  const lines = stdout.split('\n')
  if (lines.at(-1) === '') lines.pop()
  let at = 0
  while (at < lines.length) {
    const encoded: string[] = []
    for (; at < lines.length && lines[at] !== ':'; at++) {
      if (!BASE64_LINE.test(lines[at]!)) throw malformed(`line ${at + 1} is neither base64 nor a batch separator`)
      encoded.push(lines[at]!)
    }
    if (at === lines.length) throw malformed('the last batch has no separator')
    at++
    const names = splitNames(encoded.join(''))
    let signatures: string[] = []
    while (signatures.length < names.length || lines[at] === '!') {
      const line = lines[at++]
      if (line === undefined) throw malformed('a batch has fewer signatures than names')
      if (line === '!') signatures = [] // stat failed on a gone file: the per-name lines follow
      else if (line === '-' || SIGNATURE_LINE.test(line)) signatures.push(line)
      else throw malformed(`line ${at} is not a stat signature`)
    }
    names.forEach((bytes, i) => {
      if (signatures[i] === '-') return // gone since find saw it
      const path = plainPath(bytes, onSkip)
      if (path !== null) listing.set(path, signatures[i]!)
    })
  }
  return listing
}

/** The NUL-terminated names of one batch. */
function splitNames(base64: string): Buffer[] {
  const bytes = Buffer.from(base64, 'base64')
  if (base64.length % 4 !== 0 || bytes.length === 0 || bytes[bytes.length - 1] !== 0) throw malformed('a batch of names is not NUL-terminated base64')
  const names: Buffer[] = []
  for (let start = 0; start < bytes.length; ) {
    const end = bytes.indexOf(0, start)
    names.push(bytes.subarray(start, end))
    start = end + 1
  }
  return names
}

/** `./a/b` as `a/b`, or `null` (reported to `onSkip`) when it is not UTF-8 or not a plain path. */
function plainPath(bytes: Buffer, onSkip: ListingSkip | undefined): string | null {
  let name: string
  try {
    name = utf8.decode(bytes)
  } catch {
    onSkip?.([...bytes].map((byte) => (byte >= 0x20 && byte < 0x7f && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`)).join(''), 'not-utf8')
    return null
  }
  const path = name.startsWith('./') ? name.slice(2) : ''
  if (path.split('/').some((part) => part === '' || part === '.' || part === '..')) {
    onSkip?.(name, 'not-plain')
    return null
  }
  return path
}

function malformed(detail: string): WorkspaceWatchError {
  return new WorkspaceWatchError('list-failed', `The workspace listing has an unexpected shape (${detail}); the next poll or flush lists again.`)
}

const LISTED_STAT = /^\d+ (\d+) (\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))? ([+-]\d\d)(\d\d)$/

/**
 * Size and mtime (epoch ms, with the fraction) of a listing signature, to
 * compare with an `lstat`; `null` when it does not parse.
 *
 * @example
 * ```ts
 * listedStat('1630978 3 2026-11-29 09:27:09.542328599 +0000') // { size: 3, mtimeMs: 1795944429542.3286 }
 * ```
 */
export function listedStat(signature: string): { size: number; mtimeMs: number } | null {
  const match = LISTED_STAT.exec(signature)
  if (!match) return null
  const [, size, day, time, fraction = '0', zoneHours, zoneMinutes] = match
  const seconds = Date.parse(`${day}T${time}${zoneHours}:${zoneMinutes}`)
  return Number.isNaN(seconds) ? null : { size: Number(size), mtimeMs: seconds + Number(`0.${fraction}`) * 1000 }
}

/**
 * What changed from `previous` to `next`, sorted by path. A path whose
 * previous signature is `null` (reported by a native watcher, signature
 * unknown) counts as unchanged while it exists.
 *
 * @example
 * ```ts
 * diffListings(new Map([['a', '1 1 t']]), new Map([['b', '2 1 t']])) // [{ type: 'create', path: 'b' }, { type: 'delete', path: 'a' }]
 * ```
 */
export function diffListings(previous: ReadonlyMap<string, string | null>, next: WorkspaceListing): ListingChange[] {
  const changes: ListingChange[] = []
  for (const [path, signature] of next) {
    if (!previous.has(path)) changes.push({ type: 'create', path })
    else {
      const before = previous.get(path)
      if (before !== null && before !== signature) changes.push({ type: 'change', path })
    }
  }
  for (const path of previous.keys()) if (!next.has(path)) changes.push({ type: 'delete', path })
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/**
 * List the workspace of `handle` with one `exec`.
 *
 * @param options.signal - Aborts the `exec`.
 * @param options.onSkip - Told about each name left out (see {@link parseListing}).
 * @throws WorkspaceWatchError `list-failed` when the command fails without
 *   printing anything (no `find`, `stat` or `base64` in the sandbox, or the
 *   sandbox is gone), or prints something else than a listing. A file
 *   vanishing mid-walk is not an error.
 */
export async function listWorkspace(handle: SandboxHandle, ignore: readonly string[], options: { signal?: AbortSignal; onSkip?: ListingSkip } = {}): Promise<Map<string, string>> {
  let result
  try {
    result = await handle.process.exec(listCommand(ignore), { cwd: handle.workspaceRoot, ...(options.signal ? { signal: options.signal } : {}) })
  } catch (error) {
    throw new WorkspaceWatchError('list-failed', `Listing the workspace of sandbox ${handle.id} failed: ${(error as Error).message}`, { cause: error })
  }
  // find exits 1 when a file vanished during the walk; what it printed is still right.
  if (result.exitCode !== 0 && result.stdout === '') {
    throw new WorkspaceWatchError(
      'list-failed',
      `Listing the workspace of sandbox ${handle.id} failed with exit code ${result.exitCode}: ${result.stderr.trim().slice(-500) || '(no output)'}. The poll watcher needs \`find\`, \`stat -c\` and \`base64\` (GNU coreutils or BusyBox) in the sandbox image.`,
    )
  }
  return parseListing(result.stdout, options.onSkip)
}
