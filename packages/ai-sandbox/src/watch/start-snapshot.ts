/**
 * The workspace as it was when a run started, recorded with git inside the
 * sandbox so a run's diffs are that run's change, also for files an earlier
 * run of the thread left untracked or uncommitted. The snapshot is a git tree
 * written through a private index and object folder in a fresh temp folder
 * (`mktemp -d`), so the workspace's own repository (its index, objects, refs)
 * is never written. Outside a repository a private git dir over the workspace
 * does the same. Invariant: any failure (no git, a timeout, an unreadable
 * tree) yields no snapshot, never an error; the caller falls back.
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { shellQuote } from '../shell/quote.js'

/** Longest time, in seconds, recording the snapshot may hold the run's start (needs `timeout` in the sandbox). */
const SNAPSHOT_TIMEOUT_S = 20

/** A recorded start of the workspace. */
export interface StartSnapshot {
  /** `repo`: the workspace is (inside) a git repository; `shadow`: a private git dir over a plain folder. */
  readonly mode: 'repo' | 'shadow'
  /** The tree of the workspace at the run's start. */
  readonly tree: string
  /** `export ...;` lines that make git in the sandbox read the snapshot's index and objects. */
  readonly env: string
  /** Remove the temp folder. Never throws. */
  dispose: () => Promise<void>
}

/**
 * Record the workspace of `handle` now (one `exec`). Files matching `ignore`
 * (names at any depth, or workspace-relative paths with a `/`) and what git
 * ignores are left out; an unreadable file is left out too.
 *
 * @param ignore - Entries as `watchWorkspace` takes them, e.g. `['.git', 'node_modules']`.
 * @returns The snapshot, or `null` when it could not be recorded (no git in the sandbox, a timeout, a failure).
 */
export async function recordStartSnapshot(handle: SandboxHandle, ignore: readonly string[]): Promise<StartSnapshot | null> {
  const cwd = handle.workspaceRoot
  const result = await handle.process.exec(snapshotScript(ignore), { cwd }).catch(() => null)
  const fields = new Map((result?.stdout ?? '').split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const))
  const dir = fields.get('dir')
  const dispose = async () => {
    if (dir) await handle.process.exec(`rm -rf -- ${shellQuote(dir)}`).catch(() => undefined)
  }
  const tree = fields.get('tree') ?? ''
  const mode = fields.get('mode')
  if (!dir || !/^[0-9a-f]{40,64}$/.test(tree) || (mode !== 'repo' && mode !== 'shadow')) {
    await dispose()
    return null
  }
  const env =
    mode === 'repo'
      ? `export GIT_INDEX_FILE=${shellQuote(`${dir}/index`)} GIT_OBJECT_DIRECTORY=${shellQuote(`${dir}/objects`)} GIT_ALTERNATE_OBJECT_DIRECTORIES=${shellQuote(fields.get('objects') ?? '')} GIT_OPTIONAL_LOCKS=0`
      : `export GIT_DIR=${shellQuote(`${dir}/git`)} GIT_WORK_TREE=${shellQuote(fields.get('worktree') ?? cwd)} GIT_OPTIONAL_LOCKS=0`
  return { mode, tree, env, dispose }
}

/** The recording script: prints `dir=`, `mode=`, `objects=` or `worktree=`, and `tree=` lines; exits 0 whatever happens. */
function snapshotScript(ignore: readonly string[]): string {
  const patterns = ignore.map(excludePattern)
  return [
    'command -v git >/dev/null 2>&1 || exit 0',
    `d=$(umask 077 && mktemp -d "\${TMPDIR:-/tmp}/tanstack-baseline.XXXXXX") || exit 0`,
    `printf 'dir=%s\\n' "$d"`,
    'fail() { exit 0; }',
    'if git rev-parse --git-dir >/dev/null 2>&1; then',
    '  objects=$(cd "$(git rev-parse --git-path objects)" && pwd -P) || fail',
    '  index=$(git rev-parse --git-path index) || fail',
    '  mkdir "$d/objects" || fail',
    '  if [ -f "$index" ]; then cp "$index" "$d/index" || fail; fi',
    '  export GIT_INDEX_FILE="$d/index" GIT_OBJECT_DIRECTORY="$d/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$objects"',
    `  printf 'mode=repo\\nobjects=%s\\n' "$objects"`,
    'else',
    '  export GIT_DIR="$d/git" GIT_WORK_TREE="$(pwd -P)"',
    '  git init -q --template= >/dev/null 2>&1 || fail',
    `  printf 'mode=shadow\\nworktree=%s\\n' "$GIT_WORK_TREE"`,
    'fi',
    'export GIT_OPTIONAL_LOCKS=0',
    `printf '%s\\n' ${patterns.length > 0 ? patterns.map(shellQuote).join(' ') : "''"} > "$d/exclude" || fail`,
    `t=''; command -v timeout >/dev/null 2>&1 && t='timeout ${SNAPSHOT_TIMEOUT_S}'`,
    // --ignore-errors: an unreadable file is left out (it then reads as new), the rest is still recorded.
    '$t git -c core.excludesFile="$d/exclude" add -A --ignore-errors -- . >/dev/null 2>&1',
    '[ $? -ge 124 ] && fail', // timed out (124) or killed
    `tree=$(git write-tree 2>/dev/null) && printf 'tree=%s\\n' "$tree"`,
  ].join('\n')
}

/** An ignore entry as a gitignore pattern: a name matches at any depth, a path with `/` is anchored at the workspace. */
function excludePattern(entry: string): string {
  const trimmed = entry.replace(/^\.?\/+|\/+$/g, '')
  const escaped = trimmed.replace(/^([#!])/, '\\$1')
  return entry.includes('/') ? `/${escaped}` : escaped
}
