/**
 * Takeover end to end on local-process with the fake Claude Code CLI: host 1
 * runs a durable run through `toServerSentEventsResponse`, its client
 * disconnects and the host goes away mid-run (a detach: the sandbox and the
 * CLI stay); a GET through `resumeServerSentEventsResponse({ adapter,
 * driver: sandboxRunDriver(...) })` claims the run and drives it with
 * `withSandbox(..., { durability: { attach: true } })`. The transcript the
 * client assembles (before the disconnect + after the reconnect) equals an
 * uninterrupted run of the same turn: no duplicate, no gap.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chat, InMemoryRunStore, memoryStream, requestRunCancel, resumeServerSentEventsResponse, toServerSentEventsResponse, type StreamChunk } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { afterAll, describe, expect, it } from 'vitest'
import { journalPaths, memorySandboxSnapshots, sandboxRunDriver, withSandbox } from '@tanstack/ai-sandbox'
import { withPersistence } from '@tanstack/ai-sandbox/persistence'
import { processesMatching } from '@testing/support/harness-run'
import { isRunAcceptedMarker, readSseEvents, transcriptOf } from '@testing/support/sse-client'
import { CLAUDE, processesOf, waitFor, type Scenario } from './helpers/harnesses.js'
import { fingerprints, JOURNAL_MESSAGES, textOf } from './helpers/journal-runs.js'
import { localSuite } from './helpers/local-sandboxes.js'

const suite = localSuite('lifecycle-takeover')
const journalDir = mkdtempSync(join(tmpdir(), 'lifecycle-takeover-runs-'))
const journalGone = (runId: string): boolean => {
  const paths = journalPaths(runId, journalDir)
  return !existsSync(paths.journal) && !existsSync(paths.stderr)
}

afterAll(() => {
  const left = readdirSync(journalDir)
  rmSync(journalDir, { recursive: true, force: true })
  expect(left, 'every journal and .err sidecar is deleted').toEqual([])
  expect(processesMatching(journalDir), 'no journal reader nor agent shell is left').toEqual([])
})

/** The claim's signal mirrored onto the AbortController chat() takes (the spec's `controllerFor`). */
function controllerFor(signal: AbortSignal): AbortController {
  const controller = new AbortController()
  const abort = (): void => controller.abort(signal.reason)
  if (signal.aborted) abort()
  else signal.addEventListener('abort', abort, { once: true })
  return controller
}


/**
 * A control run, then host 1's durable run that its client and host leave mid-run; what a reconnecting client needs.
 * With `gate` (a file path), the CLI of the durable run waits before its fifth step until that file exists.
 */
