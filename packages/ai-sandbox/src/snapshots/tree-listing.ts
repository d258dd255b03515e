/**
 * The workspace tree as one listing: every entry below the workspace root
 * with its kind, read in one `spawn` that runs `find` once per kind (BusyBox
 * `find` has no `-printf`, and more than one `-exec {} +` in one run prints
 * nothing), NUL-separated so any name survives. Owns the listing's wire
 * format; knows nothing of policies beyond the names it may prune.
 * Invariant: a path appears at most once; one that appears under two kinds
 * (it changed between two `find` runs) fails the listing as `changed`.
 */
import { shellQuote } from '../shell/quote.js'
import { SandboxSnapshotError } from './errors.js'
import { streamFromScript, unreadableOutput, type SnapshotScratch } from './sandbox-io.js'

/** What the listing says an entry is. `executable` and `too-large` are regular files. */
export type ListedKind = 'directory' | 'file' | 'executable' | 'too-large' | 'symlink' | 'other'

/** One entry of the listing. */
export interface ListedEntry {
  /** Workspace-relative, without `./`. */
  readonly path: string
  readonly kind: ListedKind
}

/** Options of {@link listSandboxTree}. */
export interface ListSandboxTreeOptions {
  /** Entry names (`find -name` patterns) to leave out with everything under them. */
  readonly pruneNames: readonly string[]
  /** When set, regular files over this many bytes are listed as `too-large`. */
  readonly maxFileBytes?: number
}

/** Section headers: one letter each, never a path (paths start with `./`). */
const SECTIONS: Readonly<Record<string, ListedKind>> = { D: 'directory', F: 'file', X: 'executable', B: 'too-large', L: 'symlink', O: 'other' }

const ANY_X_BIT = '\\( -perm -100 -o -perm -010 -o -perm -001 \\)'

/** The `find` runs, one per section, joined with `&&` so the first failure is the status. */
function listingScript(options: ListSandboxTreeOptions): string {
  const prune = options.pruneNames.length > 0 ? `\\( ${options.pruneNames.map((name) => `-name ${shellQuote(name)}`).join(' -o ')} \\) -prune -o ` : ''
  const big = options.maxFileBytes === undefined ? undefined : `-size +${Math.floor(options.maxFileBytes)}c`
  const sections: [string, string][] = [
    ['D', '-type d'],
    ['F', `-type f ! ${ANY_X_BIT}${big ? ` ! ${big}` : ''}`],
    ['X', `-type f ${ANY_X_BIT}`],
    ...(big ? ([['B', `-type f ! ${ANY_X_BIT} ${big}`]] as [string, string][]) : []),
    ['L', '-type l'],
    ['O', '! -type f ! -type d ! -type l'],
  ]
  return sections.map(([letter, test]) => `printf '${letter}\\0' && find . -mindepth 1 ${prune}${test} -print0`).join(' && ')
}

/**
 * List the workspace of `scratch.handle` (the folder `exec` starts in), in
 * one `spawn` that writes nothing.
 *
 * @returns Every entry, in no particular order.
 * @throws SandboxSnapshotError `sandbox-failed` when `find` fails (e.g. an
 *   unreadable folder), `invalid-path` for a name that is not UTF-8,
 *   `changed` for a path listed twice.
 */
export async function listSandboxTree(scratch: SnapshotScratch, options: ListSandboxTreeOptions): Promise<ListedEntry[]> {
  const entries: ListedEntry[] = []
  const seen = new Set<string>()
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const what = 'the workspace listing (find)'
  let kind: ListedKind | undefined
  let ended = true
  const record = (bytes: Uint8Array) => {
    if (bytes.length === 1 && SECTIONS[String.fromCharCode(bytes[0]!)] !== undefined) {
      kind = SECTIONS[String.fromCharCode(bytes[0]!)]
      return
    }
    if (kind === undefined || bytes[0] !== 0x2e || bytes[1] !== 0x2f) throw unreadableOutput(scratch, what, new Error('a record is neither a section nor a ./path'))
    let path: string
    try {
      path = decoder.decode(bytes.subarray(2))
    } catch {
      const shown = new TextDecoder().decode(bytes.subarray(2))
      throw new SandboxSnapshotError('invalid-path', `${scratch.operation}: the name ${JSON.stringify(shown)} in the workspace is not UTF-8 (shown with U+FFFD), so a snapshot cannot store it. Rename it, or exclude it with the snapshot policy.`, { path: shown })
    }
    if (seen.has(path)) throw new SandboxSnapshotError('changed', `${scratch.operation}: ${JSON.stringify(path)} changed kind while the workspace was listed; capture again once nothing writes to the workspace.`, { path })
    seen.add(path)
    entries.push({ path, kind })
  }
  await streamFromScript(scratch, what, listingScript(options), async (chunks) => {
    let pending: Buffer[] = []
    for await (const chunk of chunks) {
      let from = 0
      for (let at = chunk.indexOf(0); at !== -1; at = chunk.indexOf(0, from)) {
        const piece = chunk.subarray(from, at)
        record(pending.length === 0 ? piece : Buffer.concat([...pending, piece]))
        pending = []
        from = at + 1
      }
      if (from < chunk.length) pending.push(Buffer.from(chunk.subarray(from)))
      ended = pending.length === 0
    }
    if (!ended) throw unreadableOutput(scratch, what, new Error('the listing ended inside a record'))
  })
  return entries
}
