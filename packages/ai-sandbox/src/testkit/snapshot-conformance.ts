/**
 * `runSandboxSnapshotConformance`: portable snapshots (capture and restore,
 * spec 000 "Portable sandbox snapshots") as a vitest suite over a real
 * provider, and optionally across two providers. The cases run in order on
 * sandboxes the suite creates; every one is destroyed when the suite ends,
 * even when a case fails.
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxProvider } from '../contracts/provider.js'
import { parseOptions } from '../contracts/validate.js'
import { captureSandboxWorkspace, type SandboxSnapshotCapture } from '../snapshots/capture.js'
import {
  checkCrossProvider,
  checkDefaultPolicyPaths,
  checkLargeTree,
  checkPolicyOptions,
  checkRefusedEntries,
  checkRestoreByteIdentical,
  checkRestoreOverExisting,
  checkSecretsZeroed,
  checkTamperedRestore,
  kitBlobStore,
  type KitBlobStore,
  type SnapshotKitContext,
  type SnapshotKitRole,
} from './snapshots/cases.js'
import { SNAPSHOT_FIXTURE_SECRET, writeSnapshotFixture } from './snapshots/fixture.js'

/** Options of {@link runSandboxSnapshotConformance}. */
export interface SandboxSnapshotConformanceOptions {
  /** Build the provider under test. Called once, while vitest collects the suite. */
  makeProvider: () => SandboxProvider | Promise<SandboxProvider>
  /** A second provider: the fixture captured on each restores byte for byte on the other, and both capture the same manifest. */
  peer?: { name: string; makeProvider: () => SandboxProvider | Promise<SandboxProvider> }
  /** Files of the large-tree case (their paths fill about 100 bytes each, 200 KB for the default). Default 2000. */
  largeTreeFiles?: number
  /** False when the sandbox's `/tmp` is shared with the host (local-process): the check that no scratch folder is left there is then skipped. Default true. */
  privateTmp?: boolean
  /** Timeout of each case and hook, in ms. Default 60 000. */
  timeoutMs?: number
}

const makerSchema = z.custom<() => SandboxProvider | Promise<SandboxProvider>>((value) => typeof value === 'function', { message: 'expected a function that returns a SandboxProvider' })
const optionsSchema = z
  .object({
    makeProvider: makerSchema,
    peer: z.object({ name: z.string().min(1), makeProvider: makerSchema }).strict().optional(),
    largeTreeFiles: z.number().int().min(100, 'expected at least 100 files').optional(),
    privateTmp: z.boolean().optional(),
    timeoutMs: z.number().int().min(1_000, 'expected at least 1000 ms').optional(),
  })
  .strict()

/**
 * Register the portable-snapshot suite in the current vitest file. Cases:
 * the default policy keeps exactly the right paths; a restore into a new
 * sandbox is byte for byte with modes and empty folders, and captures back to
 * the same manifest; every blob has the secret zeroed; include, exclude and
 * redact; a symlink, executable or special file fails the capture naming it
 * with nothing put; a tampered manifest or blob fails the restore and changes
 * nothing; a restore over existing files keeps only what the policy excludes;
 * a large tree streams through; with `peer`, restores across the two
 * providers are byte-identical.
 *
 * The sandbox needs `sh`, `find`, `xargs`, `tar`, `base64`, `stat`,
 * `sha256sum`, `mkfifo` and `ln` (GNU or BusyBox), `process.exec`,
 * `process.spawn` and `fs.write`.
 *
 * @param name - Shown in the suite title, e.g. `docker busybox`.
 * @param options - {@link SandboxSnapshotConformanceOptions}.
 * @throws SandboxConfigError naming the field for invalid options.
 * @example
 * ```ts
 * import { runSandboxSnapshotConformance } from '@tanstack/ai-sandbox/testkit'
 *
 * runSandboxSnapshotConformance('docker', { makeProvider: () => dockerSandbox({ image: 'sandbox-base:latest' }) })
 * ```
 */
export function runSandboxSnapshotConformance(name: string, options: SandboxSnapshotConformanceOptions): void {
  const { makeProvider, peer, largeTreeFiles = 2_000, privateTmp = true, timeoutMs = 60_000 } = parseOptions(optionsSchema, options, 'runSandboxSnapshotConformance')
  describe(`portable snapshot conformance: ${name}`, async () => {
    const provider = await makeProvider()
    const peerProvider = peer ? await peer.makeProvider() : undefined
    const handles: SandboxHandle[] = []
    const made = new Map<SnapshotKitRole, Promise<SandboxHandle>>()
    let fixture: Promise<{ source: SandboxHandle; capture: SandboxSnapshotCapture; store: KitBlobStore }> | undefined
    const roles: SnapshotKitRole[] = ['source', 'fresh', 'target', ...(peerProvider ? (['here', 'peer-source', 'peer-target'] as const) : [])]
    const context: SnapshotKitContext = {
      provider,
      ...(peer && peerProvider ? { peer: { name: peer.name, provider: peerProvider } } : {}),
      largeTreeFiles,
      privateTmp,
      sandbox: (role) => {
        let handle = made.get(role)
        if (!handle) {
          const on = role.startsWith('peer-') && peerProvider ? peerProvider : provider
          handle = on.create().then((created) => (handles.push(created), created))
          made.set(role, handle)
        }
        return handle
      },
      fixture: () =>
        (fixture ??= (async () => {
          const source = await context.sandbox('source')
          await writeSnapshotFixture(source)
          const store = kitBlobStore()
          const capture = await captureSandboxWorkspace(source, { putBlob: store.putBlob, secrets: [SNAPSHOT_FIXTURE_SECRET] })
          return { source, capture, store }
        })()),
    }
    // Every sandbox up front, side by side (creating them one by one is most of a run's time on a container engine).
    beforeAll(async () => {
      await Promise.all(roles.map((role) => context.sandbox(role)))
    }, timeoutMs)
    afterAll(async () => {
      await Promise.allSettled(made.values())
      const failures: string[] = []
      await Promise.all(handles.splice(0).map((handle) => handle.destroy().catch((error: unknown) => failures.push(`${handle.id}: ${String(error)}`))))
      if (failures.length > 0) throw new Error(`destroying the kit's sandboxes failed: ${failures.join('; ')}`)
    }, timeoutMs)
    it('the default policy stores exactly the kept paths (exclusions at every depth, the marker and instructions at the root only)', () => checkDefaultPolicyPaths(context), timeoutMs)
    it('a restore into a new sandbox is byte for byte, with modes and empty directories, and captures back to the same manifest', () => checkRestoreByteIdentical(context), timeoutMs)
    it('every stored blob has the secret zeroed (raw, base64, inside base64)', () => checkSecretsZeroed(context), timeoutMs)
    it('include or redact alone keep the default exclusions; exclude replaces them but never the root marker', () => checkPolicyOptions(context), timeoutMs)
    it('a symlink, an executable or a special file fails the capture naming it, with nothing put', () => checkRefusedEntries(context), timeoutMs)
    it('a tampered manifest or blob fails the restore naming the entry and changes nothing', () => checkTamperedRestore(context), timeoutMs)
    it('a restore over existing files removes what the policy covers and keeps what it excludes', () => checkRestoreOverExisting(context), timeoutMs)
    it(`a tree of ${largeTreeFiles} files streams through capture and restore`, () => checkLargeTree(context), timeoutMs)
    if (peer) it(`captured on ${peer.name} restores here byte for byte, and the reverse`, () => checkCrossProvider(context), timeoutMs)
  })
}
