/**
 * The content baseline of a run: the workspace as it was when the run started
 * (a git snapshot tree, else the `HEAD` commit, else nothing), so a file's
 * before/after/diff are this run's change. A file over `maxDiffFileBytes` is
 * never read (`tooLarge`); a FIFO, socket or device is never opened.
 * Invariant: nothing here throws for a missing file; absence reads as `''`.
 * Design notes: docs/design/watch.md
 */
import { randomUUID } from 'node:crypto'
import { SandboxLimitError } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import { toWorkspaceRelative } from '../paths/workspace-path.js'
import { shellQuote } from '../shell/quote.js'
import { recordStartSnapshot, type StartSnapshot } from './start-snapshot.js'

/** Files diffed per `exec`. */
const DIFF_BATCH = 100

/**
 * The largest file, in bytes, whose content a run's diffs and file-hook
 * accessors read (8 MiB): past it, `file.changed` reports the change with
 * `tooLarge: true` and no content, so a huge file the agent wrote (a 2 GB
 * sparse log) never reaches host memory.
 */
export const DEFAULT_MAX_DIFF_FILE_BYTES = 8 * 1024 * 1024

/** One file's diff, with why its content was left out, if it was. */
export interface FileDiff {
  /** The unified diff, or for a file left out a header and a line saying why; `''` when there is none. */
  readonly diff: string
  /** Set when the file (now, or at the run's start) is larger than `maxDiffFileBytes`: its content was not read. */
  readonly tooLarge?: true
  /** The size in bytes of the file found too large. */
  readonly size?: number
  /** Set when the path is a FIFO, socket or device: it was not opened. */
  readonly notRegular?: true
}

/** Entries left out of the snapshot when `ignore` is not given (those `watchWorkspace` ignores by default). */
const DEFAULT_IGNORE: readonly string[] = ['.git', 'node_modules']

/** Content of files at the run's start and now. Paths are absolute inside the sandbox (or workspace-relative). */
export interface FileBaseline {
  /** The commit `HEAD` pointed at when the run started, or `null` when the workspace is not a git repository with a commit. */
  readonly commit: string | null
  /** The git tree of the workspace at the run's start, or `null` when none was recorded (no git in the sandbox). */
  readonly snapshot: string | null
  /** `true` when the snapshot is one an earlier host of the same durable run recorded (see `snapshotDir`): changes before this host started are in the diffs too. */
  readonly resumed: boolean
  /** Workspace-relative paths an earlier host of the run kept out of its diffs (`[]` unless {@link FileBaseline.resumed}). */
  readonly excluded: readonly string[]
  /** Store workspace-relative paths kept out of the diffs beside a durable snapshot, for a later host of the run. Never throws. */
  rememberExcluded: (paths: readonly string[]) => Promise<void>
  /**
   * Every file that differs from the snapshot now, with an absolute path and
   * what happened to it since the start (`create`: the snapshot lacks it,
   * `change`, `delete`), leaving out what the snapshot left out (`ignore`,
   * what git ignores). `[]` without a snapshot.
   * @throws Error when the listing command fails.
   */
  changedFiles: () => Promise<Array<{ path: string; type: 'create' | 'change' | 'delete' }>>
  /**
   * Content at the run's start; `''` for a file the baseline lacks, and always `''` when nothing was recorded.
   * @throws SandboxLimitError `file-too-large` when it was larger than `maxDiffFileBytes` (it is not read).
   */
  before: (path: string) => Promise<string>
  /**
   * Current content; `''` when the file does not exist or is not a regular file (a FIFO, socket or device is not opened).
   * @throws SandboxLimitError `file-too-large` when it is larger than `maxDiffFileBytes` (it is not read).
   */
  after: (path: string) => Promise<string>
  /** Unified diff of each path against the baseline (`''` when there is none), keyed by the path as given. */
  diff: (paths: readonly string[]) => Promise<Map<string, string>>
  /** Like {@link FileBaseline.diff}, with the `tooLarge` / `notRegular` flags of each file. */
  diffs: (paths: readonly string[]) => Promise<Map<string, FileDiff>>
  /**
   * Stop using the snapshot: remove its folder, or with `keep` leave it for a
   * later host of the durable run. Never throws; the accessors then fall back
   * to the start commit, or to nothing.
   */
  dispose: (options?: { keep?: boolean }) => Promise<void>
}

