/**
 * The workspace as it was when a run started, recorded with git inside the
 * sandbox as a tree written through a private index and object folder, so
 * the workspace's own repository is never written.
 * Invariant: any failure (no git, a timeout, an unreadable tree) yields no
 * snapshot, never an error; the caller falls back.
 * Design notes: docs/design/watch.md
 */
import { posix } from 'node:path'
import type { SandboxHandle } from '../contracts/handle.js'
import { journalDirGuard } from '../journal/commands.js'
import { shellQuote } from '../shell/quote.js'

/** Longest time, in seconds, recording the snapshot may hold the run's start (needs `timeout` in the sandbox). */
const SNAPSHOT_TIMEOUT_S = 20

/** A recorded start of the workspace. */
export interface StartSnapshot {
  /** `repo`: the workspace is (inside) a git repository; `shadow`: a private git dir over a plain folder. */
  readonly mode: 'repo' | 'shadow'
  /** The folder holding the snapshot's index, objects and exclude file (absolute, inside the sandbox). */
  readonly dir: string
  /** The tree of the workspace at the run's start. */
  readonly tree: string
  /** `true` when the snapshot was found in the durable folder (an earlier host of the run recorded it), not recorded now. */
  readonly reused: boolean
  /** Workspace-relative paths kept out of the run's diffs, as {@link StartSnapshot.rememberExcluded} stored them (reused snapshots only; `[]` otherwise). */
  readonly excluded: readonly string[]
  /** Store workspace-relative paths kept out of the run's diffs beside a durable snapshot, for a host that takes the run over. Nothing for a temp one. Never throws. */
  rememberExcluded: (paths: readonly string[]) => Promise<void>
  /** `export ...;` lines that make git in the sandbox read the snapshot's index and objects. */
  readonly env: string
  /** Remove the folder. Never throws. */
  dispose: () => Promise<void>
}

/**
 * Record the workspace of `handle` now (one `exec`). Files matching `ignore`
 * (names at any depth, or workspace-relative paths with a `/`) and what git
 * ignores are left out; an unreadable file is left out too.
 *
 * With `dir` (a durable run: `durableRunFiles(runId, dir).baseline`) the snapshot is
 * kept there: a snapshot an earlier host of the run recorded there is reused
 * (`reused: true`) when its tree still reads, else one is recorded now.
 *
 * @param ignore - Entries as `watchWorkspace` takes them, e.g. `['.git', 'node_modules']`.
 * @param dir - Absolute folder to keep the snapshot in. Default: a fresh `mktemp -d` folder.
 * @returns The snapshot, or `null` when it could not be recorded (no git in the sandbox, a timeout, a failure).
 */
export async function recordStartSnapshot(handle: SandboxHandle, ignore: readonly string[], dir?: string): Promise<StartSnapshot | null> {
  const cwd = handle.workspaceRoot
  const result = await handle.process.exec(snapshotScript(ignore, dir), { cwd }).catch(() => null)
  const lines = (result?.stdout ?? '').split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const)
  const fields = new Map(lines)
  const folder = fields.get('dir')
  const dispose = async () => {
    if (folder) await handle.process.exec(`rm -rf -- ${shellQuote(folder)}`).catch(() => undefined)
  }
  const tree = fields.get('tree') ?? ''
  const mode = fields.get('mode')
  if (!folder || !/^[0-9a-f]{40,64}$/.test(tree) || (mode !== 'repo' && mode !== 'shadow')) {
    await dispose()
    return null
  }
  const env =
    mode === 'repo'
      ? `export GIT_INDEX_FILE=${shellQuote(`${folder}/index`)} GIT_OBJECT_DIRECTORY=${shellQuote(`${folder}/objects`)} GIT_ALTERNATE_OBJECT_DIRECTORIES=${shellQuote(fields.get('objects') ?? '')} GIT_OPTIONAL_LOCKS=0`
      : `export GIT_DIR=${shellQuote(`${folder}/git`)} GIT_WORK_TREE=${shellQuote(fields.get('worktree') ?? cwd)} GIT_OPTIONAL_LOCKS=0`
  const reused = fields.get('reused') === '1'
  const excluded = reused ? lines.filter(([key]) => key === 'excluded').flatMap(([, value]) => parseExcluded(value)) : []
  const rememberExcluded = async (paths: readonly string[]) => {
    if (dir === undefined || paths.length === 0) return
    // One JSON string per line: a path with a newline stays one entry.
    const entries = paths.map((path) => shellQuote(JSON.stringify(path))).join(' ')
    await handle.process.exec(`printf '%s\\n' ${entries} >> ${shellQuote(`${folder}/excluded`)}`).catch(() => undefined)
  }
  return { mode, dir: folder, tree, env, reused, excluded, rememberExcluded, dispose }
}

