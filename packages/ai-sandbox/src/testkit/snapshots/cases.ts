/**
 * The checks of the portable-snapshot kit, one rule each, over a real
 * provider: what the default policy keeps, a byte-identical restore,
 * secrets zeroed in every blob, include/exclude/redact, refused entries,
 * tampered manifests and blobs, a restore over existing files, a large tree,
 * and cross-provider restores. Each check creates the sandboxes it needs
 * through the context, which destroys them.
 */
import { expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { SandboxProvider } from '../../contracts/provider.js'
import { captureSandboxWorkspace, type SandboxSnapshotCapture } from '../../snapshots/capture.js'
import { SandboxSnapshotError } from '../../snapshots/errors.js'
import { hashSandboxSnapshotManifest, type SandboxSnapshotEntry, type SandboxSnapshotManifest } from '../../snapshots/manifest.js'
import { defaultSandboxSnapshotPolicy, type SandboxSnapshotPolicy } from '../../snapshots/policy.js'
import { restoreSandboxWorkspace } from '../../snapshots/restore.js'
import { EXCLUDED_FIXTURE, expectedFixtureTree, KEPT_FIXTURE, maskSecretFile, readSandboxTree, SECRET_FIXTURE_PATH, SNAPSHOT_FIXTURE_SECRET, writeSnapshotFixture } from './fixture.js'

/** A blob store in memory that counts its puts. */
export interface KitBlobStore {
  readonly blobs: Map<string, Buffer>
  readonly puts: () => number
  readonly putBlob: (sha256: string, bytes: Uint8Array) => Promise<void>
  readonly getBlob: (sha256: string) => Promise<Uint8Array | undefined>
}

/** A new in-memory blob store. */
export function kitBlobStore(): KitBlobStore {
  const blobs = new Map<string, Buffer>()
  let puts = 0
  return {
    blobs,
    puts: () => puts,
    putBlob: async (sha256, bytes) => {
      puts++
      blobs.set(sha256, Buffer.from(bytes))
    },
    getBlob: async (sha256) => blobs.get(sha256),
  }
}

/**
 * The sandboxes of a kit run: `source` holds the fixture, `fresh` gets the
 * first restore, `target` is shared by the restores over existing files;
 * with a peer, `here` (this provider) and `peer-source` / `peer-target`
 * (the peer's) serve the cross-provider check.
 */
export type SnapshotKitRole = 'source' | 'fresh' | 'target' | 'here' | 'peer-source' | 'peer-target'

/** What the checks share: sandboxes made through the provider under test (and the peer), destroyed by the runner. */
export interface SnapshotKitContext {
  readonly provider: SandboxProvider
  /** Another provider, for cross-provider restores. */
  readonly peer?: { readonly name: string; readonly provider: SandboxProvider }
  /** Files of the large-tree check. */
  readonly largeTreeFiles: number
  /** Whether the sandbox's `/tmp` is its own (false on local-process, whose `/tmp` is the host's): then no scratch folder may be left there. */
  readonly privateTmp: boolean
  /** The suite's sandbox in `role` (made once; the runner makes them all side by side up front and destroys them). */
  sandbox: (role: SnapshotKitRole) => Promise<SandboxHandle>
  /** The `source` sandbox with the fixture written, its default capture and that capture's blobs (made once). */
  fixture: () => Promise<{ source: SandboxHandle; capture: SandboxSnapshotCapture; store: KitBlobStore }>
}

const SECRETS = [SNAPSHOT_FIXTURE_SECRET]

function paths(manifest: SandboxSnapshotManifest): string[] {
  return manifest.entries.map((entry) => `${entry.type} ${entry.path}`)
}

/** Lines of `paths()` whose path has a segment the default policy drops at every depth. */
function defaultDropped(lines: readonly string[]): string[] {
  return lines.filter((line) => line.slice(line.indexOf(' ') + 1).split('/').some((segment) => segment === '.git' || segment === 'node_modules' || segment.startsWith('.env')))
}

function sorted(values: string[]): string[] {
  return [...values].sort()
}

async function rejection(promise: Promise<unknown>): Promise<SandboxSnapshotError> {
  try {
    await promise
  } catch (error) {
    if (SandboxSnapshotError.isInstance(error)) return error
    throw error
  }
  throw new Error('expected a SandboxSnapshotError, but the call resolved')
}

async function run(handle: SandboxHandle, script: string): Promise<string> {
  const result = await handle.process.exec(script)
  expect(result.exitCode, `${script}\n${result.stderr}`).toBe(0)
  return result.stdout
}

/** No scratch folder of a capture or restore is left in the sandbox's `/tmp`. */
async function expectNoScratch(context: SnapshotKitContext, handle: SandboxHandle): Promise<void> {
  if (!context.privateTmp) return
  const left = await run(handle, 'ls -a /tmp')
  expect(left.split('\n').filter((name) => name.startsWith('tanstack-snapshot-')), 'no scratch folder is left under /tmp').toEqual([])
}

/** The default policy stores exactly the fixture's kept entries (exclusions at every depth, root-only ones at the root only). */
export async function checkDefaultPolicyPaths(context: SnapshotKitContext): Promise<void> {
  const { capture, store } = await context.fixture()
  expect(sorted(paths(capture.manifest))).toEqual(sorted(KEPT_FIXTURE.map((entry) => `${entry.type} ${entry.path}`)))
  for (const excluded of EXCLUDED_FIXTURE) expect(capture.manifest.entries.some((entry) => entry.path === excluded.path || entry.path.startsWith(`${excluded.path}/`)), `${excluded.path} is excluded`).toBe(false)
  const files = capture.manifest.entries.filter((entry) => entry.type === 'file')
  expect(capture.stats.files).toBe(files.length)
  expect(store.puts(), 'each distinct blob is put once (dup-one.txt and dup-two.txt share one)').toBe(new Set(files.map((entry) => entry.sha256)).size)
  expect(store.puts()).toBeLessThan(files.length)
  expect(hashSandboxSnapshotManifest(JSON.parse(JSON.stringify(capture.manifest)) as SandboxSnapshotManifest), 'the hash survives a JSON round trip').toBe(capture.manifestSha256)
  await expectNoScratch(context, (await context.fixture()).source)
}

/** A restore into a new sandbox gives the fixture byte for byte, modes and empty folders included; capturing it again gives the same manifest. */
export async function checkRestoreByteIdentical(context: SnapshotKitContext): Promise<void> {
  const { capture, store } = await context.fixture()
  const target = await context.sandbox('fresh')
  const restored = await restoreSandboxWorkspace(target, { manifest: capture.manifest, manifestSha256: capture.manifestSha256, getBlob: store.getBlob })
  expect(restored.stats.files).toBe(capture.stats.files)
  expect(maskSecretFile(await readSandboxTree(target))).toEqual(expectedFixtureTree())
  const again = await captureSandboxWorkspace(target, { putBlob: async () => undefined, secrets: SECRETS })
  expect(again.manifestSha256, 'a capture of the restored tree gives the same manifest').toBe(capture.manifestSha256)
  await expectNoScratch(context, target)
}

/** No stored blob holds the secret raw, in base64 (padded or not), or inside the base64 of `user:<secret>`; the secret file keeps its size and other bytes. */
export async function checkSecretsZeroed(context: SnapshotKitContext): Promise<void> {
  const { capture, store } = await context.fixture()
  const forms = [SNAPSHOT_FIXTURE_SECRET, Buffer.from(SNAPSHOT_FIXTURE_SECRET).toString('base64'), Buffer.from(SNAPSHOT_FIXTURE_SECRET).toString('base64').replace(/=+$/, ''), Buffer.from(`user:${SNAPSHOT_FIXTURE_SECRET}`).toString('base64')]
  expect(store.blobs.size).toBeGreaterThan(0)
  for (const [sha256, bytes] of store.blobs) for (const form of forms) expect(bytes.includes(form), `blob ${sha256} holds ${JSON.stringify(form)}`).toBe(false)
  const entry = capture.manifest.entries.find((e) => e.path === SECRET_FIXTURE_PATH)
  const original = KEPT_FIXTURE.find((e) => e.path === SECRET_FIXTURE_PATH)
  if (entry?.type !== 'file' || original?.type !== 'file') throw new Error('the fixture lost its secret file')
  const stored = store.blobs.get(entry.sha256)!
  expect(stored.length, 'zeroing keeps the length').toBe(original.bytes.length)
  expect(stored.subarray(0, 6).toString(), 'bytes around the secret are kept').toBe('token=')
  expect(stored.subarray(6, 6 + SNAPSHOT_FIXTURE_SECRET.length).every((byte) => byte === 0), 'the raw secret became zero bytes').toBe(true)
  expect(stored.subarray(-4).toString()).toBe('end\n')
  expect(capture.stats.zeroedSecrets).toBeGreaterThanOrEqual(3)
}

/** `include` alone and `redact` alone keep the default exclusions; `exclude` replaces them (not the root marker); a composed `exclude` keeps them; one file alone can be stored. */
export async function checkPolicyOptions(context: SnapshotKitContext): Promise<void> {
  const { source } = await context.fixture()
  const capture = (policy: SandboxSnapshotPolicy, store = kitBlobStore()) => captureSandboxWorkspace(source, { putBlob: store.putBlob, secrets: SECRETS, policy })
  const defaults = defaultSandboxSnapshotPolicy()

  expect(paths((await capture({ include: (path) => path === 'src/app.ts' })).manifest), 'include can pick one file').toEqual(['file src/app.ts'])

  const srcOnly = paths((await capture({ include: (path) => path.startsWith('src/') })).manifest)
  expect(srcOnly).toContain('file src/.tanstack-projection.json')
  expect(defaultDropped(srcOnly), 'include alone keeps the default exclusions').toEqual([])
  expect(srcOnly.every((line) => line.split(' ')[1]!.startsWith('src/'))).toBe(true)

  const replacedStore = kitBlobStore()
  const replaced = paths((await capture({ exclude: (path) => path === 'src/nested/deep/er/large.bin' }, replacedStore)).manifest)
  for (const [sha256, bytes] of replacedStore.blobs) expect(bytes.includes(SNAPSHOT_FIXTURE_SECRET), `blob ${sha256} (.env is stored now) holds the secret`).toBe(false)
  for (const path of ['.git/HEAD', 'src/.git', 'node_modules/pkg/index.js', '.env', 'CLAUDE.md', '.claude/skills/review/SKILL.md']) expect(replaced, `a replaced exclude stores ${path}`).toContain(`file ${path}`)
  expect(replaced).not.toContain('file src/nested/deep/er/large.bin')
  expect(replaced, 'the root projection marker stays excluded').not.toContain('file .tanstack-projection.json')

  const composed = paths((await capture({ exclude: (path, entry) => defaults.exclude(path, entry) || path.startsWith('src/nested/') })).manifest)
  expect(composed.filter((line) => line.includes('src/nested/'))).toEqual([])
  expect(defaultDropped(composed)).toEqual([])
  expect(composed).toContain('file src/app.ts')

  const store = kitBlobStore()
  const redacted = await capture({ redact: ({ path, bytes }) => (path === 'src/app.ts' ? Buffer.from(Buffer.from(bytes).toString().replace('42', '**')) : bytes) }, store)
  expect(defaultDropped(paths(redacted.manifest)), 'redact alone keeps the default exclusions').toEqual([])
  const app = redacted.manifest.entries.find((entry) => entry.path === 'src/app.ts')
  expect(app?.type === 'file' && store.blobs.get(app.sha256)?.toString()).toBe('export const answer = **\n')
}

/** A kept symlink, executable or special file fails the capture, naming it (the first in path order), with nothing put; excluded, it is fine. */
export async function checkRefusedEntries(context: SnapshotKitContext): Promise<void> {
  const { source } = await context.fixture()
  // In path order: each capture names the first one left, which is then removed.
  const refused: { path: string; reason: SandboxSnapshotError['reason'] }[] = [
    { path: 'bad/a-link.ts', reason: 'symlink' },
    { path: 'bad/b-linked-dir', reason: 'symlink' },
    { path: 'bad/c-run.sh', reason: 'executable' },
    { path: 'bad/d-other-x', reason: 'executable' },
    { path: 'bad/e-pipe', reason: 'special-file' },
  ]
  await run(source, 'mkdir bad && ln -s ../src/app.ts bad/a-link.ts && ln -s ../src bad/b-linked-dir && printf "#!/bin/sh\\n" > bad/c-run.sh && chmod 744 bad/c-run.sh && printf x > bad/d-other-x && chmod 641 bad/d-other-x && mkfifo bad/e-pipe')
  const defaults = defaultSandboxSnapshotPolicy()
  // Each capture names the first refused path left; the next one excludes it through the policy.
  const excludedPaths = new Set<string>()
  const policy: SandboxSnapshotPolicy = { exclude: (path, entry) => defaults.exclude(path, entry) || excludedPaths.has(path) }
  for (const [index, { path, reason }] of refused.entries()) {
    const store = kitBlobStore()
    const error = await rejection(captureSandboxWorkspace(source, { putBlob: store.putBlob, secrets: SECRETS, policy }))
    expect({ reason: error.reason, path: error.path }).toEqual({ reason, path })
    expect(error.message).toContain(JSON.stringify(path))
    if (index < refused.length - 1) expect(error.message, 'the others are named too').toContain(JSON.stringify(refused[index + 1]!.path))
    expect(store.puts(), `${path}: nothing is put before the checks passed`).toBe(0)
    excludedPaths.add(path)
  }
  const excluded = await captureSandboxWorkspace(source, { putBlob: async () => undefined, policy })
  expect(paths(excluded.manifest).filter((line) => line.split(' ')[1]!.startsWith('bad')), 'excluded, they fail nothing and are not stored (their folder is, as an empty one)').toEqual(['directory bad'])
  await run(source, 'rm -rf bad')
  await expectNoScratch(context, source)
}

/** A manifest or blob that does not verify fails the restore, naming the entry, and the sandbox is unchanged. */
export async function checkTamperedRestore(context: SnapshotKitContext): Promise<void> {
  const { capture, store } = await context.fixture()
  const target = await context.sandbox('target')
  await run(target, 'mkdir -p keep && echo before > keep/file.txt && echo stale > stale.txt')
  const before = await readSandboxTree(target)
  const entries = capture.manifest.entries
  const withEntries = (changed: SandboxSnapshotEntry[]) => {
    const manifest = { ...capture.manifest, entries: changed }
    return { manifest, manifestSha256: hashSandboxSnapshotManifest(manifest) }
  }
  const firstFile = entries.find((entry): entry is Extract<SandboxSnapshotEntry, { type: 'file' }> => entry.type === 'file' && entry.size > 0)!
  const attempts: { what: string; options: Parameters<typeof restoreSandboxWorkspace>[1]; reason: SandboxSnapshotError['reason']; path?: string }[] = [
    { what: 'a changed mode under the old hash', options: { manifest: { ...capture.manifest, entries: entries.map((e) => (e === firstFile ? { ...e, mode: 0o666 } : e)) }, manifestSha256: capture.manifestSha256, getBlob: store.getBlob }, reason: 'manifest-hash-mismatch' },
    { what: 'a path with ..', options: { ...withEntries([...entries, { path: 'zz/../../escape.txt', type: 'file', mode: 0o644, size: firstFile.size, sha256: firstFile.sha256 }]), getBlob: store.getBlob }, reason: 'unsafe-path', path: 'zz/../../escape.txt' },
    { what: 'an absolute path', options: { ...withEntries([{ path: '/etc/escape', type: 'file', mode: 0o644, size: firstFile.size, sha256: firstFile.sha256 }, ...entries]), getBlob: store.getBlob }, reason: 'unsafe-path', path: '/etc/escape' },
    { what: 'an executable mode', options: { ...withEntries(entries.map((e) => (e === firstFile ? { ...e, mode: 0o755 } : e))), getBlob: store.getBlob }, reason: 'invalid-manifest', path: firstFile.path },
    { what: 'entries out of order', options: { ...withEntries([...entries].reverse()), getBlob: store.getBlob }, reason: 'invalid-manifest' },
    { what: 'a blob with changed bytes', options: { manifest: capture.manifest, manifestSha256: capture.manifestSha256, getBlob: async (sha256) => (sha256 === firstFile.sha256 ? Buffer.concat([store.blobs.get(sha256)!.subarray(1), Buffer.from('!')]) : store.blobs.get(sha256)) }, reason: 'blob-mismatch', path: firstFile.path },
    { what: 'a missing blob', options: { manifest: capture.manifest, manifestSha256: capture.manifestSha256, getBlob: async (sha256) => (sha256 === firstFile.sha256 ? undefined : store.blobs.get(sha256)) }, reason: 'blob-missing', path: firstFile.path },
  ]
  for (const attempt of attempts) {
    const error = await rejection(restoreSandboxWorkspace(target, attempt.options))
    expect(error.reason, attempt.what).toBe(attempt.reason)
    if (attempt.path !== undefined) expect(error.path, attempt.what).toBe(attempt.path)
  }
  expect(await readSandboxTree(target), 'a restore that did not verify changed nothing').toEqual(before)
  await expectNoScratch(context, target)
}

/** Over existing files, a restore removes what the policy covers and the manifest lacks, keeps what the policy excludes, and replaces a symlink where a folder is needed. */
export async function checkRestoreOverExisting(context: SnapshotKitContext): Promise<void> {
  const { capture, store } = await context.fixture()
  const target = await context.sandbox('target')
  await run(target, 'mkdir -p src stale-dir/node_modules/x node_modules/keep .git with\\ space && echo stale > src/stale.txt && echo x > stale-dir/node_modules/x/y && echo k > node_modules/keep/k && echo c > .git/config && mkdir decoy && ln -s ../decoy src/nested && echo old > src/app.ts && chmod 600 src/app.ts && mkdir -p with\\ space/a\\ file.txt')
  const restored = await restoreSandboxWorkspace(target, { manifest: capture.manifest, manifestSha256: capture.manifestSha256, getBlob: store.getBlob })
  expect(restored.stats.removed).toBeGreaterThanOrEqual(4)
  expect(maskSecretFile(await readSandboxTree(target, ['.git', 'node_modules']))).toEqual(expectedFixtureTree())
  expect((await run(target, 'cat node_modules/keep/k .git/config')).split('\n').slice(0, 2), 'excluded entries are kept').toEqual(['k', 'c'])
}

/**
 * A tree of many files streams through capture and restore; both sides hash
 * the same. It lives under `large/` of the fixture's sandbox and is captured
 * and restored with `include` set to it, which also proves a restore leaves
 * what its policy leaves out alone.
 */
export async function checkLargeTree(context: SnapshotKitContext): Promise<void> {
  const { source } = await context.fixture()
  const count = context.largeTreeFiles
  // One mkdir, then shell builtins only (no process per file).
  const folders = Array.from({ length: 40 }, (_, d) => Array.from({ length: 7 }, (_, e) => `large/d${d}/e${e}`)).flat()
  // Names of about 100 bytes, so the chosen paths pass xargs' 128 KiB command line and tar runs more than once (concatenated archives).
  await run(source, `mkdir -p ${folders.join(' ')} && i=0 && while [ $i -lt ${count} ]; do echo "file $i of ${count}" > large/d$((i % 40))/e$((i % 7))/file-$i-in-a-large-tree-whose-long-names-make-xargs-run-tar-more-than-once.txt; i=$((i + 1)); done`)
  const policy: SandboxSnapshotPolicy = { include: (path) => path.startsWith('large/') }
  const store = kitBlobStore()
  const capture = await captureSandboxWorkspace(source, { putBlob: store.putBlob, policy })
  expect(capture.stats.files).toBe(count)
  const target = await context.sandbox('target')
  await run(target, 'mkdir -p outside-large && echo kept > outside-large/file.txt')
  await restoreSandboxWorkspace(target, { manifest: capture.manifest, manifestSha256: capture.manifestSha256, getBlob: store.getBlob, policy })
  const summary = 'cd large && find . -type f -exec sha256sum {} + | LC_ALL=C sort && find . -type d | LC_ALL=C sort'
  const [expected, actual] = [await run(source, summary), await run(target, summary)]
  expect(actual.split('\n').length).toBeGreaterThan(count)
  expect(actual === expected, 'the restored tree hashes the same as the source').toBe(true)
  expect(await run(target, 'cat outside-large/file.txt && rm -r outside-large'), 'what the policy leaves out is untouched').toBe('kept\n')
  await run(source, 'rm -rf large')
}

/** The fixture captured on the peer provider restores here byte for byte, and the other way round; both providers capture the same manifest. */
export async function checkCrossProvider(context: SnapshotKitContext): Promise<void> {
  const peer = context.peer
  if (!peer) throw new Error('checkCrossProvider needs a peer provider')
  const { capture, store } = await context.fixture()
  const peerSource = await context.sandbox('peer-source')
  await writeSnapshotFixture(peerSource)
  const peerStore = kitBlobStore()
  const peerCapture = await captureSandboxWorkspace(peerSource, { putBlob: peerStore.putBlob, secrets: SECRETS })
  expect(peerCapture.manifestSha256, `${peer.name} and ${context.provider.name} capture the same manifest`).toBe(capture.manifestSha256)

  const here = await context.sandbox('here')
  await restoreSandboxWorkspace(here, { manifest: peerCapture.manifest, manifestSha256: peerCapture.manifestSha256, getBlob: peerStore.getBlob })
  expect(maskSecretFile(await readSandboxTree(here)), `captured on ${peer.name}, restored on ${context.provider.name}`).toEqual(expectedFixtureTree())

  const there = await context.sandbox('peer-target')
  await restoreSandboxWorkspace(there, { manifest: capture.manifest, manifestSha256: capture.manifestSha256, getBlob: store.getBlob })
  const [restoredThere, restoredHere] = [await readSandboxTree(there), await readSandboxTree(here)]
  expect(maskSecretFile(restoredThere), `captured on ${context.provider.name}, restored on ${peer.name}`).toEqual(expectedFixtureTree())
  expect(restoredThere, 'both restores are identical, the zeroed secret file included').toEqual(restoredHere)
}
