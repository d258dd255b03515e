/**
 * The journaled run loop inside Docker sandboxes (Debian image and BusyBox
 * sh), for Claude Code and Codex with this suite's fake CLIs mounted
 * read-only: an aborted request leaves the CLI running in its container and
 * an attach replays the container's journal, yielding exactly what the event
 * log lacks; a timeout stops the CLI by its run tag and deletes the journal.
 * The journal folder is one of this file's inside each container, so the
 * host can count every journal reader (`tail`) left. Afterwards no container,
 * tagged process or reader may remain.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, expect, it } from 'vitest'
import { defineSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { processesMatching } from '@testing/support/harness-run'
import { CLAUDE, CODEX, FAKE_BIN, killLeftovers, newTag, processesOf, waitFor, type Harness } from './helpers/harnesses.js'
import { detachAndAttach, drive, durabilityFor, fingerprints, journalGone, lastChunk, durableSandbox } from './helpers/journal-runs.js'

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `lifecycle-journal-docker-${randomUUID().slice(0, 8)}` }
/** Where the fake NDJSON CLIs appear inside every container. */
const BIN = '/opt/lifecycle-bin'
/** The journal folder inside every container of this file. */
const JOURNAL_DIR = `/tmp/lifecycle-journal-${RUN['tanstack-test.run'].slice(-8)}`
const reason = await dockerMissing([DEBIAN, BUSYBOX])

describeWithDocker('journaled runs in Docker sandboxes', reason, () => {
  const mounts = [{ source: FAKE_BIN, target: BIN, readOnly: true }]
  const providers = { Debian: dockerSandbox({ image: DEBIAN, labels: RUN, killGraceMs: 500, mounts }), BusyBox: dockerSandbox({ image: BUSYBOX, labels: RUN, killGraceMs: 500, mounts }) }
  const sandboxes: { sandbox: SandboxDefinition; threadId: string }[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  })

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
    expect(killLeftovers(), 'no CLI process, nor any child of one, is left').toEqual([])
    expect(processesMatching(JOURNAL_DIR), 'no journal reader (tail) nor agent shell is left').toEqual([])
  }, 120_000)

  function sandboxFor(image: keyof typeof providers, id: string): { sandbox: SandboxDefinition; threadId: string } {
    const entry = { sandbox: defineSandbox({ id, provider: providers[image], lifecycle: { snapshot: 'none' } }), threadId: `t-${id}` }
    sandboxes.push(entry)
    return entry
  }

  // Host 1 leaves after the slow turn's second step. On BusyBox, whose `tail -f` polls once a second, a loaded
  // machine once delivered that step only after the turn had ended, so no CLI was left to survive the abort; and once
  // (codex on Debian, ci13) the run timed out. detachAndAttach now holds the CLI at a gate until host 1 is gone.
  function fake(harness: Harness, scenario: string, extra: { timeoutMs?: number; env?: Record<string, string> } = {}): { tag: string; adapter: unknown } {
    const { tag, env } = newTag()
    const { env: more, ...rest } = extra
    return { tag, adapter: harness.adapter({ executable: `${BIN}/${harness.fake}`, env: { ...env, FAKE_SCENARIO: scenario, ...more }, exitGraceMs: 1000, ...rest }) }
  }

  const cases = (['Debian', 'BusyBox'] as const).flatMap((image) => [CLAUDE, CODEX].map((h) => [h.name, image, h] as const))

  it.each(cases)('%s on %s: the CLI survives an aborted request, and the attach yields exactly the chunks past what the log holds', async (name, image, harness) => {
    const { sandbox, threadId } = sandboxFor(image, `jrd-attach-${name}-${image.toLowerCase()}`)
    const runId = `attach-${name}-${randomUUID()}`
    const seen = await detachAndAttach({ sandbox, threadId, runId, journalDir: JOURNAL_DIR, fake: (env) => fake(harness, 'slow', env === undefined ? {} : { env }), processesOf, waitFor })
    const { reference, first, second } = seen

    expect(reference.thrown ?? first.thrown ?? second.thrown).toBeUndefined()
    expect(lastChunk(reference.chunks)?.type).toBe('RUN_FINISHED')
    expect(seen.referenceJournalGone).toBe(true)
    const k = first.chunks.length
    expect(k, 'host 1 left mid-run').toBeLessThan(reference.chunks.length - 3)
    expect(fingerprints(first.chunks)).toEqual(fingerprints(reference.chunks.slice(0, k)))
    expect(seen.aliveAfterAbort, 'the fake CLI survived the aborted request').toBeGreaterThan(0)
    expect(seen.journalGrew, 'its output went on landing in the journal').toBe(true)
    expect(seen.detachedRecord?.detachedSince, 'the detach is on the record').toBeTypeOf('number')
    expect(seen.detachedRecord?.sandboxKey).toBe(seen.sandboxKey)
    expect(seen.finalRecord?.detachedSince, 'the attach that finished the run cleared it').toBeUndefined()
    expect(fingerprints(second.chunks), 'the attach yields exactly the chunks past the K the log held').toEqual(fingerprints(reference.chunks.slice(k)))
    expect(fingerprints(seen.stored), 'log = prefix + remainder: no duplicate, no gap').toEqual(fingerprints(reference.chunks))
    expect(seen.journalGoneAfter).toBe(true)
    expect(seen.processesGoneAfter).toBe(true)
  })

  it.each(cases)('%s on %s: timeoutMs stops the journaled CLI by its run tag and deletes the journal', async (name, image, harness) => {
    const { sandbox, threadId } = sandboxFor(image, `jrd-timeout-${name}-${image.toLowerCase()}`)
    const { tag, adapter } = fake(harness, 'hang', { timeoutMs: 1500 })
    const runId = `timeout-${name}-${randomUUID()}`
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId, JOURNAL_DIR))], runId, threadId })
    expect(out.thrown).toBeUndefined()
    expect(lastChunk(out.chunks)?.code).toBe('timeout')
    expect(await waitFor(() => processesOf(tag).length === 0), `the hanging CLI is stopped: ${processesOf(tag)}`).toBe(true)
    const handle = await sandbox.ensure({ threadId, runId })
    expect(await waitFor(() => journalGone(handle, runId, JOURNAL_DIR)), 'its journal is deleted').toBe(true)
  })
})
