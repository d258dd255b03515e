/**
 * What the agent changed: `git status` and a unified `git diff` run inside the
 * sandbox through its handle (so it works for any provider, not only a host
 * directory). New files are marked intent-to-add first so they show in the
 * diff. Must run before the sandbox is destroyed; it never commits.
 */
import type { SandboxHandle } from '@tanstack/ai-sandbox'

/** One changed path. */
export interface ChangedFile {
  /** Path relative to the repository root. */
  readonly path: string
  /** Porcelain status code, e.g. ` M`, `??`. */
  readonly code: string
  /** Lines added and removed (0 for binary files). */
  readonly added: number
  readonly removed: number
}

/** The agent's changes to the workspace. */
export interface WorkspaceChanges {
  readonly files: readonly ChangedFile[]
  /** `git diff` against HEAD, including new files; `''` when nothing changed. */
  readonly diff: string
}

/**
 * Collect the working-tree changes of the workspace repository.
 *
 * @param handle - The live sandbox (from `defineSandbox({ hooks: { onReady } })`).
 * @returns Changed files with line counts, and the unified diff.
 * @throws SandboxOperationError from `handle.git.status` when the workspace is not a git repository.
 * @example
 * ```ts
 * const { files, diff } = await collectChanges(handle)
 * ```
 */
export async function collectChanges(handle: SandboxHandle): Promise<WorkspaceChanges> {
  const status = await handle.git.status()
  if (status.entries.length === 0) return { files: [], diff: '' }
  await handle.process.exec('git add --intent-to-add --all')
  const numstat = await handle.process.exec('git diff --numstat HEAD')
  const diff = await handle.process.exec('git diff --no-color HEAD')
  const counts = new Map<string, { added: number; removed: number }>()
  for (const line of numstat.stdout.split('\n')) {
    const [added, removed, path] = line.split('\t')
    if (path) counts.set(path, { added: Number(added) || 0, removed: Number(removed) || 0 })
  }
  const files = status.entries.map((entry) => ({ path: entry.path, code: entry.code, ...(counts.get(entry.path) ?? { added: 0, removed: 0 }) }))
  return { files, diff: diff.stdout }
}