/** One stored excluded entry (a JSON string), or nothing when it is not one. */
function parseExcluded(line: string): string[] {
  try {
    const value: unknown = JSON.parse(line)
    return typeof value === 'string' ? [value] : []
  } catch {
    return []
  }
}

/**
 * The recording script: prints `dir=`, then `reused=1` and the stored lines
 * (`excluded=` ones too) for a durable snapshot that still reads, else the
 * `mode=`, `objects=` or `worktree=`, and `tree=` lines of a new one (also
 * stored in `$d/fields`); exits 0 whatever happens.
 */
function snapshotScript(ignore: readonly string[], dir: string | undefined): string {
  const patterns = ignore.map(excludePattern)
  const folder = dir === undefined ? [`d=$(umask 077 && mktemp -d "\${TMPDIR:-/tmp}/tanstack-baseline.XXXXXX") || exit 0`] : reuseScript(dir)
  return [
    'command -v git >/dev/null 2>&1 || exit 0',
    ...folder,
    `printf 'dir=%s\\n' "$d"`,
    'fail() { exit 0; }',
    // Each field goes to stdout and to $d/fields, which a later host of a durable run reads back.
    `rec() { printf '%s\\n' "$@" >> "$d/fields"; printf '%s\\n' "$@"; }`,
    'if git rev-parse --git-dir >/dev/null 2>&1; then',
    '  objects=$(cd "$(git rev-parse --git-path objects)" && pwd -P) || fail',
    '  index=$(git rev-parse --git-path index) || fail',
    '  mkdir "$d/objects" || fail',
    '  if [ -f "$index" ]; then cp "$index" "$d/index" || fail; fi',
    '  export GIT_INDEX_FILE="$d/index" GIT_OBJECT_DIRECTORY="$d/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$objects"',
    `  rec mode=repo "objects=$objects"`,
    'else',
    '  export GIT_DIR="$d/git" GIT_WORK_TREE="$(pwd -P)"',
    '  git init -q --template= >/dev/null 2>&1 || fail',
    `  rec mode=shadow "worktree=$GIT_WORK_TREE"`,
    'fi',
    'export GIT_OPTIONAL_LOCKS=0',
    `printf '%s\\n' ${patterns.length > 0 ? patterns.map(shellQuote).join(' ') : "''"} > "$d/exclude" || fail`,
    `t=''; command -v timeout >/dev/null 2>&1 && t='timeout ${SNAPSHOT_TIMEOUT_S}'`,
    // --ignore-errors: an unreadable file is left out (it then reads as new), the rest is still recorded.
    '$t git -c core.excludesFile="$d/exclude" add -A --ignore-errors -- . >/dev/null 2>&1',
    '[ $? -ge 124 ] && fail', // timed out (124) or killed
    'tree=$(git write-tree 2>/dev/null) && rec "tree=$tree"',
  ].join('\n')
}

/**
 * The head of the script for a durable folder: reuse the snapshot stored
 * there when its tree still reads (print it and exit), else start the folder
 * afresh. Sets `d`.
 */
function reuseScript(dir: string): string[] {
  return [
    // The baseline folder sits in the journal folder: refuse (no snapshot) one another user made or could write.
    journalDirGuard(posix.dirname(dir)),
    `d=${shellQuote(dir)}`,
    'if [ -f "$d/fields" ]; then',
    `  field() { sed -n "s/^$1=//p" "$d/fields"; }`,
    '  tree=$(field tree)',
    '  if [ "$(field mode)" = repo ]; then kind=$(GIT_INDEX_FILE="$d/index" GIT_OBJECT_DIRECTORY="$d/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$(field objects)" git cat-file -t "$tree" 2>/dev/null)',
    '  else kind=$(GIT_DIR="$d/git" git cat-file -t "$tree" 2>/dev/null); fi',
    `  if [ -n "$tree" ] && [ "$kind" = tree ]; then printf 'dir=%s\nreused=1\n' "$d"; cat "$d/fields"; if [ -f "$d/excluded" ]; then sed 's/^/excluded=/' "$d/excluded"; fi; exit 0; fi`,
    'fi',
    'rm -rf -- "$d"',
    '(umask 077 && mkdir -- "$d") || exit 0',
  ]
}

/** An ignore entry as a gitignore pattern: a name matches at any depth, a path with `/` is anchored at the workspace. */
function excludePattern(entry: string): string {
  const trimmed = entry.replace(/^\.?\/+|\/+$/g, '')
  const escaped = trimmed.replace(/^([#!])/, '\\$1')
  return entry.includes('/') ? `/${escaped}` : escaped
}