/** What the diffs are taken against. */
type Base = { kind: 'snapshot'; snapshot: StartSnapshot } | { kind: 'commit'; sha: string } | { kind: 'none' }

/**
 * Record the baseline of `handle`'s workspace now (two `exec`s: `git rev-parse`, then the snapshot).
 *
 * @param options.ignore - Entries left out of the snapshot, as `watchWorkspace` takes them. Default `['.git', 'node_modules']`.
 * @param options.maxDiffFileBytes - The largest file read for a diff or an accessor, in bytes. Default {@link DEFAULT_MAX_DIFF_FILE_BYTES} (8 MiB).
 * @param options.snapshotDir - A durable run's snapshot folder (`durableRunFiles(runId, dir).baseline`): a snapshot stored there by an earlier host of the run is reused. Default: a fresh temp folder.
 * @returns A {@link FileBaseline}; without git in the sandbox it records nothing (add-patch diffs).
 * @example
 * ```ts
 * const baseline = await captureFileBaseline(handle)
 * const diffs = await baseline.diff(['/workspace/notes.txt'])
 * await baseline.dispose()
 * ```
 */
export async function captureFileBaseline(handle: SandboxHandle, options: { ignore?: readonly string[]; maxDiffFileBytes?: number; snapshotDir?: string } = {}): Promise<FileBaseline> {
  const cwd = handle.workspaceRoot
  const max = options.maxDiffFileBytes ?? DEFAULT_MAX_DIFF_FILE_BYTES
  const tooLarge = (path: string, size: number) =>
    new SandboxLimitError('file-too-large', {
      limitBytes: max,
      option: 'maxDiffFileBytes',
      path,
      message: `${path} is ${size} bytes, more than maxDiffFileBytes (${max} bytes), so its content is not read. Read it in parts with process.exec (head, tail) or process.spawn.`,
    })
  const head = await handle.process.exec(`git rev-parse --verify -q ${shellQuote('HEAD^{commit}')} 2>/dev/null`, { cwd }).catch(() => null)
  const sha = head?.exitCode === 0 && /^[0-9a-f]{40,64}$/.test(head.stdout.trim()) ? head.stdout.trim() : null
  const snapshot = await recordStartSnapshot(handle, options.ignore ?? DEFAULT_IGNORE, options.snapshotDir)
  let base: Base = snapshot ? { kind: 'snapshot', snapshot } : sha ? { kind: 'commit', sha } : { kind: 'none' }
  const rel = (path: string) => toWorkspaceRelative(path, cwd)

  const self: FileBaseline = {
    commit: sha,
    snapshot: snapshot?.tree ?? null,
    resumed: snapshot?.reused ?? false,
    excluded: snapshot?.excluded ?? [],
    rememberExcluded: (paths) => snapshot?.rememberExcluded(paths) ?? Promise.resolve(),
    async changedFiles() {
      const current = base
      if (current.kind !== 'snapshot') return []
      const { env, tree, dir } = current.snapshot
      // The private index holds the start: what differs from the tree (a status letter, then the path), then what is
      // not in it (new files), each part NUL-terminated.
      const boundary = `@@tanstack-new-${randomUUID()}@@`
      const script = [
        env,
        `git diff --name-status -z --no-renames --relative ${tree} -- . || exit 1`,
        `printf '%s\\0' '${boundary}'`,
        `git -c core.excludesFile=${shellQuote(`${dir}/exclude`)} ls-files -o -z --exclude-standard -- . || exit 1`,
      ].join('\n')
      const result = await handle.process.exec(script, { cwd })
      if (result.exitCode !== 0) throw new Error(`listing the files that differ from the run's start failed (exit ${result.exitCode}): ${result.stderr.trim().slice(0, 200)}`)
      const root = cwd.replace(/\/+$/, '')
      const parts = result.stdout.split('\0')
      const end = parts.indexOf(boundary)
      const files = new Map<string, 'create' | 'change' | 'delete'>()
      for (let i = 0; i + 1 < end; i += 2) files.set(`${root}/${parts[i + 1]}`, parts[i] === 'D' ? 'delete' : parts[i] === 'A' ? 'create' : 'change')
      for (const path of parts.slice(end + 1)) if (path !== '') files.set(`${root}/${path}`, 'create')
      return [...files].map(([path, type]) => ({ path, type }))
    },
    async before(path) {
      const current = base
      if (current.kind === 'none') return ''
      const [prefix, rev] = current.kind === 'snapshot' ? [`${current.snapshot.env}\n`, current.snapshot.tree] : ['', current.sha]
      const object = shellQuote(`${rev}:./${rel(path)}`)
      // The blob's size first: one larger than the bound is never shown.
      const shown = await handle.process.exec(`${prefix}s=$(git cat-file -s ${object} 2>/dev/null) || exit 1\nif [ "$s" -gt ${max} ]; then printf 'L%s' "$s"; exit 3; fi\ngit show ${object}`, { cwd }).catch(() => null)
      if (shown?.exitCode === 3) throw tooLarge(path, Number(shown.stdout.slice(1)))
      return shown?.exitCode === 0 ? shown.stdout : ''
    },
    async after(path) {
      let size: number | undefined
      if (handle.fs.lstat) {
        const stat = await handle.fs.lstat(path).catch(() => null)
        if (!stat || stat.type === 'other' || stat.type === 'directory') return '' // missing, or a FIFO/socket/device that must not be opened
        size = stat.type === 'file' ? stat.size : undefined
      }
      if (size !== undefined && size > max) throw tooLarge(path, size)
      try {
        return await handle.fs.read(path)
      } catch (error) {
        if (SandboxLimitError.isInstance(error)) throw error // the provider's own read bound
        return '' // missing (deleted, or never there): absence reads as empty content
      }
    },
    async diff(paths) {
      return new Map([...(await self.diffs(paths))].map(([path, entry]) => [path, entry.diff]))
    },
    async diffs(paths) {
      const current = base
      const out = new Map<string, FileDiff>()
      for (let start = 0; start < paths.length; start += DIFF_BATCH) {
        const batch = paths.slice(start, start + DIFF_BATCH)
        const relative = batch.map(rel)
        const boundary = `@@tanstack-diff-${randomUUID()}@@`
        const prefix = current.kind === 'snapshot' ? [current.snapshot.env] : []
        const script = [...prefix, ...relative.map((path, i) => `printf '\\n%s %d\\n' '${boundary}' ${i}\n${guardedDiffScript(current, path, max)}`), `printf '\\n%s end\\n' '${boundary}'`].join('\n')
        let result
        try {
          result = await handle.process.exec(script, { cwd })
        } catch (error) {
          // A batch of files each under the bound can still pass the exec output limit together: one exec per file then.
          if (!SandboxLimitError.isInstance(error) || batch.length === 1) throw error
          for (const path of batch) for (const [key, value] of await self.diffs([path])) out.set(key, value)
          continue
        }
        const segments = splitSegments(result.stdout, boundary)
        batch.forEach((path, i) => out.set(path, toFileDiff(current, relative[i]!, segments.get(i) ?? '', max)))
      }
      return out
    },
    async dispose(options = {}) {
      base = sha ? { kind: 'commit', sha } : { kind: 'none' }
      if (!options.keep) await snapshot?.dispose()
    },
  }
  return self
}

