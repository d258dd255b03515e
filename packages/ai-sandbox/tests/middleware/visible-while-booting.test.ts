/**
 * Issue 29 item 4 (spec 002: "Two more things were invisible for the whole
 * of `ensure` … both fixed by doing them before it"): a durable run is
 * visible while its sandbox boots, with no record created by the app. While
 * the provider's `create` is held: the run's record exists and is the
 * thread's active run, the persistence layer was asked to store the user's
 * turn (`PendingTurnCapability`), a Stop from another host
 * (`requestRunCancel` found through `findActiveRun`) ends the run `aborted`
 * before the agent starts, and a disconnect through the durable transport
 * stamps `detachedSince` and `sandboxKey` on a record that exists, so the
 * reaper can list it. A
 * pending-turn store that fails does not stop the run.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { chat, defineChatMiddleware, InMemoryRunStore, memoryStream, requestRunCancel, toServerSentEventsResponse, type StreamChunk } from '@tanstack/ai'
import { PendingTurnCapability, providePendingTurn } from '@tanstack/ai/adapter-internals'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { declareHarnessPromptLimit, PromptTooLargeError, SandboxConfigError, SandboxError, withSandbox, type SandboxProvider } from '../../src/index.js'
import { agentAdapter, alive, chatOptions, drive, sandboxLab, waitFor, warnings } from './durability-helpers.js'

vi.setConfig({ testTimeout: 15_000 })

/** A lab whose provider's `create` waits for `letGo()`; `inCreate` resolves when it is called. */
function slowLab(name: string) {
  let creating!: () => void
  const inCreate = new Promise<void>((resolve) => (creating = resolve))
  let letGo!: () => void
  const gate = new Promise<void>((resolve) => (letGo = resolve))
  const lab = sandboxLab(name, (provider: SandboxProvider): SandboxProvider => ({
    ...provider,
    create: async (input) => {
      creating()
      await gate
      return provider.create(input)
    },
  }))
  return { lab, inCreate, letGo }
}

/** What an app's persistence middleware offers: store the pending turn now. */
function pendingTurn(onSnapshot: () => Promise<void>) {
  return defineChatMiddleware({
    name: 'persistence-stand-in',
    provides: [PendingTurnCapability],
    setup(ctx) {
      providePendingTurn(ctx, { snapshot: onSnapshot })
    },
  })
}

const labs: ReturnType<typeof sandboxLab>[] = []
const started: number[] = []
afterEach(async () => {
  for (const lab of labs.splice(0)) expect(await lab.cleanup(), 'no sandbox directory is left').toEqual([])
  expect(await waitFor(() => started.every((pid) => !alive(pid))), 'no agent process is left').toBe(true)
  started.length = 0
})

