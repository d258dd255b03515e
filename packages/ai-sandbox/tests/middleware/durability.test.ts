/**
 * withSandbox durability through chat() (spec 000 "Takeover: detached runs and
 * single-writer safety"): one opt-in (`runs` AND `durability`, the four
 * quadrants), detach versus cancel on abort (a disconnect keeps the sandbox
 * and its agent and writes `detachedSince` + `sandboxKey`; a cancel in either
 * band destroys it whatever the lifecycle says), the in-memory-lock warning,
 * an abort during setup, an abort after a first RUN_FINISHED of a tool-calling
 * run, `detachOnDisconnect: false`, the transport's disconnect notification,
 * and option validation. Real parts: the naive host provider's temp
 * directories and `sh` processes, core's InMemoryRunStore, memoryStream and
 * toServerSentEventsResponse.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { chat, InMemoryRunStore, memoryStream, requestRunCancel, RUN_CANCEL_REASON, toolDefinition, toServerSentEventsResponse, type StreamChunk } from '@tanstack/ai'
import { defineLock, InMemoryLockStore, withLocks } from '@tanstack/ai/locks'
import { defineWorkspace, pipeToRunLog, RunClaimNotAcquiredError, SandboxConfigError, sandboxRunDriver, withSandbox, type SandboxProvider } from '../../src/index.js'
import { sseConnection } from '../helpers/sse.js'
import { agentAdapter, alive, chatOptions, drive, probe, sandboxLab, waitFor, warnings, type Probed } from './durability-helpers.js'

vi.setConfig({ testTimeout: 15_000 })

const lab = sandboxLab('with-sandbox-durability')
const started: number[] = []

afterEach(async () => {
  expect(await lab.cleanup(), 'no sandbox directory is left').toEqual([])
  // Every agent process of the file is gone once its sandbox is (kept ones are destroyed by the cleanup).
  expect(await waitFor(() => started.every((pid) => !alive(pid))), 'no agent process is left').toBe(true)
  started.length = 0
})

/** The agent's first text delta: the run is under way once a client has read it. */
const working = (chunk: StreamChunk): boolean => chunk.type === 'TEXT_MESSAGE_CONTENT' && chunk.delta === 'working'

let seq = 0
/** A fresh run: ids, its record (as chat persistence creates it), its log. */
async function freshRun(name: string) {
  const n = ++seq
  const runs = new InMemoryRunStore()
  const runId = `run-${name}-${n}`
  const threadId = `thread-${name}-${n}`
  await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
  return { runs, runId, threadId, log: memoryStream({ runId }) }
}

/** Drive a held run and abort it (with `reason`) once its first delta arrived. */
async function abortedRun(input: { middleware: unknown[]; runId: string; threadId: string; reason?: string; turns?: Array<'tool' | 'text'>; tools?: unknown[]; beforeAbort?: () => Promise<void> }) {
  const agent = agentAdapter({ turns: input.turns ?? ['text'], holdTurn: (input.turns ?? ['text']).length })
  const controller = new AbortController()
  const seen: Probed = {}
  const out = await drive({
    adapter: agent.adapter,
    logger: warnings().logger,
    middleware: [...input.middleware, probe(seen)],
    runId: input.runId,
    threadId: input.threadId,
    abortController: controller,
    ...(input.tools ? { tools: input.tools } : {}),
    onChunk: async (chunk) => {
      if (chunk.type === 'TEXT_MESSAGE_CONTENT' && chunk.delta === 'working') {
        await input.beforeAbort?.()
        controller.abort(input.reason)
      }
    },
  })
  started.push(...agent.pids)
  return { out, seen, agent }
}

