/**
 * Filesystem conformance, part one: the `SandboxFs` operations on ordinary
 * files and folders (text and byte round trips, parents, list, mkdir, remove,
 * rename, exists, lstat). Path confinement and symlinks live in
 * `fs-paths.ts`; symlink-swap races, FIFOs, devices, hard links and the read
 * size bound in `fs-races.ts`. Every check works in its own scratch folder, so all of them
 * can share one sandbox.
 */
import { describe, expect } from 'vitest'
import type { SandboxWatchEvent } from '../../contracts/fs.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import { describeError, violation, within } from './assert.js'
import { conformanceCase, skippedCase, useSharedSandbox } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { registerFsPathConformance } from './fs-paths.js'
import { registerFsRaceConformance } from './fs-races.js'
import { q, scratch, sh } from './io.js'

const UNICODE_TEXT = 'héllo wörld — 日本語 👋\nsecond line\n'

/** `write` then `read` round-trips UTF-8 text exactly, and a second write replaces the whole file. */
export async function checkFsTextRoundTrip(handle: SandboxHandle): Promise<void> {
  const path = `${scratch('fs-text')}/hello.txt`
  await handle.fs.write(path, UNICODE_TEXT)
  expect(await handle.fs.read(path), 'fs.read returns exactly the UTF-8 text fs.write wrote').toBe(UNICODE_TEXT)
  await handle.fs.write(path, 'short')
  expect(await handle.fs.read(path), 'fs.write replaces an existing file (no leftover bytes of the longer old content)').toBe('short')
  await handle.fs.write(path, '')
  expect(await handle.fs.read(path), 'fs.write of an empty string leaves an empty file').toBe('')
}

/** `write(bytes)` then `readBytes` round-trips all 256 byte values. */
export async function checkFsBytesRoundTrip(handle: SandboxHandle): Promise<void> {
  const path = `${scratch('fs-bytes')}/all-bytes.bin`
  const bytes = new Uint8Array(512)
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256
  await handle.fs.write(path, bytes)
  const back = await handle.fs.readBytes(path)
  expect(back instanceof Uint8Array, 'fs.readBytes returns a Uint8Array').toBe(true)
  expect(Array.from(back), 'fs.readBytes returns exactly the bytes fs.write wrote (all 256 values, no text decoding)').toEqual(Array.from(bytes))
  const text = await handle.fs.readBytes(await writeText(handle, 'é'))
  expect(Array.from(text), 'fs.write of a string stores UTF-8 bytes').toEqual([0xc3, 0xa9])
}

/** `write` creates missing parent folders. */
export async function checkFsWriteCreatesParents(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-parents')
  await handle.fs.write(`${root}/a/b/c/deep.txt`, 'deep')
  expect(await handle.fs.read(`${root}/a/b/c/deep.txt`), 'fs.write creates missing parent directories').toBe('deep')
  const entries = await handle.fs.list(`${root}/a/b`)
  expect(entries.map((e) => [e.name, e.type]), 'parents made by fs.write are directories').toEqual([['c', 'directory']])
}

/** `list` returns direct entries sorted by name, with workspace-relative paths and types. */
export async function checkFsList(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-list')
  await handle.fs.write(`${root}/b.txt`, 'b')
  await handle.fs.write(`${root}/a.txt`, 'a')
  await handle.fs.write(`${root}/c-dir/nested.txt`, 'nested')
  const entries = await handle.fs.list(root)
  expect(
    entries.map((e) => ({ name: e.name, path: e.path, type: e.type })),
    'fs.list returns direct entries only, sorted by name, each with a workspace-relative path and its type',
  ).toEqual([
    { name: 'a.txt', path: `${root}/a.txt`, type: 'file' },
    { name: 'b.txt', path: `${root}/b.txt`, type: 'file' },
    { name: 'c-dir', path: `${root}/c-dir`, type: 'directory' },
  ])
  const viaVirtual = await handle.fs.list(`/workspace/${root}`)
  expect(viaVirtual.map((e) => e.path), 'fs.list of a /workspace/... path returns the same workspace-relative paths').toEqual(entries.map((e) => e.path))
  const rootNames = (await handle.fs.list()).map((e) => e.name)
  expect(rootNames, 'fs.list() without a path lists the workspace root').toContain(root)
}

