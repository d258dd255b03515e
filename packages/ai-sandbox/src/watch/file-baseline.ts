/**
 * The content baseline of a run: the commit `HEAD` pointed at when the run
 * started (when the workspace is a git repository with a commit), and the
 * before/after/diff of a file against it. Without git there is no recorded
 * content: `before` is `''` and a diff is a synthesized add-patch of the
 * current content. Diffs of many files take one `exec` per 100 files.
 * Invariant: nothing here throws for a missing file; absence reads as `''`.
 */
import { randomUUID } from 'node:crypto'
import type { SandboxHandle } from '../contracts/handle.js'
import { toWorkspaceRelative } from '../paths/workspace-path.js'
import { shellQuote } from '../shell/quote.js'

/** Files diffed per `exec`. */
const DIFF_BATCH = 100

/** Content of files at the run's start and now. Paths are absolute inside the sandbox (or workspace-relative). */
export interface FileBaseline {
  /** The baseline commit, or `null` when the workspace is not a git repository with a commit. */
  readonly commit: string | null
  /** Content at the baseline; `''` for a file the baseline lacks, and always `''` without git. */
  before: (path: string) => Promise<string>
  /** Current content; `''` when the file does not exist. */
  after: (path: string) => Promise<string>
  /** Unified diff of each path against the baseline (`''` when there is none), keyed by the path as given. */
  diff: (paths: readonly string[]) => Promise<Map<string, string>>
}

/**
 * Record the baseline of `handle`'s workspace now (one `exec`: `git rev-parse`).
 *
 * @returns A {@link FileBaseline}; without git in the sandbox it works in non-git mode.
 * @example
 * ```ts
 * const baseline = await captureFileBaseline(handle)
 * const diffs = await baseline.diff(['/workspace/notes.txt'])
 * ```
 */
export async function captureFileBaseline(handle: SandboxHandle): Promise<FileBaseline> {
  const cwd = handle.workspaceRoot
  const head = await handle.process.exec(`git rev-parse --verify -q ${shellQuote('HEAD^{commit}')} 2>/dev/null`, { cwd }).catch(() => null)
  const sha = head?.exitCode === 0 && /^[0-9a-f]{40,64}$/.test(head.stdout.trim()) ? head.stdout.trim() : null
  const rel = (path: string) => toWorkspaceRelative(path, cwd)

  return {
    commit: sha,
    async before(path) {
      if (!sha) return ''
      const shown = await handle.process.exec(`git show ${shellQuote(`${sha}:./${rel(path)}`)}`, { cwd }).catch(() => null)
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
      const out = new Map<string, string>()
      for (let start = 0; start < paths.length; start += DIFF_BATCH) {
        const batch = paths.slice(start, start + DIFF_BATCH)
        const relative = batch.map(rel)
        const boundary = `@@tanstack-diff-${randomUUID()}@@`
        const script = [...relative.map((path, i) => `printf '\\n%s %d\\n' '${boundary}' ${i}\n${sha ? gitDiffScript(sha, path) : contentScript(path)}`), `printf '\\n%s end\\n' '${boundary}'`].join('\n')
        const result = await handle.process.exec(script, { cwd })
        const segments = splitSegments(result.stdout, boundary)
        batch.forEach((path, i) => {
          const segment = segments.get(i) ?? ''
          out.set(path, sha ? segment : segment.startsWith('+') ? addPatch(relative[i]!, segment.slice(1)) : '')
        })
      }
      return out
    },
  }
}

/** Working tree vs the baseline commit; a file the baseline lacks and git does not track diffs against /dev/null. */
function gitDiffScript(sha: string, path: string): string {
  const p = shellQuote(path)
  const flags = '--no-color --no-ext-diff --no-renames'
  return [
    `d=$(git diff ${flags} ${sha} -- ${p} 2>/dev/null)`,
    `if [ -n "$d" ]; then printf '%s\\n' "$d"`,
    `elif { [ -e ${p} ] || [ -L ${p} ]; } && ! git cat-file -e ${shellQuote(`${sha}:./${path}`)} 2>/dev/null; then git diff ${flags} --no-index -- /dev/null ${p}; fi`,
  ].join('\n')
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