describe('one opt-in: durable only with runs AND durability', () => {
  it.each([
    ['neither', false, false],
    ['runs only', true, false],
    ['durability only', false, true],
  ] as const)('%s: today behaviour, no capability, an abort destroys the sandbox and writes nothing', async (name, withRuns, withLog) => {
    const { runs, runId, threadId, log } = await freshRun(`q-${name.replace(' ', '-')}`)
    const sandbox = lab.sandbox(`q-${name.replace(' ', '-')}`)
    const { warned, logger } = warnings()
    const options = { ...(withRuns ? { runs } : {}), ...(withLog ? { durability: { adapter: log } } : {}) }
    const agent = agentAdapter({ turns: ['text'], holdTurn: 1 })
    const controller = new AbortController()
    const seen: Probed = {}
    const out = await drive({
      adapter: agent.adapter,
      middleware: [withSandbox(sandbox, options), probe(seen)],
      runId,
      threadId,
      abortController: controller,
      logger,
      onChunk: (chunk) => void (chunk.type === 'TEXT_MESSAGE_CONTENT' && controller.abort()),
    })
    started.push(...agent.pids)
    expect(out.thrown).toBeUndefined()
    expect(seen.durability, 'no SandboxDurabilityCapability').toBeUndefined()
    expect(seen.detachable, 'no DetachableRunCapability').toBeUndefined()
    expect(seen.detached).toBeUndefined()
    expect(await lab.exists(seen.handle), 'the sandbox is destroyed').toBe(false)
    expect(await waitFor(() => agent.pids.every((pid) => !alive(pid))), 'and its agent with it').toBe(true)
    const record = await runs.get(runId)
    expect(record?.detachedSince).toBeUndefined()
    expect(record?.sandboxKey).toBeUndefined()
    expect(warned.filter((w) => w.includes('durability is wired')), 'no warning: durability was not asked for').toEqual([])
  })

  it('both: the harness gets the durability, core gets detachable, and a disconnect detaches', async () => {
    const { runs, runId, threadId, log } = await freshRun('q-both')
    const sandbox = lab.sandbox('q-both')
    const before = Date.now()
    const { out, seen, agent } = await abortedRun({ middleware: [withSandbox(sandbox, { runs, durability: { adapter: log, journalDir: '/tmp/q-both-runs' } })], runId, threadId })
    expect(out.thrown).toBeUndefined()
    expect(seen.durability).toEqual({ runs, log, attach: false, journalDir: '/tmp/q-both-runs', stillOwned: expect.any(Function), keepJournal: true })
    expect(await seen.durability!.stillOwned!(), 'the host that started the run owns it').toBe(true)
    expect(seen.durability!.log, 'the same log instance the transport gets').toBe(log)
    expect(seen.detachable).toBe(true)
    expect(seen.detached, 'RunDetachedCapability published on the abort path').toBe(true)
    expect(await lab.exists(seen.handle), 'the sandbox is kept').toBe(true)
    expect(agent.pids.every(alive), 'its agent runs on').toBe(true)
    const record = await runs.get(runId)
    expect(record?.detachedSince).toBeGreaterThanOrEqual(before)
    expect(record?.detachedSince).toBeLessThanOrEqual(Date.now())
    expect(record?.sandboxKey).toBe(sandbox.key({ threadId, runId }))
    expect(record?.status, 'a detach writes no status').toBe('running')
  })
})