async function detachedRun(name: string, gate?: string) {
  const { sandbox, threadId } = suite.sandbox(name)
  const runId = `${name}-${randomUUID()}`
  const fake = () => suite.fake(CLAUDE, 'slow' as Scenario, gate === undefined ? {} : { env: { FAKE_GATE: gate } })
  const run = (adapter: unknown, runs: InMemoryRunStore, abortController?: AbortController) =>
    chat({ adapter, messages: JOURNAL_MESSAGES, middleware: [withSandbox(sandbox, { runs, durability: { adapter: memoryStream({ runId }), journalDir } })], runId, threadId, ...(abortController ? { abortController } : {}) } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>

  // The control: the same turn, uninterrupted, over plain SSE (no log), never held at the gate.
  const control = (await readSseEvents(toServerSentEventsResponse(run(suite.fake(CLAUDE, 'slow' as Scenario).adapter, new InMemoryRunStore())).body!)).map((e) => e.chunk)
  expect(control.at(-1)?.type).toBe('RUN_FINISHED')
  expect(await waitFor(() => journalGone(runId))).toBe(true)

  // Host 1: a durable POST (one chunk per append, so the client sees each at once). Its client leaves after two messages, and the host goes away with it.
  const runs = new InMemoryRunStore()
  await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
  const host1 = new AbortController()
  const { tag, adapter } = fake()
  const post = new Request(`http://app.test/api/run?runId=${encodeURIComponent(runId)}`, { method: 'POST' })
  const response1 = toServerSentEventsResponse(run(adapter, runs, host1), { abortController: host1, durability: { adapter: memoryStream(post), batch: 1 } })
  let ends = 0
  const before = await readSseEvents(response1.body!, (e) => e.chunk.type === 'TEXT_MESSAGE_END' && ++ends === 2)
  host1.abort()
  expect(await waitFor(async () => (await runs.get(runId))?.detachedSince !== undefined), 'host 1 detached').toBe(true)
  expect(before.length, 'host 1 left mid-run').toBeLessThan(control.length - 3)
  expect(processesOf(tag).length, 'the CLI survived host 1').toBeGreaterThan(0)
  return { sandbox, threadId, runId, runs, control, before, lastId: before.at(-1)!.id!, fake, tag }
}

type Detached = Awaited<ReturnType<typeof detachedRun>>

/** The attach route: a GET from the client's last offset, with a driver that takes the run over. */
function attachRoute(run: Pick<Detached, 'sandbox' | 'runs' | 'runId' | 'lastId' | 'fake'>, locks: InMemoryLockStore, counters: { drives: number; background: Promise<unknown>[]; controllers?: AbortController[] }, extra: { attachWaitMs?: number; cancelPollMs?: number } = {}): Response {
  const { sandbox, runs, runId } = run
  const get = new Request(`http://app.test/api/run?runId=${encodeURIComponent(runId)}`, { headers: { 'Last-Event-ID': run.lastId } })
  return resumeServerSentEventsResponse({
    adapter: memoryStream(get),
    driver: sandboxRunDriver({
      request: get,
      runs,
      locks,
      durability: () => memoryStream(get),
      drive: (input) => {
        counters.drives++
        const abortController = controllerFor(input.signal)
        counters.controllers?.push(abortController)
        return chat({ adapter: run.fake().adapter, messages: JOURNAL_MESSAGES, middleware: [withSandbox(sandbox, { runs, durability: { adapter: memoryStream({ runId: input.runId }), attach: true, journalDir, ...extra } })], runId: input.runId, threadId: input.threadId, abortController } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
      },
      fenceQuietMs: 300,
      waitUntil: (p) => void counters.background.push(p),
    }),
  })
}


describe('takeover through sandboxRunDriver (claude-code, local-process)', () => {
  it('a detached run is taken over by a GET with a driver: the client transcript has no duplicate and no gap', async () => {
    const run = await detachedRun('takeover-one')
    const counters = { drives: 0, background: [] as Promise<unknown>[] }
    const after = await readSseEvents(attachRoute(run, new InMemoryLockStore(), counters).body!)
    await Promise.all(counters.background)

    const transcript = transcriptOf(run.before, after)
    expect(counters.drives).toBe(1)
    expect(fingerprints(transcript), 'before + after = the control run: no duplicate, no gap').toEqual(fingerprints(run.control))
    expect(textOf(transcript)).toBe(textOf(run.control))
    expect(await run.runs.get(run.runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
    expect((await run.runs.get(run.runId))?.detachedSince).toBeUndefined()
    expect(await waitFor(() => journalGone(run.runId)), 'the takeover read the sentinel and deleted the journal').toBe(true)
    expect(await waitFor(() => processesOf(run.tag).length === 0)).toBe(true)
  })

  it("the takeover's file.changed diffs are the whole run's change, from the run's start, also for what the agent wrote before the takeover", async () => {
    const { sandbox, threadId } = suite.sandbox('takeover-files')
    const runId = `takeover-files-${randomUUID()}`
    const fake = () => suite.fake(CLAUDE, 'slow' as Scenario, { env: { FAKE_WRITE: '1' } })
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
    const host1 = new AbortController()
    const first = fake()
    const post = new Request(`http://app.test/api/run?runId=${encodeURIComponent(runId)}`, { method: 'POST' })
    const stream = chat({ adapter: first.adapter, messages: JOURNAL_MESSAGES, middleware: [withSandbox(sandbox, { runs, durability: { adapter: memoryStream({ runId }), journalDir } })], runId, threadId, abortController: host1 } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
    let ends = 0
    const before = await readSseEvents(toServerSentEventsResponse(stream, { abortController: host1, durability: { adapter: memoryStream(post), batch: 1 } }).body!, (e) => e.chunk.type === 'TEXT_MESSAGE_END' && ++ends === 2)
    host1.abort()
    expect(await waitFor(async () => (await runs.get(runId))?.detachedSince !== undefined), 'host 1 detached').toBe(true)
    const baselines = () => readdirSync(journalDir).filter((name) => name.startsWith('baseline-'))
    expect(baselines(), "the run's start is kept for the takeover").toHaveLength(1)

    const counters = { drives: 0, background: [] as Promise<unknown>[] }
    const after = await readSseEvents(attachRoute({ sandbox, runs, runId, lastId: before.at(-1)!.id!, fake }, new InMemoryLockStore(), counters).body!)
    await Promise.all(counters.background)
    expect(counters.drives).toBe(1)
    const transcript = transcriptOf(before, after)
    const custom = (name: string) => transcript.flatMap((c) => (c.type === 'CUSTOM' && c.name === name ? [c.value as { path: string; diff: string }] : []))
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
    const steps = [1, 2, 3, 4, 5, 6]
    const changed = custom('file.changed')
    const name = (path: string) => path.slice(path.lastIndexOf('/') + 1)
    expect(changed.map((c) => name(c.path)), 'every file of the run, once, also those written before the takeover').toEqual(steps.map((i) => `step-${i}.txt`))
    for (const [i, change] of changed.entries()) expect(change.diff, 'an add-patch against the start').toBe(`diff --git a/step-${i + 1}.txt b/step-${i + 1}.txt\n--- /dev/null\n+++ b/step-${i + 1}.txt\n@@ -0,0 +1 @@\n+Step ${i + 1} of a slow turn.\n`)
    const fileEvents = (events: readonly { chunk: StreamChunk }[]) => events.flatMap((e) => (e.chunk.type === 'CUSTOM' && e.chunk.name === 'sandbox.file' ? [`${(e.chunk.value as { type: string }).type} ${name((e.chunk.value as { path: string }).path)}`] : []))
    expect(fileEvents(before), 'host 1 saw the first write before it left').toContain('create step-1.txt')
    // The writes while no host watched (after host 1 left, before the takeover's watcher) come as events at the takeover's start.
    const all = fileEvents([...before, ...after])
    for (const i of steps) expect(all, `a create event for step-${i}.txt`).toContain(`create step-${i}.txt`)
    expect(baselines(), "the run's end removes its baseline").toEqual([])
    expect(await waitFor(() => journalGone(runId))).toBe(true)
  })

  it('with portable snapshots: the host that detaches gives the thread\'s lease up and writes no checkpoint; the takeover writes the whole run\'s', async () => {
    const { sandbox, threadId } = suite.sandbox('takeover-snapshots')
    const runId = `takeover-snapshots-${randomUUID()}`
    const snapshots = await memorySandboxSnapshots({ sandbox })
    const fake = () => suite.fake(CLAUDE, 'slow' as Scenario, { env: { FAKE_WRITE: '1' } })
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
    const host1 = new AbortController()
    const post = new Request(`http://app.test/api/run?runId=${encodeURIComponent(runId)}`, { method: 'POST' })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { runs, durability: { adapter: memoryStream({ runId }), journalDir }, snapshots })]
    const stream = chat({ adapter: fake().adapter, messages: JOURNAL_MESSAGES, middleware, runId, threadId, abortController: host1 } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
    let ends = 0
    const before = await readSseEvents(toServerSentEventsResponse(stream, { abortController: host1, durability: { adapter: memoryStream(post), batch: 1 } }).body!, (e) => e.chunk.type === 'TEXT_MESSAGE_END' && ++ends === 2)
    host1.abort()
    expect(await waitFor(async () => (await runs.get(runId))?.detachedSince !== undefined), 'host 1 detached').toBe(true)
    const probe = async () => {
      const lease = await snapshots.persistence.stores.checkpoints.acquireLease(threadId, { owner: 'probe', ttlMs: 1_000 })
      if (lease) await snapshots.persistence.stores.checkpoints.releaseLease(lease)
      return lease !== null
    }
    expect(await waitFor(probe), "the detached host released the thread's writer lease").toBe(true)
    expect(await snapshots.list(threadId), 'a detach writes no checkpoint').toEqual([])

    const counters = { drives: 0, background: [] as Promise<unknown>[] }
    const get = new Request(`http://app.test/api/run?runId=${encodeURIComponent(runId)}`, { headers: { 'Last-Event-ID': before.at(-1)!.id! } })
    const after = await readSseEvents(
      resumeServerSentEventsResponse({
        adapter: memoryStream(get),
        driver: sandboxRunDriver({
          request: get,
          runs,
          locks: new InMemoryLockStore(),
          durability: () => memoryStream(get),
          drive: (input) => {
            counters.drives++
            const attached = [withPersistence(snapshots.persistence), withSandbox(sandbox, { runs, durability: { adapter: memoryStream({ runId: input.runId }), attach: true, journalDir }, snapshots })]
            return chat({ adapter: fake().adapter, messages: JOURNAL_MESSAGES, middleware: attached, runId: input.runId, threadId: input.threadId, abortController: controllerFor(input.signal) } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
          },
          fenceQuietMs: 300,
          waitUntil: (p) => void counters.background.push(p),
        }),
      }).body!,
    )
    await Promise.all(counters.background)
    expect(counters.drives).toBe(1)
    expect(after.at(-1)?.chunk.type).toBe('RUN_FINISHED')
    const checkpoints = await snapshots.list(threadId)
    expect(checkpoints.map((c) => [c.kind, c.runId]), 'the takeover wrote the run\'s one checkpoint').toEqual([['run', runId]])
    const stored = checkpoints[0]!.manifest.entries.map((e) => e.path).filter((path) => path.startsWith('step-'))
    expect(stored, 'it holds what the agent wrote before and after the takeover').toEqual([1, 2, 3, 4, 5, 6].map((i) => `step-${i}.txt`))
    expect(await probe(), 'the takeover released the lease at its end').toBe(true)
    expect(await waitFor(() => journalGone(runId))).toBe(true)
  })

  it('the host driving a takeover goes away too (its chat() aborted without a cancel): the run detaches again, stays running with its log open, and a second takeover finishes it', async () => {
    // The CLI waits before its fifth step until the test opens the gate, after takeover 1 is gone: however late a loaded
    // machine starts takeover 1 (its claim waits out a 300 ms fence), the run cannot finish while it drives.
    const gate = join(journalDir, 'gate-takeover-twice')
    const run = await detachedRun('takeover-twice', gate)
    // Takeover 1: its host aborts the chat() it drives (a server shutting down), with no cancel, after two more messages.
    const first = { drives: 0, background: [] as Promise<unknown>[], controllers: [] as AbortController[] }
    let ends = 0
    let cliAtAbort = 0
    // The client stops reading there too: the log stays open (the run goes on), so its response would never end.
    const middle = await readSseEvents(attachRoute(run, new InMemoryLockStore(), first).body!, (e) => {
      if (e.chunk.type !== 'TEXT_MESSAGE_END' || ++ends !== 2) return false
      cliAtAbort = processesOf(run.tag).length
      first.controllers[0]!.abort()
      return true
    })
    await Promise.all(first.background)
    expect(first.drives).toBe(1)
    const record = await run.runs.get(run.runId)
    expect(record?.status, 'a detach is no verdict on the run').toBe('running')
    expect(record?.detachedSince).toBeDefined()
    expect(middle.filter((e) => e.chunk.type === 'RUN_ERROR'), 'no RUN_ERROR reached the log').toEqual([])
    expect(cliAtAbort, 'the CLI was still running when its host left').toBeGreaterThan(0)

    // Takeover 2, from the last event the client saw; the CLI goes on from step 5.
    writeFileSync(gate, '')
    const second = { drives: 0, background: [] as Promise<unknown>[] }
    const after = await readSseEvents(attachRoute({ ...run, lastId: (middle.at(-1) ?? { id: run.lastId }).id! }, new InMemoryLockStore(), second).body!)
    await Promise.all(second.background)
    expect(second.drives).toBe(1)
    expect(fingerprints(transcriptOf(run.before, middle, after)), 'before + middle + after = the control run').toEqual(fingerprints(run.control))
    expect(await run.runs.get(run.runId)).toMatchObject({ status: 'completed', driverEpoch: 2 })
    expect(await waitFor(() => journalGone(run.runId))).toBe(true)
    expect(await waitFor(() => processesOf(run.tag).length === 0)).toBe(true)
    rmSync(gate)
  })

  it('three clients reconnect at once: exactly one drives, each sees the run once', async () => {
    const run = await detachedRun('takeover-three')
    const locks = new InMemoryLockStore()
    const counters = { drives: 0, background: [] as Promise<unknown>[] }
    const afters = await Promise.all([0, 1, 2].map(() => readSseEvents(attachRoute(run, locks, counters).body!)))
    await Promise.all(counters.background)

    expect(counters.drives).toBe(1)
    for (const after of afters) expect(fingerprints(transcriptOf(run.before, after))).toEqual(fingerprints(run.control))
    expect(await run.runs.get(run.runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
    expect(await waitFor(() => journalGone(run.runId))).toBe(true)
    expect(await waitFor(() => processesOf(run.tag).length === 0)).toBe(true)
  })

  it('a run whose host went away during setup (no agent, no journal) is started fresh by the takeover: the transcript equals the control', async () => {
    // Host 1's client leaves while the sandbox is set up: after ensure(), before the agent is launched (the onReady hook).
    let leave: (() => void) | undefined
    const { sandbox, threadId } = suite.sandbox('takeover-boot', { hooks: { onReady: () => leave?.() } })
    const runId = `takeover-boot-${randomUUID()}`
    const fake = () => suite.fake(CLAUDE, 'slow' as Scenario)
    const run = (adapter: unknown, runs: InMemoryRunStore, abortController?: AbortController) =>
      chat({ adapter, messages: JOURNAL_MESSAGES, middleware: [withSandbox(sandbox, { runs, durability: { adapter: memoryStream({ runId }), journalDir } })], runId, threadId, ...(abortController ? { abortController } : {}) } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
    const control = (await readSseEvents(toServerSentEventsResponse(run(fake().adapter, new InMemoryRunStore())).body!)).map((e) => e.chunk)
    expect(await waitFor(() => journalGone(runId))).toBe(true)

    // Host 1 accepts the run; its client has the run.accepted marker when it leaves.
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
    const host1 = new AbortController()
    const first = fake()
    const post = new Request(`http://app.test/api/run?runId=${encodeURIComponent(runId)}`, { method: 'POST' })
    const body = toServerSentEventsResponse(run(first.adapter, runs, host1), { abortController: host1, durability: { adapter: memoryStream(post), batch: 1 } }).body!
    const left = new Promise<void>((resolve) => (leave = () => (host1.abort(), resolve())))
    const before = await readSseEvents(body, (e) => isRunAcceptedMarker(e.chunk))
    await left
    leave = undefined
    expect(await waitFor(async () => (await runs.get(runId))?.detachedSince !== undefined), 'host 1 detached during setup').toBe(true)
    expect(processesOf(first.tag), 'host 1 never launched its agent').toEqual([])
    expect(journalGone(runId), 'so there is no journal to attach to').toBe(true)

    const counters = { drives: 0, background: [] as Promise<unknown>[] }
    const after = await readSseEvents(attachRoute({ sandbox, runs, runId, lastId: before.at(-1)!.id!, fake }, new InMemoryLockStore(), counters, { attachWaitMs: 500 }).body!)
    await Promise.all(counters.background)
    expect(counters.drives).toBe(1)
    expect(fingerprints(transcriptOf(before, after)), 'the fresh start delivers the whole run once').toEqual(fingerprints(control))
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
    expect(await waitFor(() => journalGone(runId))).toBe(true)
  })

  it('a cancel recorded on another host stops the run a takeover drives, within one poll: record aborted, sandbox and CLI gone', async () => {
    const run = await detachedRun('takeover-cancel')
    const counters = { drives: 0, background: [] as Promise<unknown>[] }
    let cancelledAt = 0
    const after = await readSseEvents(attachRoute(run, new InMemoryLockStore(), counters, { cancelPollMs: 100 }).body!, (e) => {
      // The driver delivers past the stored log: the takeover is driving. Now "another host" records the cancel.
      if (cancelledAt === 0 && e.chunk.type === 'TEXT_MESSAGE_CONTENT') {
        cancelledAt = Date.now()
        void requestRunCancel(run.runs, run.runId)
      }
      return false
    })
    await Promise.all(counters.background)
    const record = await run.runs.get(run.runId)
    expect(cancelledAt, 'the takeover delivered new text before the cancel').toBeGreaterThan(0)
    expect(record).toMatchObject({ status: 'aborted', cancelRequested: true, driverEpoch: 1 })
    expect(after.at(-1)?.chunk.type, 'the stream ends with a terminal chunk').toBe('RUN_ERROR')
    expect(transcriptOf(run.before, after).filter((c) => c.type === 'RUN_FINISHED' && (c as { finishReason?: string }).finishReason !== 'tool_calls'), 'the run did not finish').toHaveLength(0)
    expect(await waitFor(() => processesOf(run.tag).length === 0), 'the CLI is gone').toBe(true)
    expect(await run.sandbox.fallbackInstances.get(run.sandbox.key({ threadId: run.threadId, runId: run.runId })), 'the sandbox is destroyed').toBeNull()
    expect(await waitFor(() => journalGone(run.runId))).toBe(true)
  })
})
