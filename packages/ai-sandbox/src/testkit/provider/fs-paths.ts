/**
 * Filesystem conformance, part two: how paths map onto the workspace. The
 * virtual root `/workspace` and the real `workspaceRoot` both work; `..`,
 * outside absolute paths and symlinks that point outside are refused with
 * `SandboxPathError`; a missing file is `not-found`. Invariant: escape probes
 * write only to fresh names under `/tmp`, so a broken provider cannot damage
 * the host. Design notes: docs/design/testkit.md
 */
import { randomUUID } from 'node:crypto'
import { posix } from 'node:path'
import { describe, expect } from 'vitest'
import type { SandboxPathErrorReason } from '../../contracts/errors.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import { expectSandboxPathError, violation } from './assert.js'
import { conformanceCase, skippedCase } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { q, scratch, sh } from './io.js'
import { plantOutsideFolder } from './outside.js'

/** The virtual `/workspace` and the absolute `workspaceRoot` both name files of the workspace. */
export async function checkFsVirtualRoot(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-virtual')
  await handle.fs.write(`${root}/a.txt`, 'via relative')
  expect(await handle.fs.read(`/workspace/${root}/a.txt`), 'a workspace-relative path and /workspace/<path> name the same file').toBe('via relative')
  await handle.fs.write(`/workspace/${root}/b.txt`, 'via virtual')
  expect(await handle.fs.read(`${root}/b.txt`), 'fs.write to /workspace/<path> lands at the workspace-relative <path>').toBe('via virtual')
  const real = posix.join(handle.workspaceRoot, root, 'a.txt')
  expect(await handle.fs.read(real), `an absolute path under workspaceRoot (${real}) names the same file`).toBe('via relative')
}

/** `..`, absolute paths outside the workspace and `/workspace/..` are refused with `SandboxPathError` (`escape`) by every fs method. */
export async function checkFsPathConfinement(handle: SandboxHandle): Promise<void> {
  const fresh = `conformance-escape-${randomUUID().slice(0, 8)}`
  const readable = ['../x', '/etc/passwd', '/workspace/../x', 'a/../../x', '/workspace/../../etc/passwd']
  // Writes only ever target fresh names, so a provider that fails this check creates a stray file, not damage.
  const writable = [`../${fresh}`, `/tmp/${fresh}`, `/workspace/../${fresh}`, `a/../../${fresh}`]
  const refuse = (method: string, path: string, run: () => unknown) =>
    expectSandboxPathError(run, ['escape'], `fs.${method}(${JSON.stringify(path)}) is refused with SandboxPathError reason "escape" (path outside the workspace)`)
  for (const path of readable) {
    await refuse('read', path, () => handle.fs.read(path))
    await refuse('readBytes', path, () => handle.fs.readBytes(path))
    await refuse('list', path, () => handle.fs.list(path))
    await refuse('exists', path, () => handle.fs.exists(path))
    if (handle.fs.lstat) await refuse('lstat', path, () => handle.fs.lstat?.(path))
  }
  await handle.fs.write('fs-confinement-source.txt', 'source')
  for (const path of writable) {
    await refuse('write', path, () => handle.fs.write(path, 'escaped'))
    await refuse('mkdir', path, () => handle.fs.mkdir(path))
    await refuse('remove', path, () => handle.fs.remove(path))
    await refuse('rename (destination)', path, () => handle.fs.rename('fs-confinement-source.txt', path))
    await refuse('rename (source)', path, () => handle.fs.rename(path, 'fs-confinement-target.txt'))
  }
  expect(await handle.fs.read('fs-confinement-source.txt'), 'a refused rename leaves the source in place').toBe('source')
}

/** Reading a missing file throws `SandboxPathError` with reason `not-found`. */
export async function checkFsReadMissing(handle: SandboxHandle): Promise<void> {
  const path = `${scratch('fs-missing')}/nope.txt`
  await expectSandboxPathError(() => handle.fs.read(path), ['not-found'], 'fs.read of a missing file throws SandboxPathError reason "not-found"')
  await expectSandboxPathError(() => handle.fs.readBytes(path), ['not-found'], 'fs.readBytes of a missing file throws SandboxPathError reason "not-found"')
}

/**
 * With exec: a symlink inside the workspace that points outside is refused
 * for reading and writing (`escape` or `symlink-escape`), and nothing is
 * written outside. Creates `ln -s / escape`, a link to `/etc/passwd` and links
 * to a fresh decoy folder `/tmp/conformance-decoy-<hex>`, which exists both
 * inside the sandbox and on the host where the kit runs (see
 * `plantOutsideFolder`), so a provider whose `fs` follows the links on the
 * host leaves its stray file where the kit looks. Removes all of them afterwards.
 */