describe('detach versus cancel', () => {
  it('a disconnect through the durable transport keeps the log open, and the in-memory-lock warning goes out once', async () => {
    const sandbox = lab.sandbox('sse-detach')
    const { warned, logger } = warnings()
    const { runs, runId, threadId, log } = await freshRun('sse-detach')
    const middleware = withSandbox(sandbox, { runs, durability: { adapter: log } })
    const agent = agentAdapter({ turns: ['text'], holdTurn: 1 })
    const controller = new AbortController()
    const seen: Probed = {}
    const stream = chat(chatOptions({ adapter: agent.adapter, middleware: [middleware, probe(seen)], runId, threadId, abortController: controller, logger }))
    const response = toServerSentEventsResponse(stream as AsyncIterable<StreamChunk>, { abortController: controller, durability: { adapter: log, batch: 1 } })
    const connection = sseConnection(response.body!)
    await connection.until(working)
    controller.abort()
    await connection.drain()
    started.push(...agent.pids)
    expect(seen.detached).toBe(true)
    expect(await lab.exists(seen.handle)).toBe(true)
    const stored = (await log.snapshot()).map((entry) => entry.chunk.type)
    expect(stored, 'core left the detached log un-terminalized').not.toContain('RUN_ERROR')
    expect(stored).not.toContain('RUN_FINISHED')
    expect((await runs.get(runId))?.detachedSince).toBeTypeOf('number')

    // A second run through the same middleware instance: no second warning.
    const second = await freshRun('sse-detach')
    await runs.createOrResume({ runId: second.runId, threadId: second.threadId, startedAt: Date.now() })
    const again = agentAdapter({ turns: ['text'] })
    const out = await drive({ adapter: again.adapter, middleware: [middleware], runId: second.runId, threadId: second.threadId, logger })
    started.push(...again.pids)
    expect(out.thrown).toBeUndefined()
    expect(warned.filter((w) => w.includes('durability is wired over no lock store at all')), 'one warning per middleware instance').toHaveLength(1)
  })

  it('warns for withLocks(new InMemoryLockStore()), and not for a distributed-style lock', async () => {
    for (const [locks, expected] of [
      [{ withLocksMw: withLocks(new InMemoryLockStore()) }, 1],
      [{ option: defineLock({ withLock: (_key, fn) => fn(new AbortController().signal) }) }, 0],
    ] as const) {
      const { runs, runId, threadId, log } = await freshRun('locks')
      const sandbox = lab.sandbox('locks')
      const { warned, logger } = warnings()
      const agent = agentAdapter({ turns: ['text'] })
      const middleware = 'withLocksMw' in locks ? [locks.withLocksMw, withSandbox(sandbox, { runs, durability: { adapter: log } })] : [withSandbox(sandbox, { runs, durability: { adapter: log }, locks: locks.option })]
      const out = await drive({ adapter: agent.adapter, middleware, runId, threadId, logger })
      started.push(...agent.pids)
      expect(out.thrown).toBeUndefined()
      expect(warned.filter((w) => w.includes('InMemoryLockStore, which cannot coordinate hosts'))).toHaveLength(expected)
    }
  })

  it('a cancel recorded on the run (requestRunCancel) destroys the sandbox although the lifecycle keeps it', async () => {
    const { runs, runId, threadId, log } = await freshRun('cancel-record')
    const sandbox = lab.sandbox('cancel-record', { lifecycle: { reuse: 'thread', destroyOnComplete: false, keepAlive: '1h' } })
    const { out, seen, agent } = await abortedRun({ middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } })], runId, threadId, beforeAbort: () => requestRunCancel(runs, runId) })
    expect(out.thrown).toBeUndefined()
    expect(seen.detached, 'a cancel is not a detach').toBeUndefined()
    expect(await lab.exists(seen.handle), 'the sandbox is destroyed').toBe(false)
    expect(await waitFor(() => agent.pids.every((pid) => !alive(pid))), 'and the agent stopped').toBe(true)
    const record = await runs.get(runId)
    expect(record?.detachedSince).toBeUndefined()
    expect(record?.cancelRequested).toBe(true)
  })

  it('a cancel recorded by another host stops a run nobody aborts within one poll: sandbox destroyed, agent gone, record aborted', async () => {
    const { runs, runId, threadId, log } = await freshRun('remote-cancel')
    const sandbox = lab.sandbox('remote-cancel', { lifecycle: { reuse: 'thread', destroyOnComplete: false, keepAlive: '1h' } })
    const agent = agentAdapter({ turns: ['text'], holdTurn: 1, endsWithAgent: true })
    const seen: Probed = {}
    const stream = chat(chatOptions({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log, cancelPollMs: 100 } }), probe(seen)], runId, threadId, logger: warnings().logger }))
    // The driver's pump, as sandboxRunDriver or a server route runs it: nobody aborts this run in-process.
    const settled = pipeToRunLog(stream as AsyncIterable<StreamChunk>, { runs, durability: log, runId, threadId })
    expect(await waitFor(async () => (await log.snapshot()).some((entry) => entry.chunk.type === 'TEXT_MESSAGE_CONTENT')), 'the agent is at work').toBe(true)
    started.push(...agent.pids)
    const cancelledAt = Date.now()
    await requestRunCancel(runs, runId) // "another host": only the record carries it
    const record = await settled
    const stoppedAfterMs = Date.now() - cancelledAt
    expect(record).toMatchObject({ status: 'aborted', cancelRequested: true })
    expect(record?.detachedSince).toBeUndefined()
    expect(seen.detached, 'a cancel is not a detach').toBeUndefined()
    expect(await lab.exists(seen.handle), 'the sandbox is destroyed although the lifecycle keeps it').toBe(false)
    expect(await waitFor(() => agent.pids.every((pid) => !alive(pid))), 'and the agent stopped').toBe(true)
    // A hang guard, not a timing claim: the poll (100 ms) saw the cancel long before the agent's own 60 s.
    expect(stoppedAfterMs).toBeLessThan(10_000)
  })

  it('a durable run that finishes stops polling its record', async () => {
    const { runs, runId, threadId, log } = await freshRun('poll-stops')
    let gets = 0
    const counted = Object.assign(Object.create(runs) as InMemoryRunStore, { get: (id: string) => ((gets += 1), runs.get(id)) })
    const sandbox = lab.sandbox('poll-stops')
    const agent = agentAdapter({ turns: ['text'] })
    const out = await drive({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs: counted, durability: { adapter: log, cancelPollMs: 50 } })], runId, threadId, logger: warnings().logger })
    started.push(...agent.pids)
    expect(out.thrown).toBeUndefined()
    const after = gets
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(gets, 'no poll after the run ended').toBe(after)
  })

  it('an abort with RUN_CANCEL_REASON destroys the sandbox although the lifecycle keeps it', async () => {
    const { runs, runId, threadId, log } = await freshRun('cancel-reason')
    const sandbox = lab.sandbox('cancel-reason', { lifecycle: { reuse: 'thread', destroyOnComplete: false } })
    const { out, seen, agent } = await abortedRun({ middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } })], runId, threadId, reason: RUN_CANCEL_REASON })
    expect(out.thrown).toBeUndefined()
    expect(seen.detached).toBeUndefined()
    expect(await lab.exists(seen.handle)).toBe(false)
    expect(await waitFor(() => agent.pids.every((pid) => !alive(pid)))).toBe(true)
    expect((await runs.get(runId))?.detachedSince).toBeUndefined()
  })

  it('detachOnDisconnect: false: a disconnect destroys the sandbox, and the run is not detachable', async () => {
    const { runs, runId, threadId, log } = await freshRun('no-detach')
    const sandbox = lab.sandbox('no-detach')
    const { out, seen, agent } = await abortedRun({ middleware: [withSandbox(sandbox, { runs, durability: { adapter: log }, detachOnDisconnect: false })], runId, threadId })
    expect(out.thrown).toBeUndefined()
    expect(seen.durability, 'still durable: the harness journals').toBeDefined()
    expect(seen.detachable).toBeUndefined()
    expect(seen.detached).toBeUndefined()
    expect(await lab.exists(seen.handle)).toBe(false)
    expect(await waitFor(() => agent.pids.every((pid) => !alive(pid)))).toBe(true)
    expect((await runs.get(runId))?.detachedSince).toBeUndefined()
  })

  it('a tool-calling run aborted after its first RUN_FINISHED detaches (and without durability it is destroyed)', async () => {
    const weather = toolDefinition({ name: 'get_weather', description: 'The weather in a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } as never }).server(async () => 'Sunny')
    for (const durable of [true, false]) {
      const { runs, runId, threadId, log } = await freshRun(`tools-${durable}`)
      const sandbox = lab.sandbox(`tools-${durable}`)
      const { out, seen, agent } = await abortedRun({ middleware: [withSandbox(sandbox, durable ? { runs, durability: { adapter: log } } : {})], runId, threadId, turns: ['tool', 'text'], tools: [weather] })
      expect(out.thrown).toBeUndefined()
      expect(agent.calls(), 'the agent loop ran a second turn').toBe(2)
      expect(out.chunks.filter((chunk) => chunk.type === 'RUN_FINISHED').length, 'the first turn finished').toBeGreaterThanOrEqual(1)
      expect(out.chunks.some((chunk) => chunk.type === 'TOOL_CALL_RESULT'), 'the host tool ran').toBe(true)
      expect(await lab.exists(seen.handle)).toBe(durable)
      expect(seen.detached).toBe(durable ? true : undefined)
      expect(typeof (await runs.get(runId))?.detachedSince).toBe(durable ? 'number' : 'undefined')
    }
  })

  it('a completed durable run behaves as today (destroyOnComplete) and clears a detachedSince the disconnect notification wrote', async () => {
    const { runs, runId, threadId, log } = await freshRun('complete')
    const sandbox = lab.sandbox('complete', { lifecycle: { reuse: 'thread', destroyOnComplete: true } })
    const agent = agentAdapter({ turns: ['text'], holdTurn: 1 })
    const seen: Probed = {}
    const stream = chat(chatOptions({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } }), probe(seen)], runId, threadId, logger: warnings().logger }))
    const response = toServerSentEventsResponse(stream as AsyncIterable<StreamChunk>, { durability: { adapter: log, batch: 1 } })
    const connection = sseConnection(response.body!)
    await connection.until(working)
    // The tab closes: the transport tells the run, which goes on into its log.
    await connection.hangUp()
    expect(await waitFor(async () => typeof (await runs.get(runId))?.detachedSince === 'number'), 'the notification recorded the detach at once').toBe(true)
    expect((await runs.get(runId))?.sandboxKey).toBe(sandbox.key({ threadId, runId }))
    expect(await lab.exists(seen.handle), 'a notification tears nothing down').toBe(true)
    agent.release()
    expect(await waitFor(async () => (await log.snapshot()).some((entry) => entry.chunk.type === 'RUN_FINISHED')), 'the run finished into its log').toBe(true)
    expect(await waitFor(async () => (await runs.get(runId))?.detachedSince === undefined), 'onFinish cleared detachedSince').toBe(true)
    expect(await waitFor(async () => !(await lab.exists(seen.handle))), 'destroyOnComplete applied').toBe(true)
    started.push(...agent.pids)
  })

  it('a run that completes while the notification write is still in flight ends with detachedSince cleared', async () => {
    const { runId, threadId, log } = await freshRun('complete-slow')
    // A store whose writes take 150 ms, as a remote database's may: the notification's write is still pending when the run finishes.
    const writes: string[] = []
    class SlowRunStore extends InMemoryRunStore {
      override async update(...args: Parameters<InMemoryRunStore['update']>) {
        writes.push(Object.keys(args[1]).join(','))
        await new Promise((resolve) => setTimeout(resolve, 150))
        return super.update(...args)
      }
    }
    const runs = new SlowRunStore()
    await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
    const sandbox = lab.sandbox('complete-slow')
    const agent = agentAdapter({ turns: ['text'], holdTurn: 1 })
    const stream = chat(chatOptions({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } })], runId, threadId, logger: warnings().logger }))
    const response = toServerSentEventsResponse(stream as AsyncIterable<StreamChunk>, { durability: { adapter: log, batch: 1 } })
    const connection = sseConnection(response.body!)
    await connection.until(working)
    await connection.hangUp()
    agent.release() // at once: the run finishes before the detach write lands
    expect(await waitFor(async () => (await log.snapshot()).some((entry) => entry.chunk.type === 'RUN_FINISHED'))).toBe(true)
    expect(await waitFor(() => writes.length >= 3), 'the detach was written, then cleared').toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 400)) // every write has landed
    // The sandbox key as the sandbox was ensured (an orphan's sandbox is found by it), the detach, its clear, then the
    // run's terminal status (the host that started the run settles it).
    expect(writes).toEqual(['sandboxKey', 'detachedSince,sandboxKey', 'detachedSince', 'status,finishedAt'])
    expect((await runs.get(runId))?.detachedSince, 'the clear landed before the status').toBeUndefined()
    expect((await runs.get(runId))?.status).toBe('completed')
    started.push(...agent.pids)
  })
})

