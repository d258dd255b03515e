/**
 * Type tests (run by `pnpm test:types`) pinning the portable-snapshot engine
 * the checkpoint store and `createSandboxSnapshots` build on: the policy's
 * members and the default's always-callable `exclude`, the capture and
 * restore signatures, and the manifest's entry union. A change here is a
 * change to the published API and needs a changeset.
 */
import { describe, expectTypeOf, it } from 'vitest'
import {
  captureSandboxWorkspace,
  defaultSandboxSnapshotPolicy,
  hashSandboxSnapshotManifest,
  restoreSandboxWorkspace,
  type SandboxHandle,
  type SandboxSnapshotCapture,
  type SandboxSnapshotEntry,
  type SandboxSnapshotManifest,
  type SandboxSnapshotPathInfo,
  type SandboxSnapshotPolicy,
  type SandboxSnapshotRestore,
} from '../../src/index.js'

describe('portable snapshot types', () => {
  it('pins the policy and the default one', () => {
    expectTypeOf<NonNullable<SandboxSnapshotPolicy['include']>>().toEqualTypeOf<(path: string, entry: SandboxSnapshotPathInfo) => boolean>()
    expectTypeOf<NonNullable<SandboxSnapshotPolicy['redact']>>().parameter(0).toEqualTypeOf<{ readonly path: string; readonly bytes: Uint8Array; readonly secrets: readonly string[] }>()
    expectTypeOf<SandboxSnapshotPathInfo['type']>().toEqualTypeOf<'file' | 'directory' | 'symlink' | 'other'>()
    // The default's exclude is callable without a non-null assertion.
    expectTypeOf(defaultSandboxSnapshotPolicy().exclude).toEqualTypeOf<(path: string, entry: SandboxSnapshotPathInfo) => boolean>()
    expectTypeOf(defaultSandboxSnapshotPolicy()).toMatchTypeOf<SandboxSnapshotPolicy>()
  })

  it('pins capture, restore and the manifest', () => {
    expectTypeOf(captureSandboxWorkspace).parameters.toEqualTypeOf<[SandboxHandle, { putBlob: (sha256: string, bytes: Uint8Array) => Promise<void>; policy?: SandboxSnapshotPolicy; secrets?: readonly (import('../../src/index.js').SecretRef | string)[]; maxFileBytes?: number }]>()
    expectTypeOf(captureSandboxWorkspace).returns.toEqualTypeOf<Promise<SandboxSnapshotCapture>>()
    expectTypeOf<SandboxSnapshotCapture['manifestSha256']>().toBeString()
    expectTypeOf(restoreSandboxWorkspace).parameter(1).toHaveProperty('getBlob').toEqualTypeOf<(sha256: string) => Promise<Uint8Array | undefined | null>>()
    expectTypeOf(restoreSandboxWorkspace).returns.toEqualTypeOf<Promise<SandboxSnapshotRestore>>()
    expectTypeOf(hashSandboxSnapshotManifest).parameter(0).toEqualTypeOf<SandboxSnapshotManifest>()
    expectTypeOf<SandboxSnapshotManifest['version']>().toEqualTypeOf<1>()
    expectTypeOf<Extract<SandboxSnapshotEntry, { type: 'file' }>>().toEqualTypeOf<{ readonly path: string; readonly type: 'file'; readonly mode: number; readonly size: number; readonly sha256: string }>()
    expectTypeOf<Extract<SandboxSnapshotEntry, { type: 'directory' }>>().toEqualTypeOf<{ readonly path: string; readonly type: 'directory'; readonly mode: number }>()
  })
})
