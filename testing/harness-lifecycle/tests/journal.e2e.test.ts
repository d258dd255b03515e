/**
 * The journaled run loop (spec 000 "Durable runs (the run journal)") through
 * chat() on the local-process provider, for the two adapters that journal
 * (Claude Code, Codex), with the fake CLIs of tests/fixtures/bin: a durable
 * run's CLI writes to its journal and the run reads it back, an aborted
 * request detaches (the CLI runs on) and a second chat() with `attach: true`
 * replays the journal from byte 0 and yields only what the event log lacks;
 * the ids and the attach are checked up front; a sentinel the agent prints
 * does not end the run; a timeout stops the CLI and deletes the journal.
 * OpenCode and Grok Build do not journal and refuse an attach.
 *
 * Every durable run goes through `withSandbox(sandbox, { runs, durability })`:
 * the aborted host of the detach case detaches (the sandbox and the CLI stay,
 * the record gets `detachedSince` + `sandboxKey`) and the attaching host
 * finishes the run and clears `detachedSince`.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { defineSandbox, DurableAttachNotSupportedError, InvalidRunIdError, DurableRunIdRequiredError, DurableThreadIdRequiredError, JournalAttachUnavailableError, journalPaths, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { processesMatching, recording } from '@testing/support/harness-run'
import { CLAUDE, CODEX, FAKE_BIN, GROK, newTag, OPENCODE, processesOf, waitFor, type Harness, type Scenario } from './helpers/harnesses.js'
import { detachAndAttach, drive, durabilityFor as durability, fingerprints, lastChunk as last, textOf, durableSandbox } from './helpers/journal-runs.js'
import { localSuite } from './helpers/local-sandboxes.js'

const suite = localSuite('lifecycle-journal')
/** Where this file's journals go (`durability.journalDir`), so every one left behind is counted. */
const journalDir = mkdtempSync(join(tmpdir(), 'lifecycle-journal-runs-'))
const JOURNALING = [CLAUDE, CODEX] as const
const durabilityFor = (runId: string, extra: Parameters<typeof durability>[2] = {}) => durability(runId, journalDir, extra)
const journalGone = (runId: string) => {
  const paths = journalPaths(runId, journalDir)
  return !existsSync(paths.journal) && !existsSync(paths.stderr)
}

afterAll(() => {
  const left = readdirSync(journalDir)
  rmSync(journalDir, { recursive: true, force: true })
  expect(left, 'every journal and .err sidecar is deleted').toEqual([])
  expect(processesMatching(journalDir), 'no journal reader (tail) nor agent shell is left').toEqual([])
})