describe('the host that starts a durable run holds its driver lease', () => {
  it('an attach with a driver while the run is live here waits, then serves the log and drives nothing; the record is completed by the starting host', async () => {
    const { runs, runId, threadId, log } = await freshRun('lease')
    const locks = new InMemoryLockStore()
    const sandbox = lab.sandbox('lease')
    const agent = agentAdapter({ turns: ['text'], holdTurn: 1 })
    const stream = chat(chatOptions({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs, locks, durability: { adapter: log } })], runId, threadId, logger: warnings().logger }))
    const response = toServerSentEventsResponse(stream as AsyncIterable<StreamChunk>, { durability: { adapter: log, batch: 1 } })
    const connection = sseConnection(response.body!)
    await connection.until(working)
    await connection.hangUp() // the tab closes; this host keeps driving the run
    let drives = 0
    const driver = sandboxRunDriver({ request: new Request(`http://app.test/api/run?runId=${runId}`), runs, locks, durability: () => log, fenceQuietMs: 50, drive: () => ((drives += 1), (async function* () {})()) })
    const claimed = driver.claim({ runs, locks, runId }, async () => 'drove').catch((error: unknown) => error)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(drives, 'no drive while the starting host holds the lease').toBe(0)
    agent.release()
    const refused = await claimed
    expect(refused).toBeInstanceOf(RunClaimNotAcquiredError)
    expect((refused as RunClaimNotAcquiredError).reason).toBe('terminal')
    expect(drives).toBe(0)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed' })
    expect((await runs.get(runId))?.driverEpoch).toBeUndefined()
    started.push(...agent.pids)
  })

  it('a detach (the request aborted) releases the lease, so a takeover claims the run at once', async () => {
    const { runs, runId, threadId, log } = await freshRun('lease-detach')
    const locks = new InMemoryLockStore()
    const sandbox = lab.sandbox('lease-detach', { lifecycle: { reuse: 'thread', destroyOnComplete: false } })
    const { out, seen } = await abortedRun({ middleware: [withSandbox(sandbox, { runs, locks, durability: { adapter: log } })], runId, threadId })
    expect(out.thrown).toBeUndefined()
    expect(seen.detached).toBe(true)
    const driver = sandboxRunDriver({ request: new Request(`http://app.test/api/run?runId=${runId}`), runs, locks, durability: () => log, fenceQuietMs: 50, drive: () => (async function* () {})() })
    expect(await driver.claim({ runs, locks, runId }, async (claim) => claim.epoch)).toBe(1)
    expect((await runs.get(runId))?.status, 'a detach settles nothing').toBe('running')
  })
})