describe('a durable run is visible while its sandbox boots', () => {
  it('has a record (the thread active run) and a stored user turn before ensure, with no record created by the app', async () => {
    const { lab, inCreate, letGo } = slowLab('visible-boot')
    labs.push(lab)
    const runs = new InMemoryRunStore()
    const [runId, threadId] = ['run-visible-boot', 'thread-visible-boot']
    let snapshots = 0
    const agent = agentAdapter({ turns: ['text'] })
    const running = drive({
      adapter: agent.adapter,
      middleware: [pendingTurn(async () => void snapshots++), withSandbox(lab.sandbox('visible-boot'), { runs, durability: { adapter: memoryStream({ runId }) } })],
      runId,
      threadId,
      logger: warnings().logger,
    })
    await inCreate
    expect(await runs.get(runId), 'the record exists while the sandbox boots').toMatchObject({ runId, threadId, status: 'running' })
    expect((await runs.findActiveRun(threadId))?.runId, 'findActiveRun sees the starting run').toBe(runId)
    expect(snapshots, "the user's turn was stored before ensure").toBe(1)
    letGo()
    const { chunks } = await running
    expect(chunks.at(-1)?.type).toBe('RUN_FINISHED')
    expect(await runs.get(runId)).toMatchObject({ status: 'completed' })
  })

  it('a Stop found through findActiveRun during the boot ends the run aborted before the agent starts', async () => {
    const { lab, inCreate, letGo } = slowLab('stop-in-boot')
    labs.push(lab)
    const runs = new InMemoryRunStore()
    const [runId, threadId] = ['run-stop-in-boot', 'thread-stop-in-boot']
    const agent = agentAdapter({ turns: ['text'] })
    const running = drive({ adapter: agent.adapter, middleware: [withSandbox(lab.sandbox('stop-in-boot'), { runs, durability: { adapter: memoryStream({ runId }), cancelPollMs: 50 } })], runId, threadId, logger: warnings().logger })
    await inCreate
    // The cancel route on another host: it has no controller of this run, only the store.
    const active = await runs.findActiveRun(threadId)
    expect(active?.runId).toBe(runId)
    await requestRunCancel(runs, active!.runId)
    letGo()
    await running
    expect(await runs.get(runId), 'the run ended aborted').toMatchObject({ status: 'aborted', cancelRequested: true })
  })

  it('a disconnect through the durable transport during the boot stamps detachedSince and sandboxKey on the record', async () => {
    const { lab, inCreate, letGo } = slowLab('detach-in-boot')
    labs.push(lab)
    const runs = new InMemoryRunStore()
    const [runId, threadId] = ['run-detach-in-boot', 'thread-detach-in-boot']
    const log = memoryStream({ runId })
    const agent = agentAdapter({ turns: ['text'], holdTurn: 1 })
    const controller = new AbortController()
    const stream = chat(chatOptions({ adapter: agent.adapter, middleware: [withSandbox(lab.sandbox('detach-in-boot'), { runs, durability: { adapter: log } })], runId, threadId, abortController: controller, logger: warnings().logger }))
    const response = toServerSentEventsResponse(stream as AsyncIterable<StreamChunk>, { abortController: controller, durability: { adapter: log, batch: 1 } })
    const reader = response.body!.getReader()
    void reader.read()
    await inCreate
    await reader.cancel() // the tab closed while the sandbox was being created
    letGo()
    expect(await waitFor(() => agent.calls() === 1), 'the run went on: the agent started').toBe(true)
    expect(await waitFor(async () => (await runs.get(runId))?.detachedSince !== undefined), 'the disconnect was recorded').toBe(true)
    expect(await runs.get(runId), 'a detached record the reaper can list').toMatchObject({ status: 'running', detachedSince: expect.any(Number), sandboxKey: expect.any(String) })
    expect((await runs.listReclaimable({ now: Date.now(), ttlMs: 0 })).map((r) => r.runId)).toEqual([runId])
    agent.release()
    expect(await waitFor(async () => (await runs.get(runId))?.status === 'completed'), 'the detached run finished into its log').toBe(true)
    started.push(...agent.pids)
  })

  it("refuses a finished run's id with a SandboxConfigError naming chat.runId, before any sandbox exists", async () => {
    const { lab, letGo } = slowLab('reused-id')
    labs.push(lab)
    letGo()
    const runs = new InMemoryRunStore()
    const runId = 'run-reused-id'
    await runs.createOrResume({ runId, threadId: 'thread-reused-id', startedAt: Date.now() })
    await runs.update(runId, { status: 'completed', finishedAt: Date.now() })
    const agent = agentAdapter({ turns: ['text'] })
    const { thrown } = await drive({ adapter: agent.adapter, middleware: [withSandbox(lab.sandbox('reused-id'), { runs, durability: { adapter: memoryStream({ runId }) } })], runId, threadId: 'thread-reused-id', logger: warnings().logger })
    expect(thrown).toBeInstanceOf(SandboxConfigError)
    expect(thrown).toMatchObject({ field: 'chat.runId', message: expect.stringMatching(/has ended already.*needs a new id/) })
    expect(agent.calls()).toBe(0)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed' })
  })

  it.each([
    ['a durable run without chat({ runId })', 'run-id-required', { attach: false, runId: undefined, threadId: 'thread-no-run-id' }],
    ['an attach without chat({ threadId })', 'thread-id-required', { attach: true, runId: 'run-known', threadId: undefined }],
    ['an attach to a run the store does not know', 'unknown-run', { attach: true, runId: 'run-nobody-knows', threadId: 'thread-unknown' }],
  ] as const)('refuses %s before any record, lease or sandbox exists (%s)', async (_what, reason, input) => {
    const { lab, inCreate, letGo } = slowLab(`refused-${reason}`)
    labs.push(lab)
    letGo()
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId: 'run-known', threadId: 'thread-known', startedAt: Date.now() })
    const recorded: string[] = []
    const createOrResume = runs.createOrResume.bind(runs)
    runs.createOrResume = (record) => (recorded.push(record.runId), createOrResume(record))
    const agent = agentAdapter({ turns: ['text'] })
    let created = false
    void inCreate.then(() => (created = true))
    const { thrown } = await drive({
      adapter: agent.adapter,
      middleware: [withSandbox(lab.sandbox(`refused-${reason}`), { runs, durability: { adapter: memoryStream({ runId: input.runId ?? 'x' }), attach: input.attach } })],
      runId: input.runId as string,
      threadId: input.threadId as string,
      logger: warnings().logger,
    })
    expect(SandboxError.isInstance(thrown), String(thrown)).toBe(true)
    expect(thrown).toMatchObject({ reason })
    expect(agent.calls()).toBe(0)
    expect(created, 'no sandbox was created').toBe(false)
    expect(recorded, 'no run record was created').toEqual([])
  })

  it('refuses a second start of a run id that waited for the lease while the first ran, and starts nothing again (second new-user run, M2)', async () => {
    const { lab, letGo } = slowLab('second-start')
    labs.push(lab)
    letGo()
    const runs = new InMemoryRunStore()
    const locks = new InMemoryLockStore()
    const runId = 'run-started-twice'
    const first = agentAdapter({ turns: ['text'], holdTurn: 1 })
    const second = agentAdapter({ turns: ['text'] })
    const middleware = () => [withSandbox(lab.sandbox('second-start'), { runs, locks, durability: { adapter: memoryStream({ runId }) } })]
    const one = drive({ adapter: first.adapter, middleware: middleware(), runId, threadId: 'thread-twice', logger: warnings().logger })
    expect(await waitFor(() => first.calls() === 1), 'the first start runs its agent').toBe(true)
    const two = drive({ adapter: second.adapter, middleware: middleware(), runId, threadId: 'thread-twice', logger: warnings().logger })
    await new Promise((resolve) => setTimeout(resolve, 200)) // the second start now waits for the run's lease
    first.release()
    expect((await one).thrown).toBeUndefined()
    const { thrown } = await two
    expect(thrown).toBeInstanceOf(SandboxConfigError)
    expect(thrown).toMatchObject({ field: 'chat.runId', message: expect.stringMatching(/ended while this one waited for its lease.*nothing was started again/) })
    expect(second.calls(), 'no second agent').toBe(0)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed' })
    started.push(...first.pids)
  })

  it('refuses a prompt longer than the adapter declared before any record, lease or sandbox exists (PromptTooLargeError)', async () => {
    const { lab, inCreate, letGo } = slowLab('huge-prompt')
    labs.push(lab)
    letGo()
    const runs = new InMemoryRunStore()
    const agent = agentAdapter({ turns: ['text'] })
    // Its own adapter name: a declared limit holds for every adapter of that name ('Do the work' has 11 characters).
    const adapter = { ...agent.adapter, name: 'huge-prompt-agent' }
    declareHarnessPromptLimit(adapter.name, { maxPromptChars: 10, source: 'a test limit' })
    let created = false
    void inCreate.then(() => (created = true))
    const runId = 'run-huge-prompt'
    const { thrown } = await drive({ adapter, middleware: [withSandbox(lab.sandbox('huge-prompt'), { runs, durability: { adapter: memoryStream({ runId }) } })], runId, threadId: 'thread-huge', logger: warnings().logger })
    expect(PromptTooLargeError.isInstance(thrown), String(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'prompt_too_large', promptChars: 11, maxPromptChars: 10, message: expect.stringMatching(/11 characters.*at most 10 \(a test limit\)/) })
    expect(agent.calls()).toBe(0)
    expect(created, 'no sandbox was created').toBe(false)
    expect(await runs.get(runId), 'no run record either').toBeNull()
  })

  it.each([
    ['rejects', () => Promise.reject(new Error('message store down'))],
    ['throws synchronously', () => {
      throw new Error('message store down')
    }],
    ['returns no promise', () => undefined as unknown as Promise<void>],
    ['never settles', () => new Promise<void>(() => {})],
  ])('a pending-turn store that %s does not stop the run', async (_, snapshot) => {
    const { lab, letGo } = slowLab(`snapshot-${labs.length}`)
    labs.push(lab)
    letGo()
    const runs = new InMemoryRunStore()
    const runId = `run-snapshot-${labs.length}`
    const agent = agentAdapter({ turns: ['text'] })
    const { chunks } = await drive({
      adapter: agent.adapter,
      middleware: [pendingTurn(snapshot), withSandbox(lab.sandbox(`snapshot-${labs.length}`), { runs, durability: { adapter: memoryStream({ runId }) } })],
      runId,
      threadId: `thread-${runId}`,
      logger: warnings().logger,
    })
    expect((chunks as StreamChunk[]).at(-1)?.type).toBe('RUN_FINISHED')
    expect(await runs.get(runId)).toMatchObject({ status: 'completed' })
  })
})
