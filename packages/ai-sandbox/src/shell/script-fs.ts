/**
 * `handle.fs` over the confined fs script (fs-script.ts) for the container
 * providers (Docker, Daytona, Cloudflare): the lexical path mapping, the
 * workspace-root refusals, and what `list`, `exists` and `lstat` make of the
 * script's output. How the script runs and how file bytes travel stays the
 * provider's ({@link ScriptFsRunner}). Invariant: no path reaches a runner
 * unmapped, and `write`, `remove`, `rename` never reach it for the root.
 */
import { SandboxConfigError } from '../contracts/errors.js'
import type { SandboxDirEntry, SandboxFs } from '../contracts/fs.js'
import type { FsOp } from './fs-script.js'
import { FS_ENTRY_TYPES, fsScriptPath, parseFsStat, refuseWorkspaceRoot } from './fs-script-results.js'
import type { FsScriptOwner, FsScriptPath } from './fs-script-results.js'

/** What a provider supplies to {@link scriptFs}: one script run, and its own byte transport for read and write. */
export interface ScriptFsRunner {
  /** Names the provider in errors (here: a malformed `lstat` line). */
  readonly owner: FsScriptOwner
  /** The sandbox's workspace root (`handle.workspaceRoot`). */
  readonly workspaceRoot: string
  /** Run the script once for `fs.<method>` (`list`, `mkdir`, `remove`, `rename`, `exists`, `lstat`); resolves with its stdout as text, throws the typed error of a non-zero exit. */
  readonly run: (method: string, op: FsOp, paths: FsScriptPath[]) => Promise<string>
  /** `fs.read` of `target`: its bytes, UTF-8 decoded, within the read limit. */
  readonly read: (target: FsScriptPath) => Promise<string>
  /** `fs.readBytes` of `target`, within the read limit. */
  readonly readBytes: (target: FsScriptPath) => Promise<Uint8Array>
  /** `fs.write` of `data` to `target` (never the workspace root). */
  readonly write: (target: FsScriptPath, data: string | Uint8Array) => Promise<void>
}

/**
 * Build the `fs` member of a container provider's handle.
 * @param runner - the provider's script run and byte transport.
 * @returns the `SandboxFs`; `list` sorts by name, `exists` is the script's `1`.
 * @throws SandboxPathError `outside-workspace` for paths that leave the workspace, and the root refusal of `write`, `remove` and `rename` (from each method, before the runner is called); the runner's errors otherwise.
 */
export function scriptFs(runner: ScriptFsRunner): SandboxFs {
  const lexical = (path: string): FsScriptPath => fsScriptPath(path, runner.workspaceRoot)
  return {
    read: async (path) => runner.read(lexical(path)),

    readBytes: async (path) => runner.readBytes(lexical(path)),

    write: async (path, data) => {
      const target = lexical(path)
      refuseWorkspaceRoot('write', target)
      await runner.write(target, data)
    },

    list: async (path = '.') => {
      const target = lexical(path)
      const stdout = await runner.run('list', 'list', [target])
      const entries: SandboxDirEntry[] = []
      for (const record of stdout.split('\0')) {
        if (record === '') continue
        const name = record.slice(1)
        entries.push({ name, path: target.relative === '' ? name : `${target.relative}/${name}`, type: FS_ENTRY_TYPES[record[0]!] ?? 'other' })
      }
      return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    },

    mkdir: async (path) => {
      await runner.run('mkdir', 'mkdir', [lexical(path)])
    },

    remove: async (path) => {
      const target = lexical(path)
      refuseWorkspaceRoot('remove', target)
      await runner.run('remove', 'remove', [target])
    },

    rename: async (from, to) => {
      const source = lexical(from)
      const target = lexical(to)
      refuseWorkspaceRoot('rename', source)
      refuseWorkspaceRoot('rename', target)
      await runner.run('rename', 'rename', [source, target])
    },

    exists: async (path) => (await runner.run('exists', 'exists', [lexical(path)])) === '1',

    lstat: async (path) => parseFsStat(runner.owner, (await runner.run('lstat', 'lstat', [lexical(path)])).trim(), path),
  }
}

/**
 * Check `fs.write`'s data for a provider that does not hand it straight to a stream.
 * @param data - what the caller passed.
 * @throws SandboxConfigError `fs.write.data` unless it is a string or a `Uint8Array`.
 */
export function checkWriteData(data: unknown): asserts data is string | Uint8Array {
  if (typeof data !== 'string' && !(data instanceof Uint8Array)) {
    throw new SandboxConfigError('fs.write.data', `Invalid option fs.write.data: expected a string or a Uint8Array, got ${data === null ? 'null' : typeof data}.`)
  }
}
