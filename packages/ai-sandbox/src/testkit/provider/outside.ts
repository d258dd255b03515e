/**
 * Outside folders for the escape checks, planted where a provider's `fs` may
 * really act: each is made at one absolute path both inside the sandbox
 * (through `exec`) and on the kit's host (through `node:fs`), once when the
 * two share `/tmp`. Both copies are removed afterwards.
 * Design notes: docs/design/testkit.md
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { SandboxHandle } from '../../contracts/handle.js'
import { describeError, violation } from './assert.js'
import { q, sh } from './io.js'

/** The name of the marker file only the host's copy holds (so its listing and its contents tell it apart). */
export const HOST_COPY_MARKER = 'host-copy'

/** What an outside folder starts with. */
export interface OutsideFolderContents {
  /** Text files: name to content. In the host's copy each content gets {@link HOST_COPY_SUFFIX} appended. */
  readonly text?: Readonly<Record<string, string>>
  /** Empty files to create. */
  readonly empty?: readonly string[]
  /** Numbered empty files to create, `<prefix>0` to `<prefix><count - 1>` (made with a loop, so thousands cost one exec). */
  readonly numbered?: { readonly prefix: string; readonly count: number }
}

/** Appended to every text file of the host's copy, so a read tells which copy it reached. */
export const HOST_COPY_SUFFIX = ' (host copy)'

/** One outside folder, as the sandbox sees it and as the host sees it. */
export interface OutsideFolder {
  /** The absolute path, the same inside the sandbox and on the host, e.g. `/tmp/conformance-canary-1a2b3c4d`. */
  readonly path: string
  /** `true` when the sandbox and the host see one folder (the sandbox's `/tmp` is the host's). */
  readonly shared: boolean
  /** Entry names (sorted) and text file contents of the sandbox's copy, read through `exec`; `''` when shared. */
  sandboxSnapshot: () => Promise<string>
  /** Entry names (sorted) and text file contents of the host's copy, read through `node:fs`. */
  hostSnapshot: () => string
  /** Remove both copies; never throws. */
  remove: () => Promise<void>
}

/**
 * Make a fresh outside folder `/tmp/<prefix>-<8 hex>` on the host (with
 * `node:fs`, plus a {@link HOST_COPY_MARKER} file) and, unless the sandbox
 * already sees it there, inside the sandbox (through `exec`).
 *
 * @param handle - The sandbox (needs capability `exec`).
 * @param prefix - Start of the folder name, e.g. `conformance-canary`.
 * @param contents - Text, empty and numbered empty files both copies start with. Default: none.
 * @returns The folder; call `remove()` in a `finally`.
 * @throws AssertionError naming the setup step when the host folder cannot be made (the host has no writable `/tmp`) or the sandbox's `exec` fails.
 */
export async function plantOutsideFolder(handle: SandboxHandle, prefix: string, contents: OutsideFolderContents = {}): Promise<OutsideFolder> {
  const path = `/tmp/${prefix}-${randomUUID().slice(0, 8)}`
  const text = contents.text ?? {}
  const empty = contents.empty ?? []
  const numbered = contents.numbered ?? { prefix: '', count: 0 }
  try {
    mkdirSync(path)
    for (const [name, value] of Object.entries(text)) writeFileSync(join(path, name), `${value}${HOST_COPY_SUFFIX}`)
    for (const name of [...empty, HOST_COPY_MARKER]) writeFileSync(join(path, name), '')
    for (let i = 0; i < numbered.count; i++) writeFileSync(join(path, `${numbered.prefix}${i}`), '')
  } catch (error) {
    rmSync(path, { recursive: true, force: true })
    violation(`conformance setup: the kit makes ${path} on the host where it runs (the host copy of an outside folder)`, `node:fs threw ${describeError(error)}`)
  }
  const removeHost = () => rmSync(path, { recursive: true, force: true })
  let shared: boolean
  try {
    // The files are written with a loop of builtins, so thirty of them cost one exec.
    const writes = [
      ...Object.entries(text).map(([name, value]) => `printf '%s' ${q(value)} > ${q(name)}`),
      empty.length > 0 ? `for f in ${empty.map(q).join(' ')}; do : > "$f"; done` : 'true',
      emptyFilesLoop(numbered.prefix, numbered.count),
    ].join(' && ')
    const planted = await sh(handle, `if [ -e ${q(`${path}/${HOST_COPY_MARKER}`)} ]; then echo shared; else mkdir -p ${q(path)} && cd ${q(path)} && ${writes} && echo separate; fi`)
    shared = planted.stdout.trim() === 'shared'
  } catch (error) {
    removeHost()
    throw error
  }
  const textNames = Object.keys(text)
  const cat = textNames.length > 0 ? ` && cat ${textNames.map(q).join(' ')}` : ''
  return {
    path,
    shared,
    sandboxSnapshot: async () => (shared ? '' : (await sh(handle, `cd ${q(path)} && ls -A | LC_ALL=C sort${cat}`)).stdout),
    hostSnapshot: () => hostSnapshot(path, textNames),
    remove: async () => {
      removeHost()
      if (!shared) await handle.process.exec(`rm -rf ${q(path)}`).catch(() => undefined)
    },
  }
}

/** A loop of shell builtins making the empty files `<prefix>0` to `<prefix><count - 1>` in the current folder (`true` for none). */
export function emptyFilesLoop(prefix: string, count: number): string {
  return count > 0 ? `i=0; while [ "$i" -lt ${count} ]; do : > ${q(prefix)}"$i"; i=$((i + 1)); done` : 'true'
}

/** The host copy's entry names (sorted as `LC_ALL=C sort` does) and its text files' contents; a missing entry reads as empty. */
function hostSnapshot(path: string, textNames: readonly string[]): string {
  let names: string[]
  try {
    names = readdirSync(path).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  } catch {
    return '(the host copy is gone)'
  }
  const texts = textNames.map((name) => {
    try {
      return readFileSync(join(path, name), 'utf8')
    } catch {
      return `(${name} is gone)`
    }
  })
  return [...names, ...texts].join('\n')
}

/** Lines that differ between two snapshots (added or removed entries, changed content). */
export function changedLines(before: string, after: string): number {
  const a = new Set(before.split('\n'))
  const b = new Set(after.split('\n'))
  let changed = 0
  for (const line of a) if (!b.has(line)) changed++
  for (const line of b) if (!a.has(line)) changed++
  return changed
}