/**
 * {@link diffScript} behind two checks that keep memory bounded: a FIFO,
 * socket or device prints `n` (never opened: reading a FIFO would block); a
 * regular file now, or a blob in the baseline, larger than `max` bytes
 * prints `L` and its size (never read).
 */
function guardedDiffScript(base: Base, path: string, max: number): string {
  const p = shellQuote(path)
  const local = shellQuote(`./${path}`)
  const baseSize = base.kind === 'none' ? '' : ` || { s=$(git cat-file -s ${shellQuote(`${base.kind === 'snapshot' ? base.snapshot.tree : base.sha}:./${path}`)} 2>/dev/null) && [ "$s" -gt ${max} ]; }`
  return [
    `if [ -p ${p} ] || [ -S ${p} ] || [ -c ${p} ] || [ -b ${p} ]; then printf 'n'`,
    `elif { [ -f ${p} ] && [ ! -L ${p} ] && s=$(stat -c %s ${local} 2>/dev/null) && [ "$s" -gt ${max} ]; }${baseSize}; then printf 'L%s' "$s"`,
    'else',
    diffScript(base, path),
    'fi',
  ].join('\n')
}

/** A segment of {@link guardedDiffScript} output as the file's diff and flags. */
function toFileDiff(base: Base, path: string, segment: string, max: number): FileDiff {
  const header = `diff --git a/${path} b/${path}\n`
  if (segment.startsWith('n')) return { diff: `${header}b/${path} is not a regular file (a FIFO, socket or device), so it was not read\n`, notRegular: true }
  if (segment.startsWith('L')) {
    const size = Number(segment.slice(1).trim())
    return { diff: `${header}File b/${path} is too large to diff (${size} bytes, over maxDiffFileBytes ${max})\n`, tooLarge: true, size }
  }
  return { diff: toPatch(base, path, segment) }
}