describe('an abort during setup', () => {
  it('detaches when it lands while setup captures the file baseline (after ensure)', async () => {
    let inBaseline!: () => void
    const reachedBaseline = new Promise<void>((resolve) => (inBaseline = resolve))
    let letGo!: () => void
    const gate = new Promise<void>((resolve) => (letGo = resolve))
    // The baseline's first command waits until the test has aborted: setup is deterministically in its slow step.
    const slowBaseline = (provider: SandboxProvider): SandboxProvider => ({
      ...provider,
      create: async (input) => {
        const handle = await provider.create(input)
        const exec = handle.process.exec
        let first = true
        handle.process.exec = async (command, options) => {
          if (first && command.startsWith('git rev-parse')) {
            first = false
            inBaseline()
            await gate
          }
          return exec(command, options)
        }
        return handle
      },
    })
    const slowLab = sandboxLab('with-sandbox-durability-setup', slowBaseline)
    try {
      const { runs, runId, threadId, log } = await freshRun('setup')
      const sandbox = slowLab.sandbox('setup', { fileEvents: true })
      const agent = agentAdapter({ turns: ['text'] })
      const controller = new AbortController()
      const seen: Probed = {}
      const running = drive({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } }), probe(seen)], runId, threadId, abortController: controller, logger: warnings().logger })
      await reachedBaseline
      controller.abort()
      letGo()
      const out = await running
      expect(out.thrown).toBeUndefined()
      expect(agent.calls(), 'the run ended before its agent was launched').toBe(0)
      expect(seen.detached).toBe(true)
      expect(await slowLab.exists(seen.handle), 'the sandbox is kept').toBe(true)
      const record = await runs.get(runId)
      expect(record?.detachedSince).toBeTypeOf('number')
      expect(record?.sandboxKey).toBe(sandbox.key({ threadId, runId }))
    } finally {
      expect(await slowLab.cleanup()).toEqual([])
    }
  })

  it('detaches when it lands in the onReady hook (the handle exists, setup has not gone on)', async () => {
    const controller = new AbortController()
    const { runs, runId, threadId, log } = await freshRun('ready')
    const sandbox = lab.sandbox('ready', { hooks: { onReady: () => controller.abort() } })
    const agent = agentAdapter({ turns: ['text'] })
    const seen: Probed = {}
    const out = await drive({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } }), probe(seen)], runId, threadId, abortController: controller, logger: warnings().logger })
    expect(out.thrown).toBeUndefined()
    expect(seen.detached).toBe(true)
    expect(await lab.exists(seen.handle)).toBe(true)
    expect((await runs.get(runId))?.detachedSince).toBeTypeOf('number')
  })
})

