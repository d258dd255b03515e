/**
 * The content baseline of a run: the workspace as it was when the run started,
 * so before/after/diff of a file are this run's change. With git in the
 * sandbox that is a snapshot tree (`start-snapshot.ts`) covering tracked,
 * modified and untracked files alike; if it cannot be recorded, the commit
 * `HEAD` pointed at (a git repository with a commit); else nothing, and a
 * diff is a synthesized add-patch of the current content. Diffs of many files
 * take one `exec` per 100 files.
 * Invariant: nothing here throws for a missing file; absence reads as `''`.
 */
import { randomUUID } from 'node:crypto'
import type { SandboxHandle } from '../contracts/handle.js'
import { toWorkspaceRelative } from '../paths/workspace-path.js'
import { shellQuote } from '../shell/quote.js'
import { recordStartSnapshot, type StartSnapshot } from './start-snapshot.js'

/** Files diffed per `exec`. */
const DIFF_BATCH = 100

/** Entries left out of the snapshot when `ignore` is not given (those `watchWorkspace` ignores by default). */
const DEFAULT_IGNORE: readonly string[] = ['.git', 'node_modules']

/** Content of files at the run's start and now. Paths are absolute inside the sandbox (or workspace-relative). */
export interface FileBaseline {
  /** The commit `HEAD` pointed at when the run started, or `null` when the workspace is not a git repository with a commit. */
  readonly commit: string | null
  /** The git tree of the workspace at the run's start, or `null` when none was recorded (no git in the sandbox). */
  readonly snapshot: string | null
  /** Content at the run's start; `''` for a file the baseline lacks, and always `''` when nothing was recorded. */
  before: (path: string) => Promise<string>
  /** Current content; `''` when the file does not exist. */
  after: (path: string) => Promise<string>
  /** Unified diff of each path against the baseline (`''` when there is none), keyed by the path as given. */
  diff: (paths: readonly string[]) => Promise<Map<string, string>>
  /** Remove what recording the start left in the sandbox's temp folder. Never throws; the accessors then fall back to the start commit, or to nothing. */
  dispose: () => Promise<void>
}

/** What the diffs are taken against. */
type Base = { kind: 'snapshot'; snapshot: StartSnapshot } | { kind: 'commit'; sha: string } | { kind: 'none' }

/**
 * Record the baseline of `handle`'s workspace now (two `exec`s: `git rev-parse`, then the snapshot).
 *
 * @param options.ignore - Entries left out of the snapshot, as `watchWorkspace` takes them. Default `['.git', 'node_modules']`.
 * @returns A {@link FileBaseline}; without git in the sandbox it records nothing (add-patch diffs).
 * @example
 * ```ts
 * const baseline = await captureFileBaseline(handle)
 * const diffs = await baseline.diff(['/workspace/notes.txt'])
 * await baseline.dispose()
 * ```
 */
export async function captureFileBaseline(handle: SandboxHandle, options: { ignore?: readonly string[] } = {}): Promise<FileBaseline> {
  const cwd = handle.workspaceRoot
  const head = await handle.process.exec(`git rev-parse --verify -q ${shellQuote('HEAD^{commit}')} 2>/dev/null`, { cwd }).catch(() => null)
  const sha = head?.exitCode === 0 && /^[0-9a-f]{40,64}$/.test(head.stdout.trim()) ? head.stdout.trim() : null
  const snapshot = await recordStartSnapshot(handle, options.ignore ?? DEFAULT_IGNORE)
  let base: Base = snapshot ? { kind: 'snapshot', snapshot } : sha ? { kind: 'commit', sha } : { kind: 'none' }
  const rel = (path: string) => toWorkspaceRelative(path, cwd)

  return {
    commit: sha,
    snapshot: snapshot?.tree ?? null,
    async before(path) {
      const current = base
      if (current.kind === 'none') return ''
      const [prefix, rev] = current.kind === 'snapshot' ? [`${current.snapshot.env}\n`, current.snapshot.tree] : ['', current.sha]
      const shown = await handle.process.exec(`${prefix}git show ${shellQuote(`${rev}:./${rel(path)}`)}`, { cwd }).catch(() => null)
      return shown?.exitCode === 0 ? shown.stdout : ''
    },
    async after(path) {
      try {
        return await handle.fs.read(path)
      } catch {
        return '' // missing (deleted, or never there): absence reads as empty content
      }
    },
    async diff(paths) {
      const current = base
      const out = new Map<string, string>()
      for (let start = 0; start < paths.length; start += DIFF_BATCH) {
        const batch = paths.slice(start, start + DIFF_BATCH)
        const relative = batch.map(rel)
        const boundary = `@@tanstack-diff-${randomUUID()}@@`
        const prefix = current.kind === 'snapshot' ? [current.snapshot.env] : []
        const script = [...prefix, ...relative.map((path, i) => `printf '\\n%s %d\\n' '${boundary}' ${i}\n${diffScript(current, path)}`), `printf '\\n%s end\\n' '${boundary}'`].join('\n')
        const result = await handle.process.exec(script, { cwd })
        const segments = splitSegments(result.stdout, boundary)
        batch.forEach((path, i) => out.set(path, toPatch(current, relative[i]!, segments.get(i) ?? '')))
      }
      return out
    },
    async dispose() {
      base = sha ? { kind: 'commit', sha } : { kind: 'none' }
      await snapshot?.dispose()
    },
  }
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
  const added = base.kind === 'snapshot' && base.snapshot.mode === 'shadow' ? `elif [ -f ${p} ] && ${absent}; then printf '+'; cat -- ${p}` : `elif { [ -e ${p} ] || [ -L ${p} ]; } && ${absent}; then printf 'g'; git diff ${flags} --no-index -- /dev/null ${p}`
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
  return `if [ -f ${p} ]; then printf '+'; cat -- ${p}; fi`
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