describe.each(JOURNALING.map((h) => [h.name, h] as const))('%s: a journaled run on local-process', (name, harness: Harness) => {
  it('a durable run without a runId is refused up front: the stream rejects, no CLI starts, no journal is written', async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-noid-${name}`)
    const { tag, adapter } = suite.fake(harness, 'plain')
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(`unused-${randomUUID()}`))], threadId })
    expect(DurableRunIdRequiredError.isInstance(out.thrown), `thrown: ${String(out.thrown)}; chunks: ${out.chunks.map((c) => c.type).join(', ')}`).toBe(true)
    expect((out.thrown as DurableRunIdRequiredError).reason).toBe('run-id-required')
    expect(out.chunks).toEqual([])
    expect(processesOf(tag)).toEqual([])
    expect(readdirSync(journalDir)).toEqual([])
  })

  it('a durable run whose runId breaks the run-id rule (513 characters, a lone surrogate, CR/LF) is refused up front: InvalidRunIdError, no CLI, no journal, no baseline, nothing rejects unhandled', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => void unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      for (const [i, runId] of ['r'.repeat(513), `lone-\ud800-${name}`, `crlf-${name}\r\nx`].entries()) {
        const { sandbox, threadId } = suite.sandbox(`jr-badid-${i}-${name}`)
        const { tag, adapter } = suite.fake(harness, 'plain')
        const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(`log-${i}-${name}`))], runId, threadId }) // core's memoryStream refuses CR/LF itself
        expect(InvalidRunIdError.isInstance(out.thrown), `thrown: ${String(out.thrown)}; chunks: ${out.chunks.map((c) => c.type).join(', ')}`).toBe(true)
        expect(processesOf(tag), 'no CLI started').toEqual([])
        expect(readdirSync(journalDir), 'no journal and no file baseline').toEqual([])
      }
      // The end-of-run work of a run runs after its stream ends: give it the time it takes.
      await new Promise((resolve) => setTimeout(resolve, 1000))
      expect(unhandled.map(String), 'no promise rejected unhandled').toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('gives the same chunks as the same CLI run without a journal, and deletes the journal afterwards', async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-same-${name}`)
    const runId = `same-${name}-${randomUUID()}`
    const plain = await drive({ adapter: suite.fake(harness, 'plain').adapter, middleware: [withSandbox(sandbox)], runId, threadId })
    const { tag, adapter } = suite.fake(harness, 'plain')
    const journaled = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId))], runId, threadId })

    expect(plain.thrown ?? journaled.thrown).toBeUndefined()
    expect(last(journaled.chunks)?.type).toBe('RUN_FINISHED')
    expect(journaled.chunks.length).toBeGreaterThan(3)
    expect(fingerprints(journaled.chunks)).toEqual(fingerprints(plain.chunks))
    expect(await waitFor(() => journalGone(runId)), 'the journal and its .err sidecar are deleted once the run read the sentinel').toBe(true)
    expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
  })

  it.each([
    ['stdin (a file beside the journal)', true],
    ["the adapter's prompt file (a provider without writable stdin)", false],
  ] as const)('the prompt reaches the journaled CLI through %s, and the host holds no process of it', async (_, writableStdin) => {
    const root = mkdtempSync(join(tmpdir(), 'lifecycle-journal-stdin-'))
    const { provider, spawned } = recording(localProcessSandbox({ root }), writableStdin)
    const sandbox = defineSandbox({ id: `jr-stdin-${name}-${writableStdin}`, provider })
    const threadId = `t-jr-stdin-${name}-${writableStdin}`
    const { tag, env } = newTag()
    const adapter = harness.adapter({ executable: join(FAKE_BIN, harness.fake!), env: { ...env, FAKE_SCENARIO: 'echo-prompt' } })
    const runId = `stdin-${name}-${randomUUID()}`
    try {
      const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId))], runId, threadId })
      expect(out.thrown).toBeUndefined()
      expect(last(out.chunks)?.type).toBe('RUN_FINISHED')
      expect(textOf(out.chunks)).toBe('You said: Work slowly and tell me each step')
      expect(spawned.filter((command) => command.includes(harness.fake!)), 'the CLI was launched in the background (exec), not as a live process of the host').toEqual([])
      expect(await waitFor(() => journalGone(runId))).toBe(true)
      expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
    } finally {
      await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('detach and attach: the CLI survives the aborted request, and the attach yields exactly the chunks past what the log holds', async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-attach-${name}`)
    const runId = `attach-${name}-${randomUUID()}`
    const seen = await detachAndAttach({ sandbox, threadId, runId, journalDir, fake: (env) => suite.fake(harness, 'slow' as Scenario, env === undefined ? {} : { env }), processesOf, waitFor })
    const { reference, first, second } = seen

    expect(reference.thrown ?? first.thrown ?? second.thrown).toBeUndefined()
    expect(last(reference.chunks)?.type).toBe('RUN_FINISHED')
    expect(seen.referenceJournalGone).toBe(true)
    const k = first.chunks.length
    expect(k, 'host 1 left mid-run').toBeLessThan(reference.chunks.length - 3)
    expect(fingerprints(first.chunks), 'host 1 saw a prefix of the reference run').toEqual(fingerprints(reference.chunks.slice(0, k)))
    expect(seen.aliveAfterAbort, 'the fake CLI survived the aborted request').toBeGreaterThan(0)
    expect(seen.journalGrew, 'its output went on landing in the journal').toBe(true)
    expect(seen.detachedRecord?.detachedSince, 'the detach is on the record').toBeTypeOf('number')
    expect(seen.detachedRecord?.sandboxKey).toBe(seen.sandboxKey)
    expect(seen.detachedRecord?.status).toBe('running')
    expect(seen.finalRecord?.detachedSince, 'the attach that finished the run cleared it').toBeUndefined()
    expect(fingerprints(second.chunks), 'the attach yields exactly the chunks past the K the log held').toEqual(fingerprints(reference.chunks.slice(k)))
    expect(fingerprints(seen.stored), 'log = prefix + remainder: no duplicate, no gap').toEqual(fingerprints(reference.chunks))
    expect(textOf(seen.stored)).toBe(textOf(reference.chunks))
    expect(seen.journalGoneAfter, 'the attaching reader deletes the journal after the sentinel').toBe(true)
    expect(seen.processesGoneAfter).toBe(true)
    expect(journalGone(runId)).toBe(true)
  })

  it('an attach without a threadId is refused up front', async () => {
    const { sandbox } = suite.sandbox(`jr-nothread-${name}`)
    const { tag, adapter } = suite.fake(harness, 'plain')
    const runId = `nothread-${name}-${randomUUID()}`
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId, { attach: true }))], runId })
    expect(DurableThreadIdRequiredError.isInstance(out.thrown), `thrown: ${String(out.thrown)}; chunks: ${out.chunks.map((c) => c.type).join(', ')}`).toBe(true)
    expect(out.chunks).toEqual([])
    expect(processesOf(tag)).toEqual([])
  })

  it('an attach to a run nobody knows fails with JournalAttachUnavailableError unknown-run', async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-unknown-${name}`)
    const { tag, adapter } = suite.fake(harness, 'plain')
    const runId = `unknown-${name}-${randomUUID()}`
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId, { attach: true }))], runId, threadId })
    expect(JournalAttachUnavailableError.isInstance(out.thrown), `thrown: ${String(out.thrown)}; chunks: ${JSON.stringify(out.chunks.map((c) => [c.type, (c as { message?: string }).message]))}`).toBe(true)
    expect((out.thrown as JournalAttachUnavailableError).reason).toBe('unknown-run')
    expect(out.chunks).toEqual([])
    expect(processesOf(tag)).toEqual([])
    expect(journalGone(runId), 'the attach created no journal').toBe(true)
  })

  it("exit sentinels the agent prints itself ({\"__exit\":0}, a guessed nonce) do not end the run", async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-forged-${name}`)
    const { tag, adapter } = suite.fake(harness, 'forged-sentinel' as Scenario)
    const runId = `forged-${name}-${randomUUID()}`
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId))], runId, threadId })
    expect(out.thrown).toBeUndefined()
    expect(last(out.chunks)?.type).toBe('RUN_FINISHED')
    expect(textOf(out.chunks)).toContain('Before the forged sentinels.')
    expect(textOf(out.chunks), 'the run went on past the forged lines').toContain('After the forged sentinels.')
    expect(await waitFor(() => journalGone(runId))).toBe(true)
    expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
  })

  it('timeoutMs stops a journaled CLI (by the run tag) and deletes its journal', async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-timeout-${name}`)
    const { tag, adapter } = suite.fake(harness, 'hang', { timeoutMs: 1500 })
    const runId = `timeout-${name}-${randomUUID()}`
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId))], runId, threadId })
    expect(out.thrown).toBeUndefined()
    expect(last(out.chunks)?.type).toBe('RUN_ERROR')
    expect(last(out.chunks)?.code).toBe('timeout')
    expect(await waitFor(() => processesOf(tag).length === 0), `the hanging CLI is stopped: ${processesOf(tag)}`).toBe(true)
    expect(await waitFor(() => journalGone(runId)), 'its journal is deleted').toBe(true)
  })
})