/**
 * One file's diff script. Its output starts with `g` and git's patch, or `+`
 * and the file's content (to become an add-patch), or is empty.
 */
function diffScript(base: Base, path: string): string {
  if (base.kind === 'none') return contentScript(path)
  const rev = base.kind === 'snapshot' ? base.snapshot.tree : base.sha
  const p = shellQuote(path)
  const flags = '--no-color --no-ext-diff --no-renames'
  const absent = `! git cat-file -e ${shellQuote(`${rev}:./${path}`)} 2>/dev/null`
  // A file the baseline lacks: outside a repository an add-patch (as without git), inside one what git prints for it.
  const added = base.kind === 'snapshot' && base.snapshot.mode === 'shadow' ? `elif [ -f ${p} ] && [ ! -L ${p} ] && ${absent}; then printf '+'; cat -- ${p}` : `elif { [ -e ${p} ] || [ -L ${p} ]; } && ${absent}; then printf 'g'; git diff ${flags} --no-index -- /dev/null ${p}`
  return [`d=$(git diff ${flags} ${rev} -- ${p} 2>/dev/null)`, `if [ -n "$d" ]; then printf 'g%s\\n' "$d"`, added, 'fi'].join('\n')
}

/** A segment of {@link diffScript} output as the patch to report. */
function toPatch(base: Base, path: string, segment: string): string {
  if (segment.startsWith('+')) return addPatch(path, segment.slice(1))
  if (!segment.startsWith('g')) return ''
  const patch = segment.slice(1)
  // Outside a repository the blob ids name objects of the private snapshot only: leave them out, as an add-patch does.
  return base.kind === 'snapshot' && base.snapshot.mode === 'shadow' ? patch.replace(/^index [0-9a-f]+\.\.[0-9a-f]+(?: \d+)?\n/gm, '') : patch
}

/** Without git: `+` and the content when the file exists, nothing when it does not. */
function contentScript(path: string): string {
  const p = shellQuote(path)
  return `if [ -f ${p} ] && [ ! -L ${p} ]; then printf '+'; cat -- ${p}; fi`
}

/** The output of one diff script, by file index. */
function splitSegments(stdout: string, boundary: string): Map<number, string> {
  const segments = new Map<number, string>()
  for (const piece of stdout.split(`\n${boundary} `).slice(1)) {
    const eol = piece.indexOf('\n')
    const index = Number(piece.slice(0, eol))
    if (Number.isInteger(index)) segments.set(index, piece.slice(eol + 1))
  }
  return segments
}

/**
 * A unified add-patch for a file with `content` (what `git diff` prints for a
 * new file, without the index line).
 *
 * @param path - Workspace-relative path shown in the headers.
 * @example
 * ```ts
 * addPatch('a.txt', 'hello\n') // 'diff --git a/a.txt b/a.txt\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hello\n'
 * ```
 */
export function addPatch(path: string, content: string): string {
  const header = `diff --git a/${path} b/${path}\n--- /dev/null\n+++ b/${path}\n`
  if (content === '') return header
  if (content.includes('\0')) return `diff --git a/${path} b/${path}\nBinary files /dev/null and b/${path} differ\n`
  const lines = content.split('\n')
  const endsWithNewline = lines.at(-1) === ''
  if (endsWithNewline) lines.pop()
  const body = lines.map((line) => `+${line}\n`).join('')
  return `${header}@@ -0,0 +1${lines.length === 1 ? '' : `,${lines.length}`} @@\n${body}${endsWithNewline ? '' : '\\ No newline at end of file\n'}`
}
