/**
 * Portable snapshots through chat() (spec 000 "Portable sandbox snapshots"):
 * withPersistence + withSandbox({ snapshots }) over the real local-process
 * provider and the shell adapter. A successful run writes a checkpoint (files
 * and empty folders by the default policy, the transcript it covers, the
 * thread's artifacts, secrets zeroed); a failed one writes none; a new
 * sandbox gets the latest checkpoint before the run, a live resumed one is
 * never overwritten; save, fork and readArtifact with their preconditions;
 * the writer lease; the middleware order. The spec's own example is the
 * first case.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSecrets, defineSandbox, defineWorkspace, InMemorySandboxInstanceStore, memorySandboxSnapshots, createSandboxSnapshots, SandboxSnapshotError, withSandbox } from '@tanstack/ai-sandbox'
import { createInMemorySandboxPersistence, withPersistence } from '@tanstack/ai-sandbox/persistence'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('portable-snapshots')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

const paths = (checkpoint: { manifest: { entries: readonly { path: string }[] } } | null) => checkpoint?.manifest.entries.map((entry) => entry.path)

describe('portable snapshots through chat()', () => {
  it("the spec's example: each successful run checkpoints; the next run's new private sandbox starts from it", async () => {
    const sandbox = defineSandbox({ id: 'snap-spec', provider, lifecycle: { reuse: 'none' } })
    const instances = new InMemorySandboxInstanceStore()
    const snapshots = await memorySandboxSnapshots({ sandbox, instances })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })]

    const first = await runShell({ threadId: 't-spec', middleware, command: "mkdir -p src empty node_modules/dep && printf 'hello' > src/a.txt && printf 'TOKEN=1' > .env && echo x > node_modules/dep/i.js && echo done" })
    expect(first.error).toBeUndefined()
    const one = await snapshots.latest('t-spec')
    expect(paths(one)).toEqual(['empty', 'src/a.txt'])
    expect(one).toMatchObject({ sequence: 1, kind: 'run', messageCount: 2, parentCheckpointId: null })
    expect(tmp.entries(), "reuse 'none' destroyed the first sandbox").toEqual([])

    const second = await runShell({ threadId: 't-spec', middleware, command: 'cat src/a.txt; ls -a' })
    expect(second.error).toBeUndefined()
    expect(second.text).toContain('hello')
    expect(second.text).toContain('empty')
    expect(second.text, 'excluded paths are not stored, so not restored').not.toMatch(/\.env|node_modules/)
    const two = await snapshots.latest('t-spec')
    expect(two).toMatchObject({ sequence: 2, parentCheckpointId: one!.checkpointId, messageCount: 4 })
    expect((await snapshots.persistence.stores.messages.list('t-spec')).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  })

  it('a failed run writes no checkpoint and keeps the previous one the latest', async () => {
    const sandbox = defineSandbox({ id: 'snap-fail', provider, lifecycle: { reuse: 'none' } })
    const snapshots = await memorySandboxSnapshots({ sandbox })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })]
    await runShell({ threadId: 't-fail', middleware, command: 'echo kept > a.txt' })
    const failed = await runShell({ threadId: 't-fail', middleware, command: 'echo lost > a.txt; exit 3' })
    expect(failed.error).toMatch(/code 3/)
    expect((await snapshots.list('t-fail')).length).toBe(1)
    const after = await runShell({ threadId: 't-fail', middleware, command: 'cat a.txt' })
    expect(after.text.trim()).toBe('kept')
  })

  it('a live resumed sandbox is never overwritten by a checkpoint; a new one after destroy gets the latest', async () => {
    const sandbox = defineSandbox({ id: 'snap-live', provider, lifecycle: { reuse: 'thread' } })
    const instances = new InMemorySandboxInstanceStore()
    const snapshots = await memorySandboxSnapshots({ sandbox, instances })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })]
    await runShell({ threadId: 't-live', middleware, command: 'echo one > a.txt' })
    const record = await instances.get(sandbox.key({ threadId: 't-live', runId: '' }))
    const live = await provider.resume({ id: record!.providerSandboxId })
    await live!.fs.write('a.txt', 'changed outside any run\n')
    const resumed = await runShell({ threadId: 't-live', middleware, command: 'cat a.txt' })
    expect(resumed.text.trim(), 'the live sandbox keeps its own files').toBe('changed outside any run')
    await sandbox.destroy({ key: record!.key, instances })
    const fresh = await runShell({ threadId: 't-live', middleware, command: 'cat a.txt' })
    expect(fresh.text.trim(), 'a new sandbox starts from the latest checkpoint').toBe('changed outside any run')
    await sandbox.destroy({ key: record!.key, instances })
  })

  it('two runs of one thread started together in one process take turns, and each writes its checkpoint', async () => {
    const sandbox = defineSandbox({ id: 'snap-turns', provider, lifecycle: { reuse: 'thread' } })
    const instances = new InMemorySandboxInstanceStore()
    const snapshots = await memorySandboxSnapshots({ sandbox, instances })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })]
    const [a, b] = await Promise.all([runShell({ threadId: 't-turns', middleware, command: 'echo a >> log.txt' }), runShell({ threadId: 't-turns', middleware, command: 'echo b >> log.txt' })])
    expect([a.error, b.error]).toEqual([undefined, undefined])
    const checkpoints = await snapshots.list('t-turns')
    expect(checkpoints.map((c) => c.sequence)).toEqual([1, 2])
    expect(checkpoints[1]!.manifest.entries.find((e) => e.path === 'log.txt')).toMatchObject({ size: 4 })
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-turns', runId: '' }), instances })
  })

  it('save needs a live reusable sandbox and writes a labelled checkpoint covering the transcript so far', async () => {
    const sandbox = defineSandbox({ id: 'snap-save', provider, lifecycle: { reuse: 'thread' } })
    const instances = new InMemorySandboxInstanceStore()
    const snapshots = await memorySandboxSnapshots({ sandbox, instances })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })]
    const missing = await snapshots.save({ threadId: 't-save', runId: 'r-0', label: 'before anything' }).catch((error: unknown) => error)
    expect(SandboxSnapshotError.isInstance(missing) && missing.reason).toBe('no-live-sandbox')
    await runShell({ threadId: 't-save', middleware, command: 'echo draft > notes.md' })
    const saved = await snapshots.save({ threadId: 't-save', runId: 'r-1', label: 'first draft' })
    expect(saved).toMatchObject({ kind: 'save', label: 'first draft', sequence: 2, messageCount: 2, runId: 'r-1' })
    expect(paths(saved)).toEqual(['notes.md'])
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-save', runId: '' }), instances })

    const once = defineSandbox({ id: 'snap-save-none', provider, lifecycle: { reuse: 'none' } })
    const refused = await createSandboxSnapshots({ persistence: snapshots.persistence, sandbox: once }).save({ threadId: 't-save', runId: 'r-2', label: 'x' }).catch((error: unknown) => error)
    expect(SandboxSnapshotError.isInstance(refused) && refused.reason).toBe('not-reusable')
  })

  it('fork copies the selected checkpoint, the transcript it covers and its artifacts into an empty thread', async () => {
    const sandbox = defineSandbox({ id: 'snap-fork', provider, lifecycle: { reuse: 'none' } })
    const snapshots = await memorySandboxSnapshots({ sandbox })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })]
    await snapshots.persistence.stores.artifacts.put('t-src', { name: 'report.md', mediaType: 'text/markdown', bytes: new TextEncoder().encode('# v1') })
    await runShell({ threadId: 't-src', middleware, command: 'echo v1 > state.txt' })
    const selected = await snapshots.latest('t-src')
    await runShell({ threadId: 't-src', middleware, command: 'echo v2 > state.txt' })

    const forked = await snapshots.fork({ threadId: 't-src', checkpointId: selected!.checkpointId, targetThreadId: 't-branch' })
    expect(forked).toMatchObject({ threadId: 't-branch', kind: 'fork', sequence: 1, forkedFrom: { threadId: 't-src', checkpointId: selected!.checkpointId }, messageCount: 2 })
    expect((await snapshots.persistence.stores.messages.list('t-branch')).length).toBe(2)
    expect((await snapshots.persistence.stores.artifacts.list('t-branch')).map((a) => a.name)).toEqual(['report.md'])
    const branch = await runShell({ threadId: 't-branch', middleware, command: 'cat state.txt' })
    expect(branch.text.trim(), 'the fork restores the selected checkpoint, not the latest').toBe('v1')

    const again = await snapshots.fork({ threadId: 't-src', checkpointId: selected!.checkpointId, targetThreadId: 't-branch' }).catch((error: unknown) => error)
    expect(SandboxSnapshotError.isInstance(again) && again.reason).toBe('target-not-empty')
    const unknown = await snapshots.fork({ threadId: 't-src', checkpointId: 'nope', targetThreadId: 't-other' }).catch((error: unknown) => error)
    expect(SandboxSnapshotError.isInstance(unknown) && unknown.reason).toBe('checkpoint-not-found')
  })

  it('readArtifact returns a checkpoint artifact only through the thread it belongs to', async () => {
    const sandbox = defineSandbox({ id: 'snap-artifact', provider, lifecycle: { reuse: 'none' } })
    const snapshots = await memorySandboxSnapshots({ sandbox })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })]
    await snapshots.persistence.stores.artifacts.put('t-art', { name: 'out/summary.json', mediaType: 'application/json', bytes: new TextEncoder().encode('{"ok":true}') })
    await runShell({ threadId: 't-art', middleware, command: 'true' })
    const checkpoint = await snapshots.latest('t-art')
    const read = await snapshots.readArtifact({ threadId: 't-art', checkpointId: checkpoint!.checkpointId, name: 'out/summary.json' })
    expect(new TextDecoder().decode(read.bytes)).toBe('{"ok":true}')
    expect(read.artifact).toMatchObject({ name: 'out/summary.json', mediaType: 'application/json', size: 11 })
    const elsewhere = await snapshots.readArtifact({ threadId: 't-other', checkpointId: checkpoint!.checkpointId, name: 'out/summary.json' }).catch((error: unknown) => error)
    expect(SandboxSnapshotError.isInstance(elsewhere) && elsewhere.reason).toBe('checkpoint-not-found')
    const absent = await snapshots.readArtifact({ threadId: 't-art', checkpointId: checkpoint!.checkpointId, name: 'nope' }).catch((error: unknown) => error)
    expect(SandboxSnapshotError.isInstance(absent) && absent.reason).toBe('artifact-not-found')
  })

  it('secret values in workspace files are zeroed in the stored blobs', async () => {
    const secrets = createSecrets({ API_TOKEN: 'tok-portable-1234567' })
    const sandbox = defineSandbox({ id: 'snap-secret', provider, lifecycle: { reuse: 'none' }, workspace: defineWorkspace({ secrets }) })
    const persistence = createInMemorySandboxPersistence()
    const snapshots = createSandboxSnapshots({ persistence, sandbox })
    await runShell({ threadId: 't-secret', middleware: [withPersistence(persistence), withSandbox(sandbox, { snapshots })], command: 'printf "token=$API_TOKEN" > config.txt' })
    const checkpoint = await snapshots.latest('t-secret')
    const entry = checkpoint!.manifest.entries.find((e) => e.path === 'config.txt')
    const blob = await persistence.stores.blobs.get((entry as { sha256: string }).sha256)
    expect(Buffer.from(blob!).toString('latin1')).toBe(`token=${'\0'.repeat('tok-portable-1234567'.length)}`)
  })

  it('no stored blob and no stored message holds the secret in any form the agent could write it in: raw, base64, base64url, hex, URL-encoded, JSON-escaped, split across lines, UTF-16', async () => {
    const value = 'sk/pörtable+secret=1234567'
    const secrets = createSecrets({ DEPLOY_KEY: value })
    const sandbox = defineSandbox({ id: 'snap-secret-forms', provider, lifecycle: { reuse: 'none' }, workspace: defineWorkspace({ secrets }) })
    const persistence = createInMemorySandboxPersistence()
    const snapshots = createSandboxSnapshots({ persistence, sandbox })
    const forms = {
      raw: value,
      base64: Buffer.from(value).toString('base64'),
      base64url: Buffer.from(value).toString('base64url'),
      hex: Buffer.from(value).toString('hex'),
      url: encodeURIComponent(value),
      json: JSON.stringify(value).slice(1, -1),
    }
    // The agent writes each form from the secret it sees in its environment, in files and in a nested folder.
    const command = [
      'mkdir -p deep/er',
      'printf "%s" "$DEPLOY_KEY" > raw.txt',
      'printf "%s" "$DEPLOY_KEY" | base64 -w0 > deep/b64.txt',
      'printf "%s" "$DEPLOY_KEY" | base64 -w0 | tr "+/" "-_" | tr -d "=" > deep/er/b64url.txt',
      'printf "%s" "$DEPLOY_KEY" | od -An -tx1 | tr -d " \n" > hex.txt',
      `node -e 'process.stdout.write(encodeURIComponent(process.env.DEPLOY_KEY))' > url.txt`,
      `printf '{"key":"%s"}' "$DEPLOY_KEY" > config.json`,
      'printf "%s" "$DEPLOY_KEY" | fold -w 7 > folded.txt',
      'printf "%s" "$DEPLOY_KEY" | base64 -w0 | fold -w 8 > deep/wrapped.b64',
      `node -e 'process.stdout.write(Buffer.from(process.env.DEPLOY_KEY, "utf16le"))' > utf16.txt`,
      // And in its reply: the transcript stores what the run streamed, which withSandbox scrubbed.
      'echo "$DEPLOY_KEY"',
    ].join(' && ')
    const out = await runShell({ threadId: 't-forms', middleware: [withPersistence(persistence), withSandbox(sandbox, { snapshots })], command })
    expect(out.error).toBeUndefined()
    const checkpoint = await snapshots.latest('t-forms')
    const files = checkpoint!.manifest.entries.filter((entry): entry is typeof entry & { sha256: string } => entry.type === 'file')
    expect(files.map((f) => f.path)).toEqual(['config.json', 'deep/b64.txt', 'deep/er/b64url.txt', 'deep/wrapped.b64', 'folded.txt', 'hex.txt', 'raw.txt', 'url.txt', 'utf16.txt'])
    for (const file of files) {
      const bytes = Buffer.from((await persistence.stores.blobs.get(file.sha256))!)
      const text = bytes.toString('latin1')
      const unwrapped = text.replace(/\r?\n/g, '')
      for (const [form, encoded] of Object.entries(forms)) expect(unwrapped.includes(encoded), `${file.path} holds the secret ${form} (line breaks removed)`).toBe(false)
      expect(bytes.includes(Buffer.from(value, 'utf16le')), `${file.path} holds the secret as UTF-16`).toBe(false)
      expect(text.length, `${file.path} keeps its length (zeroed, not cut)`).toBeGreaterThan(0)
    }
    const transcript = JSON.stringify(await persistence.stores.messages.list('t-forms'))
    expect(transcript, 'the reply was stored, scrubbed').toContain('assistant')
    for (const [form, encoded] of Object.entries(forms)) expect(transcript.includes(encoded), `the stored transcript holds the secret ${form}`).toBe(false)
  })

  it('a capture that meets a symlink fails the run\'s end with a typed error naming it, and the previous checkpoint stays the latest', async () => {
    const sandbox = defineSandbox({ id: 'snap-symlink', provider, lifecycle: { reuse: 'none' } })
    const snapshots = await memorySandboxSnapshots({ sandbox })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })]
    await runShell({ threadId: 't-link', middleware, command: 'echo first > a.txt' })
    const head = await snapshots.latest('t-link')
    const failed = await runShell({ threadId: 't-link', middleware, command: 'echo second > a.txt && ln -s a.txt link.txt' }).then(
      (outcome) => outcome.error,
      (error: unknown) => error,
    )
    expect(SandboxSnapshotError.isInstance(failed) ? [failed.reason, failed.path] : failed, 'the run ends with the capture error').toEqual(['symlink', 'link.txt'])
    expect((await snapshots.latest('t-link'))?.checkpointId, 'the head did not move').toBe(head!.checkpointId)
    const next = await runShell({ threadId: 't-link', middleware, command: 'cat a.txt; ls' })
    expect(next.text, 'the next run starts from the previous checkpoint').toBe('first\na.txt\n')
    expect(await snapshots.persistence.stores.blobs.listUnreferenced(), 'nothing was put: the listing failed before any blob').toEqual([])
  })

  it('refuses to run without withPersistence(snapshots.persistence) before withSandbox, and while another writer holds the lease', async () => {
    const sandbox = defineSandbox({ id: 'snap-guards', provider, lifecycle: { reuse: 'none' } })
    const snapshots = await memorySandboxSnapshots({ sandbox })
    const failure = (promise: Promise<unknown>) => promise.then(() => expect.unreachable('the run must fail in setup'), (error: unknown) => error)
    const alone = await failure(runShell({ threadId: 't-guard', middleware: [withSandbox(sandbox, { snapshots })], command: 'true' }))
    expect(SandboxSnapshotError.isInstance(alone) && [alone.reason, alone.message]).toEqual(['persistence-missing', expect.stringMatching(/needs withPersistence\(snapshots\.persistence\)/)])
    const other = await failure(runShell({ threadId: 't-guard', middleware: [withPersistence(createInMemorySandboxPersistence()), withSandbox(sandbox, { snapshots })], command: 'true' }))
    expect(SandboxSnapshotError.isInstance(other) && [other.reason, other.message]).toEqual(['persistence-missing', expect.stringMatching(/another persistence value/)])

    const lease = await snapshots.persistence.stores.checkpoints.acquireLease('t-guard', { owner: 'another-host', ttlMs: 60_000 })
    const held = await failure(runShell({ threadId: 't-guard', middleware: [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })], command: 'true' }))
    expect(SandboxSnapshotError.isInstance(held) && held.reason).toBe('lease-held')
    await snapshots.persistence.stores.checkpoints.releaseLease(lease!)
    const after = await runShell({ threadId: 't-guard', middleware: [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })], command: 'echo ok' })
    expect(after.error).toBeUndefined()
    expect((await snapshots.list('t-guard')).length).toBe(1)
  })
})