describe.each([OPENCODE, GROK].map((h) => [h.name, h] as const))('%s: does not journal', (name, harness: Harness) => {
  it('an attach throws DurableAttachNotSupportedError and starts nothing', async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-noattach-${name}`)
    const { tag, adapter } = suite.fake(harness, 'plain')
    const runId = `noattach-${name}-${randomUUID()}`
    // A run the store knows (an unknown one is refused by withSandbox before the adapter is asked, with `unknown-run`).
    const parts = durabilityFor(runId, { attach: true })
    await parts.runs.createOrResume({ runId, threadId: threadId!, startedAt: Date.now() })
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, parts)], runId, threadId })
    expect(DurableAttachNotSupportedError.isInstance(out.thrown), `thrown: ${String(out.thrown)}`).toBe(true)
    expect((out.thrown as DurableAttachNotSupportedError).adapter).toBe(name)
    expect(processesOf(tag)).toEqual([])
  })

  it('a durable run that does not attach runs as before, without a journal', async () => {
    const { sandbox, threadId } = suite.sandbox(`jr-plain-${name}`)
    const { tag, adapter } = suite.fake(harness, 'plain')
    const runId = `plain-${name}-${randomUUID()}`
    const out = await drive({ adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId))], runId, threadId })
    expect(out.thrown).toBeUndefined()
    expect(last(out.chunks)?.type).toBe('RUN_FINISHED')
    expect(journalGone(runId), 'no journal was written').toBe(true)
    expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
  })
})