export async function checkFsSymlinkEscape(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-escape')
  const reasons: SandboxPathErrorReason[] = ['escape', 'symlink-escape']
  const rule = (what: string) => `${what} through a symlink that points outside the workspace is refused with SandboxPathError ("escape" or "symlink-escape")`
  const decoy = await plantOutsideFolder(handle, 'conformance-decoy')
  try {
    await sh(
      handle,
      `mkdir -p ${q(root)} && cd ${q(root)} && ln -s / escape && ln -s /etc/passwd passwd-link && ` +
        `ln -s ${q(decoy.path)} decoy-dir && ln -s ${q(`${decoy.path}/dangling.txt`)} dangling-out`,
    )
    const before = { sandbox: await decoy.sandboxSnapshot(), host: decoy.hostSnapshot() }
    await expectSandboxPathError(() => handle.fs.read(`${root}/escape/etc/passwd`), reasons, rule('fs.read of escape/etc/passwd'))
    await expectSandboxPathError(() => handle.fs.read(`${root}/passwd-link`), reasons, rule('fs.read of a link to /etc/passwd'))
    await expectSandboxPathError(() => handle.fs.readBytes(`${root}/passwd-link`), reasons, rule('fs.readBytes of a link to /etc/passwd'))
    await expectSandboxPathError(() => handle.fs.list(`${root}/escape`), reasons, rule('fs.list of a link to /'))
    await expectSandboxPathError(() => handle.fs.write(`${root}/decoy-dir/new.txt`, 'escaped'), reasons, rule('fs.write into a linked folder'))
    await expectSandboxPathError(() => handle.fs.write(`${root}/dangling-out`, 'escaped'), reasons, rule('fs.write to a dangling link'))
    await expectSandboxPathError(() => handle.fs.mkdir(`${root}/decoy-dir/sub`), reasons, rule('fs.mkdir inside a linked folder'))
    const sandboxAfter = await decoy.sandboxSnapshot()
    if (sandboxAfter !== before.sandbox) {
      violation('a refused write through an outward symlink leaves nothing outside the workspace', `the decoy folder ${decoy.path} inside the sandbox now holds ${JSON.stringify(sandboxAfter.trim())}`)
    }
    const hostAfter = decoy.hostSnapshot()
    if (hostAfter !== before.host) {
      violation(
        'a refused write through an outward symlink leaves nothing outside the workspace',
        `the decoy folder ${decoy.path} on the host where the kit runs now holds ${JSON.stringify(hostAfter.trim())} (the provider's fs followed the link on the host)`,
      )
    }
  } finally {
    await handle.process.exec(`cd ${q(root)} && rm -f escape passwd-link decoy-dir dangling-out`).catch(() => undefined)
    await decoy.remove()
  }
}

/** With exec: a symlink that stays inside the workspace is followed for read and write. */
export async function checkFsSymlinkInside(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-inner-link')
  await handle.fs.write(`${root}/real/file.txt`, 'through the link')
  await sh(handle, `cd ${q(root)} && ln -s real alias`)
  expect(await handle.fs.read(`${root}/alias/file.txt`), 'a symlink that resolves inside the workspace is followed by fs.read').toBe('through the link')
  await handle.fs.write(`${root}/alias/new.txt`, 'written via link')
  expect(await handle.fs.read(`${root}/real/new.txt`), 'a symlink that resolves inside the workspace is followed by fs.write').toBe('written via link')
}

/** Register the path checks inside the fs group, on the group's shared sandbox. */
export function registerFsPathConformance(getContext: () => ProviderConformanceContext, sandbox: () => SandboxHandle): void {
  const ctx = getContext()
  describe('paths', () => {
    const run = (title: string, check: (h: SandboxHandle) => Promise<void>) => conformanceCase(ctx, title, () => check(sandbox()))
    run('/workspace and workspaceRoot paths map to the workspace', checkFsVirtualRoot)
    run('../x, /etc/passwd and /workspace/../x are refused (escape)', checkFsPathConfinement)
    run('reading a missing file is SandboxPathError not-found', checkFsReadMissing)
    if (ctx.capabilities.exec) {
      run('a symlink pointing outside is refused for read and write', checkFsSymlinkEscape)
      run('a symlink staying inside the workspace is followed', checkFsSymlinkInside)
    } else {
      skippedCase('fs: symlink escape', 'needs exec to create symlinks (capabilities().exec is false)')
    }
  })
}