/** `mkdir` creates parents and is idempotent. */
export async function checkFsMkdir(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-mkdir')
  await handle.fs.mkdir(`${root}/x/y`)
  await handle.fs.mkdir(`${root}/x/y`).catch((error: unknown) => {
    violation('fs.mkdir of an existing directory is a no-op', `second mkdir threw ${describeError(error)}`)
  })
  expect(await handle.fs.exists(`${root}/x/y`), 'fs.mkdir creates the directory and its parents').toBe(true)
  expect((await handle.fs.list(`${root}/x`)).map((e) => [e.name, e.type]), 'fs.mkdir makes a directory').toEqual([['y', 'directory']])
}

/** `remove` deletes a file and a whole tree, and removing a missing path is fine. */
export async function checkFsRemove(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-remove')
  await handle.fs.write(`${root}/file.txt`, 'x')
  await handle.fs.write(`${root}/tree/a/b.txt`, 'x')
  await handle.fs.write(`${root}/tree/c.txt`, 'x')
  await handle.fs.remove(`${root}/file.txt`)
  expect(await handle.fs.exists(`${root}/file.txt`), 'fs.remove deletes a file').toBe(false)
  await handle.fs.remove(`${root}/tree`)
  expect(await handle.fs.exists(`${root}/tree`), 'fs.remove deletes a non-empty directory tree').toBe(false)
  await handle.fs.remove(`${root}/never-existed`).catch((error: unknown) => {
    violation('fs.remove of a missing path resolves (no error)', `it threw ${describeError(error)}`)
  })
  await handle.fs.remove(`${root}/no-such-dir/deeper/file.txt`).catch((error: unknown) => {
    violation('fs.remove of a path under a missing directory resolves (no error)', `it threw ${describeError(error)}`)
  })
}

/** `rename` moves files (replacing a destination file) and folders. */
export async function checkFsRename(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-rename')
  await handle.fs.write(`${root}/from.txt`, 'moved')
  await handle.fs.rename(`${root}/from.txt`, `${root}/to.txt`)
  expect(await handle.fs.exists(`${root}/from.txt`), 'fs.rename removes the source').toBe(false)
  expect(await handle.fs.read(`${root}/to.txt`), 'fs.rename keeps the content at the destination').toBe('moved')
  await handle.fs.write(`${root}/other.txt`, 'new content')
  await handle.fs.rename(`${root}/other.txt`, `${root}/to.txt`)
  expect(await handle.fs.read(`${root}/to.txt`), 'fs.rename replaces an existing destination file').toBe('new content')
  await handle.fs.write(`${root}/dir/inner.txt`, 'inner')
  await handle.fs.rename(`${root}/dir`, `${root}/renamed-dir`)
  expect(await handle.fs.read(`${root}/renamed-dir/inner.txt`), 'fs.rename moves a directory with its contents').toBe('inner')
}

/** `exists` is true for files and folders, false for missing paths. */
export async function checkFsExists(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-exists')
  await handle.fs.write(`${root}/f.txt`, 'x')
  expect(await handle.fs.exists(`${root}/f.txt`), 'fs.exists is true for a file').toBe(true)
  expect(await handle.fs.exists(root), 'fs.exists is true for a directory').toBe(true)
  expect(await handle.fs.exists(`${root}/missing.txt`), 'fs.exists is false for a missing path').toBe(false)
  expect(await handle.fs.exists(`${root}/missing/deeper.txt`), 'fs.exists is false under a missing directory').toBe(false)
}

/** `lstat` reports type, byte size, mode and mtime. */
export async function checkFsLstat(handle: SandboxHandle): Promise<void> {
  const lstat = handle.fs.lstat
  if (!lstat) return violation('fs.lstat exists when this check runs', 'handle.fs.lstat is undefined')
  const root = scratch('fs-lstat')
  await handle.fs.write(`${root}/f.txt`, 'héllo')
  const file = await lstat(`${root}/f.txt`)
  expect(file.type, 'fs.lstat of a file reports type "file"').toBe('file')
  expect(file.size, 'fs.lstat size is in bytes ("héllo" is 6 UTF-8 bytes)').toBe(6)
  expect(Number.isInteger(file.mode) && (file.mode & 0o400) !== 0, `fs.lstat mode carries POSIX permission bits (got ${file.mode})`).toBe(true)
  expect(Number.isFinite(file.mtimeMs) && file.mtimeMs > 0, `fs.lstat mtimeMs is epoch ms (got ${file.mtimeMs})`).toBe(true)
  expect((await lstat(root)).type, 'fs.lstat of a directory reports type "directory"').toBe('directory')
}

