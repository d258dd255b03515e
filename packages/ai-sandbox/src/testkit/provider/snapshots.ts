/**
 * Snapshot and fork conformance for providers that advertise them: a
 * snapshot captures the files at that moment and restores into a new,
 * separate sandbox; a fork is an independent copy. Restored and forked
 * sandboxes are tracked so they are destroyed after the test.
 */
import { describe, expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import { forkSandbox, restoreSandboxSnapshot, snapshotSandbox } from '../../contracts/require-capability.js'
import { violation } from './assert.js'
import { conformanceCase, skippedCase } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { workspaceIO } from './io.js'
import type { WorkspaceIO } from './io.js'

/** `snapshot()` returns a `snapshotId`; `restoreSnapshot` starts a new sandbox with the files as they were at snapshot time. */
export async function checkSnapshotRestore(ctx: ProviderConformanceContext): Promise<void> {
  const original = await ctx.create()
  expectAdvertisedMethod(ctx.provider.name, 'snapshots', 'handle.snapshot', original.snapshot)
  expectAdvertisedMethod(ctx.provider.name, 'snapshots', 'provider.restoreSnapshot', ctx.provider.restoreSnapshot)
  const io = ioOf(ctx, original)
  await io.write('snap/state.txt', 'at snapshot time')
  const ref = await snapshotSandbox(original, 'conformance')
  expect(typeof ref.snapshotId === 'string' && ref.snapshotId.length > 0, `snapshot() returns a non-empty snapshotId (got ${JSON.stringify(ref.snapshotId)})`).toBe(true)
  expect(Number.isFinite(ref.createdAt), 'snapshot() returns createdAt in epoch ms').toBe(true)
  await io.write('snap/state.txt', 'changed after the snapshot')
  const restored = ctx.track(await restoreSandboxSnapshot(ctx.provider, { snapshotId: ref.snapshotId }))
  expect(restored.id, 'restoreSnapshot starts a new sandbox (a different id)').not.toBe(original.id)
  expect(restored.provider, 'a restored handle has provider === provider.name').toBe(ctx.provider.name)
  expect(await ioOf(ctx, restored).read('snap/state.txt'), 'a restored sandbox has the files as they were when the snapshot was taken').toBe('at snapshot time')
  await ioOf(ctx, restored).write('snap/only-restored.txt', 'x')
  expect(await io.read('snap/only-restored.txt'), 'a restored sandbox is separate from the original').toBeNull()
}

/** `fork()` returns an independent copy: same files at fork time, then no shared writes either way. */
export async function checkForkIsIndependent(ctx: ProviderConformanceContext): Promise<void> {
  const original = await ctx.create()
  expectAdvertisedMethod(ctx.provider.name, 'fork', 'handle.fork', original.fork)
  const io = ioOf(ctx, original)
  await io.write('fork/shared.txt', 'before fork')
  const fork = ctx.track(await forkSandbox(original))
  const forkIO = ioOf(ctx, fork)
  expect(fork.id, 'fork() returns a sandbox with a different id').not.toBe(original.id)
  expect(await forkIO.read('fork/shared.txt'), 'a fork starts with the files of the original').toBe('before fork')
  await forkIO.write('fork/shared.txt', 'changed in fork')
  await io.write('fork/original-only.txt', 'original')
  expect(await io.read('fork/shared.txt'), 'a write in the fork does not change the original').toBe('before fork')
  expect(await forkIO.read('fork/original-only.txt'), 'a write in the original does not appear in the fork').toBeNull()
}

/** A flag that is `true` promises its method: fail with that, never with "the flag is false". */
function expectAdvertisedMethod(provider: string, flag: 'snapshots' | 'fork', method: string, member: unknown): void {
  if (typeof member === 'function') return
  violation(`capabilities().${flag} is true, so ${method} is a function`, `the "${provider}" provider advertises ${flag} (the flag is true) but ${method} is ${member === undefined ? 'missing' : typeof member}; implement it or set capabilities().${flag} to false`)
}

/** Register the snapshots group (run only when the flag is true; a false flag is checked in capabilities). */
export function registerSnapshotConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  describe('snapshots', () => {
    if (hasIO(ctx)) conformanceCase(ctx, 'snapshot then restoreSnapshot brings back the files', () => checkSnapshotRestore(getContext()))
    else skippedCase('snapshots', 'files are compared through fs or exec, and the provider has neither')
  })
}

/** Register the fork group (run only when the flag is true; a false flag is checked in capabilities). */
export function registerForkConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  describe('fork', () => {
    if (hasIO(ctx)) conformanceCase(ctx, 'fork gives an independent copy', () => checkForkIsIndependent(getContext()))
    else skippedCase('fork', 'files are compared through fs or exec, and the provider has neither')
  })
}

const hasIO = (ctx: ProviderConformanceContext) => ctx.capabilities.fs || ctx.capabilities.exec

function ioOf(ctx: ProviderConformanceContext, handle: SandboxHandle): WorkspaceIO {
  return workspaceIO(handle, ctx.capabilities) ?? violation('snapshot and fork checks need fs or exec', 'the provider advertises neither')
}