describe('a run that ends before its sandbox is ready', () => {
  it('a cancel while the sandbox is still being created settles the record aborted, so the thread is not left with a live run', async () => {
    let creating!: () => void
    const inCreate = new Promise<void>((resolve) => (creating = resolve))
    let letGo!: () => void
    const gate = new Promise<void>((resolve) => (letGo = resolve))
    const slowCreate = (provider: SandboxProvider): SandboxProvider => ({
      ...provider,
      create: async (input) => {
        creating()
        await gate
        return provider.create(input)
      },
    })
    const slowLab = sandboxLab('with-sandbox-durability-create', slowCreate)
    try {
      const { runs, runId, threadId, log } = await freshRun('cancel-in-create')
      const agent = agentAdapter({ turns: ['text'] })
      const controller = new AbortController()
      const running = drive({ adapter: agent.adapter, middleware: [withSandbox(slowLab.sandbox('cancel-in-create'), { runs, durability: { adapter: log } })], runId, threadId, abortController: controller, logger: warnings().logger })
      await inCreate
      // The cancel route's two bands.
      await requestRunCancel(runs, runId)
      controller.abort(RUN_CANCEL_REASON)
      letGo()
      await running
      expect(agent.calls(), 'the agent never started').toBe(0)
      expect(await runs.get(runId), 'the record is settled, not left running').toMatchObject({ status: 'aborted', cancelRequested: true })
      expect(await runs.findActiveRun(threadId), 'the thread has no live run').toBeNull()
    } finally {
      expect(await slowLab.cleanup()).toEqual([])
    }
  })

  it('a bootstrap that fails settles the record failed with its error', async () => {
    const { runs, runId, threadId, log } = await freshRun('bootstrap-fails')
    const sandbox = lab.sandbox('bootstrap-fails', { workspace: defineWorkspace({ setup: ['exit 3'] }) })
    const agent = agentAdapter({ turns: ['text'] })
    await drive({ adapter: agent.adapter, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } })], runId, threadId, logger: warnings().logger })
    expect(agent.calls()).toBe(0)
    const record = await runs.get(runId)
    expect(record?.status).toBe('failed')
    expect(record?.error?.message).toBeTypeOf('string')
    expect(await runs.findActiveRun(threadId)).toBeNull()
  })
})