/** With exec: `lstat` describes a symlink instead of following it, `list` types it, and a dangling link `exists`. */
export async function checkFsSymlinkMetadata(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-symlink-meta')
  await handle.fs.write(`${root}/target.txt`, 'target')
  await sh(handle, `cd ${q(root)} && ln -s target.txt link && ln -s nowhere dangling`)
  const link = (await handle.fs.list(root)).find((e) => e.name === 'link')
  expect(link?.type, 'fs.list reports a symlink as type "symlink"').toBe('symlink')
  expect(await handle.fs.exists(`${root}/dangling`), 'fs.exists is true for a dangling symlink (it exists as a link)').toBe(true)
  if (handle.fs.lstat) {
    expect((await handle.fs.lstat(`${root}/link`)).type, 'fs.lstat does not follow a final symlink').toBe('symlink')
  }
}

/**
 * When `fs.watch` is present: a file written after `watch()` resolved is
 * reported (create or change) with its workspace-relative path and a
 * timestamp, its removal is reported as delete, and `close()` resolves.
 */
export async function checkFsWatch(handle: SandboxHandle): Promise<void> {
  const watch = handle.fs.watch
  if (!watch) return violation('fs.watch exists when this check runs', 'handle.fs.watch is undefined')
  const root = scratch('fs-watch')
  await handle.fs.mkdir(root)
  const path = `${root}/new.txt`
  const events: SandboxWatchEvent[] = []
  const waiters: (() => void)[] = []
  const seen = (test: (e: SandboxWatchEvent) => boolean, rule: string) =>
    within(new Promise<SandboxWatchEvent>((resolve) => {
      const check = () => {
        const found = events.find(test)
        if (found) resolve(found)
        else waiters.push(check)
      }
      check()
    }), rule)
  const watcher = await watch((event) => {
    events.push(event)
    for (const waiter of waiters.splice(0)) waiter()
  })
  try {
    await handle.fs.write(path, 'watched')
    const written = await seen((e) => e.path === path && e.type !== 'delete', `fs.watch reports a written file as create/change with path "${path}" (workspace-relative, / separators)`)
    expect(Number.isFinite(written.timestamp), 'fs.watch events carry an epoch-ms timestamp').toBe(true)
    await handle.fs.remove(path)
    await seen((e) => e.path === path && e.type === 'delete', 'fs.watch reports a removed file as delete')
  } finally {
    await within(watcher.close(), 'SandboxWatcher.close() resolves')
  }
}

/** Register the fs group (and the path sub-group). */
export function registerFsConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  describe('fs', () => {
    const sandbox = useSharedSandbox(getContext)
    const run = (title: string, check: (h: SandboxHandle) => Promise<void>) => conformanceCase(ctx, title, () => check(sandbox()))
    run('write/read round-trips unicode text and replaces files', checkFsTextRoundTrip)
    run('readBytes round-trips all 256 byte values', checkFsBytesRoundTrip)
    run('write creates parent directories', checkFsWriteCreatesParents)
    run('list returns sorted direct entries with types', checkFsList)
    run('mkdir creates parents and is idempotent', checkFsMkdir)
    run('remove deletes files and trees; missing is fine', checkFsRemove)
    run('rename moves files and directories', checkFsRename)
    run('exists is true for files and folders, false when missing', checkFsExists)
    // lstat is an optional member, known only once a handle exists: skip at run time, naming why.
    conformanceCase(ctx, 'lstat reports type, size, mode and mtime', (test) => {
      const handle = sandbox()
      if (!handle.fs.lstat) test.skip('fs.lstat is not implemented (optional member)')
      return checkFsLstat(handle)
    })
    conformanceCase(ctx, 'watch reports create/change and delete', (test) => {
      const handle = sandbox()
      if (!handle.fs.watch) test.skip('fs.watch is not implemented (optional member)')
      return checkFsWatch(handle)
    })
    if (ctx.capabilities.exec) run('symlinks: list/lstat describe them, dangling links exist', checkFsSymlinkMetadata)
    else skippedCase('fs: symlink metadata', 'needs exec to create symlinks (capabilities().exec is false)')
    registerFsPathConformance(getContext, sandbox)
    registerFsRaceConformance(getContext, sandbox)
  })
}

async function writeText(handle: SandboxHandle, text: string): Promise<string> {
  const path = `${scratch('fs-utf8')}/t.txt`
  await handle.fs.write(path, text)
  return path
}