describe('options', () => {
  const sandbox = lab.sandbox('options')
  it.each([
    [{ runs: {} }, 'withSandbox.options.runs', 'expected a RunStore'],
    [{ durability: { adapter: {} } }, 'withSandbox.options.durability.adapter', "expected the run's event log"],
    [{ durability: { adapter: memoryStream({ runId: 'x' }), attachWaitMs: -1 } }, 'withSandbox.options.durability.attachWaitMs', 'more than 0 ms'],
    [{ durability: { adapter: memoryStream({ runId: 'x' }), journalDir: 'runs' } }, 'withSandbox.options.durability.journalDir', 'absolute'],
    [{ durability: { adapter: memoryStream({ runId: 'x' }), detach: true } }, 'withSandbox.options.durability.detach', ''],
    [{ detachOnDisconnect: 'yes' }, 'withSandbox.options.detachOnDisconnect', 'expected true'],
    [{ durability: { adapter: memoryStream({ runId: 'x' }), cancelPollMs: 10 } }, 'withSandbox.options.durability.cancelPollMs', 'at least 50 ms'],
    // Above a Node timer's limit, setTimeout would fire after 1 ms: the record would be read hundreds of times a second.
    [{ durability: { adapter: memoryStream({ runId: 'x' }), cancelPollMs: 2 ** 31 } }, 'withSandbox.options.durability.cancelPollMs', 'at most 2147483647 ms'],
  ])('refuses %j naming the field', (options, field, message) => {
    let thrown: unknown
    try {
      withSandbox(sandbox, options as never)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(SandboxConfigError)
    expect((thrown as SandboxConfigError).field).toBe(field)
    expect((thrown as Error).message).toContain(message)
  })
})
