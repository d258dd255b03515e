/**
 * A run survives its host at the moments the takeover trials do not reach
 * (issue 28), with the real Claude Code CLI against aimock on local-process
 * sandboxes, each server its own Node process (`src/run-server.ts`) over one
 * SQLite database:
 *
 * - the end of a run: the host dies after the CLI printed its result line and
 *   exited, before `RUN_FINISHED` is stored (`dieBeforeAppend`, so the point
 *   is exact, not drawn). The journal must still be there for the successor.
 * - a paused host: SIGSTOP past its lease, a successor takes the run over,
 *   then SIGCONT. The woken host lost its claim and must touch nothing of the
 *   run: not its CLI (the successor's run would end `cli_exit` 143), not its
 *   journal, not its record (`detachedSince`).
 * - a double kill: two processes attach at once, the one that claims the run
 *   is killed too; the other, which lost the race, takes the run over when
 *   the lease lapses, and its client gets the whole run.
 * - a crash nobody returns to: the host dies mid-run and no client comes
 *   back. The record stays `running` with no `detachedSince`; a sweep finds
 *   it orphaned (no host holds its lease), marks it detached, and a later
 *   sweep finalizes it from the journal once the agent finished (the log
 *   then equals the control) and reclaims its sandbox.
 *
 * Each case compares the client's transcript with a control run chunk for
 * chunk, and checks the record, one CLI (five model requests) and that no
 * process, journal or sandbox is left.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chat, EventType, type RunRecord, type StreamChunk } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { defineSandbox, journalPaths, probeRunExit, reapDetachedRuns, sandboxReclaimer, withSandbox, type ReapResult, type RunExitProbe } from '@tanstack/ai-sandbox'
import { isRunAcceptedMarker } from '@testing/support/sse-client'
import { providerFor } from '../src/durable-host.js'
import { createSqliteStores, type SqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { transcriptOf } from '@testing/support/sse-client'
import { claudeBinary, makeClaudeHome, startFakeModel, type FakeModel } from '../src/aimock.js'
import type { RunServerConfig } from '../src/run-server.js'
import { attachRun, normalizedFingerprints, postRun, startRunServer, stopRunServer, tallyTranscript, type RunServer } from '../src/takeover-trial.js'
import { processesMatching, processesWithHome, waitFor } from './helpers/run-claude.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/durable-takeover.json', import.meta.url))
const PROMPT = 'Run the durable job in four steps.'
const localRoot = mkdtempSync(join(tmpdir(), 'host-loss-sandboxes-'))
const dir = mkdtempSync(join(tmpdir(), 'host-loss-'))

let model: FakeModel
let stores: SqliteStores
let config: RunServerConfig
let successor: RunServer
let control: string[]
let controlIds: { runId: string; threadId: string }
let home: ReturnType<typeof makeClaudeHome>
const servers: RunServer[] = []

beforeAll(async () => {
  model = await startFakeModel(FIXTURE, { host: '127.0.0.1', vars: { stepSeconds: '1.5' } })
  home = makeClaudeHome('host-loss-home')
  config = {
    stores: { kind: 'sqlite', path: join(dir, 'runs.db') },
    provider: { kind: 'local-process', root: localRoot },
    claude: { executable: claudeBinary(), env: home.env(model.url) },
    prompt: PROMPT,
    fenceQuietMs: 1000,
    leaseMs: 3000,
    cancelPollMs: 500,
    attachWaitMs: 3000,
  }
  stores = createSqliteStores({ path: join(dir, 'runs.db') })
  successor = await startRunServer(config)
  servers.push(successor)
  const runId = `control-${randomUUID()}`
  const threadId = `thread-${randomUUID()}`
  const chunks = transcriptOf(await postRun(successor, runId, threadId))
  expect(chunks.at(-1)?.type, `the control run finished:\n${successor.output()}`).toBe(EventType.RUN_FINISHED)
  control = normalizedFingerprints(chunks, { runId, threadId })
  controlIds = { runId, threadId }
}, 180_000)

afterAll(async () => {
  for (const server of servers) {
    if (server.child.signalCode === 'SIGSTOP') server.child.kill('SIGCONT')
    await stopRunServer(server)
  }
  stores?.close()
  await model?.stop()
  home?.cleanup()
  const left = readdirSync(localRoot)
  rmSync(localRoot, { recursive: true, force: true })
  rmSync(dir, { recursive: true, force: true })
  expect(left, 'every local-process sandbox folder is removed').toEqual([])
}, 60_000)

/** A run's stored log, as normalized fingerprints (the run-accepted marker left out). */
async function logOf(ids: { runId: string; threadId: string }): Promise<string[]> {
  const chunks = (await stores.stream({ runId: ids.runId }).snapshot()).map((entry) => entry.chunk).filter((chunk) => !isRunAcceptedMarker(chunk))
  return normalizedFingerprints(chunks, ids)
}

/** What every case checks once the client has the whole run: the record, one CLI, and nothing of the run left. */
async function expectRunClosedOut(runId: string, requestsBefore: number): Promise<void> {
  expect(await stores.runs.get(runId)).toMatchObject({ status: 'completed' })
  expect((await stores.runs.get(runId))?.detachedSince, 'no host wrote detachedSince after the run ended').toBeUndefined()
  expect(model.requests().length - requestsBefore, 'one CLI ran the turn (five model requests)').toBe(5)
  const journal = `/${posix.basename(journalPaths(runId).journal)}`
  expect(await waitFor(() => processesMatching(journal).length === 0 && processesWithHome(home.dir).length === 0, 15_000), 'no CLI, tool or tail process of the run is left').toBe(true)
  expect(await waitFor(() => readdirSync(localRoot).length === 0, 15_000), 'the sandbox (with its journal) is destroyed').toBe(true)
}

/** The reaper of these runs, in the test process: the same sandbox definition, provider and stores as every server (`run-server.ts`). */
function reaper() {
  const provider = providerFor(config.provider)
  const sandbox = defineSandbox({ id: 'durable-e2e', provider, lifecycle: { reuse: 'thread', destroyOnComplete: true } })
  const logger = resolveDebugOption({ logger: { debug: () => {}, info: () => {}, warn: () => {}, error: (m: string) => console.error(`reaper: ${m}`) } })
  async function hasFinished(record: RunRecord): Promise<RunExitProbe> {
    const instance = record.sandboxKey === undefined ? null : await stores.instances.get(record.sandboxKey)
    const handle = instance === null ? null : await provider.resume({ id: instance.providerSandboxId })
    return handle === null ? { state: 'unknown' } : probeRunExit({ handle, runId: record.runId })
  }
  const sweep = (detachedRunTtlMs: number): Promise<ReapResult> =>
    reapDetachedRuns({
      runs: stores.runs,
      locks: stores.locks,
      durability: (runId) => stores.stream({ runId }),
      hasFinished,
      drive: ({ runId, threadId, signal }) => {
        const abortController = new AbortController()
        signal.addEventListener('abort', () => abortController.abort(signal.reason), { once: true })
        return chat({
          adapter: claudeCodeText('sonnet', config.claude),
          runId,
          threadId,
          messages: [{ role: 'user', content: PROMPT }],
          middleware: [withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability: { adapter: stores.stream({ runId }), attach: true } })],
          abortController,
        } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
      },
      now: Date.now(),
      detachedRunTtlMs,
      orphanGraceMs: 0,
      fenceQuietMs: config.fenceQuietMs,
      reclaim: sandboxReclaimer({ provider, instances: stores.instances }),
      logger,
    })
  return { sweep, hasFinished }
}

describe('a run survives its host at the end of the run and through a pause (local-process + SQLite)', () => {
  it('the host dies after the CLI exited, before RUN_FINISHED is stored: the successor still finds the journal and delivers the end', async () => {
    const first = await startRunServer({ ...config, dieBeforeAppend: { type: EventType.RUN_FINISHED } })
    servers.push(first)
    const runId = `end-${randomUUID()}`
    const threadId = `thread-${randomUUID()}`
    const requestsBefore = model.requests().length
    const before = await postRun(first, runId, threadId)
    await first.exited
    expect(first.child.signalCode, `the first server died at the append of RUN_FINISHED:\n${first.output()}`).toBe('SIGKILL')
    expect(transcriptOf(before).some((chunk) => chunk.type === EventType.RUN_FINISHED), 'the first server delivered no RUN_FINISHED').toBe(false)
    const after = await attachRun(successor, runId, before.at(-1)!.id!)
    const tally = tallyTranscript(normalizedFingerprints(transcriptOf(before, after), { runId, threadId }), control)
    expect(tally, `the transcript equals the control:\n${successor.output().slice(-4000)}`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
    await expectRunClosedOut(runId, requestsBefore)
  }, 120_000)

  it('a host frozen past its lease wakes after a successor took the run over: it touches nothing of the run, which ends completed', async () => {
    const first = await startRunServer(config)
    servers.push(first)
    const runId = `pause-${randomUUID()}`
    const threadId = `thread-${randomUUID()}`
    const requestsBefore = model.requests().length
    // Frozen early (the second model turn), so the successor takes over with most of the run still to come.
    const before = await postRun(first, runId, threadId, (_event, events) => {
      const frozen = transcriptOf(events).filter((chunk) => chunk.type === EventType.TOOL_CALL_START).length >= 1
      if (frozen) first.child.kill('SIGSTOP')
      return frozen
    })
    const attached = attachRun(successor, runId, before.at(-1)!.id!)
    // The woken host must find its claim gone: it wakes once the successor drives, with the CLI still working.
    expect(await waitFor(() => successor.drives().includes(runId), 30_000), `the successor claimed the run:\n${successor.output().slice(-3000)}`).toBe(true)
    first.child.kill('SIGCONT')
    const after = await attached
    const tally = tallyTranscript(normalizedFingerprints(transcriptOf(before, after), { runId, threadId }), control)
    expect(tally, `the transcript equals the control:\n${successor.output().slice(-3000)}\n--- woken host:\n${first.output().slice(-3000)}`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
    await expectRunClosedOut(runId, requestsBefore)
    expect(first.output(), 'the woken host stopped no process of the run').not.toMatch(/stopped the processes of run|stopped processes the run left behind/)
    await stopRunServer(first)
  }, 120_000)

  it('two processes attach at once and the one that drives is killed too: the other takes the run over and its client gets the whole run', async () => {
    const first = await startRunServer(config)
    const pair = [await startRunServer(config), await startRunServer(config)]
    servers.push(first, ...pair)
    const runId = `double-${randomUUID()}`
    const threadId = `thread-${randomUUID()}`
    const requestsBefore = model.requests().length
    const before = await postRun(first, runId, threadId, (_event, events) => {
      const seen = transcriptOf(events).filter((chunk) => chunk.type === EventType.TOOL_CALL_START).length >= 1
      if (seen) first.child.kill('SIGKILL')
      return seen
    })
    await first.exited
    const lastId = before.at(-1)!.id!
    const reads = pair.map((server) => attachRun(server, runId, lastId))
    expect(await waitFor(() => pair.some((server) => server.drives().includes(runId)), 30_000), 'one of the two drives').toBe(true)
    const driver = pair.find((server) => server.drives().includes(runId))!
    const bystander = pair.find((server) => server !== driver)!
    driver.child.kill('SIGKILL')
    const after = await reads[pair.indexOf(bystander)]!
    const tally = tallyTranscript(normalizedFingerprints(transcriptOf(before, after), { runId, threadId }), control)
    expect(tally, `the bystander's client got the whole run:\n${bystander.output().slice(-3000)}`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
    expect(bystander.drives(), 'the bystander took the run over').toContain(runId)
    expect(await stores.runs.get(runId)).toMatchObject({ driverEpoch: 2 })
    await expectRunClosedOut(runId, requestsBefore)
  }, 150_000)

  it('a host that dies with no client coming back leaves an orphan: a sweep marks it detached, and once its agent finished a sweep finalizes it and reclaims its sandbox', async () => {
    const first = await startRunServer(config)
    servers.push(first)
    const runId = `orphan-${randomUUID()}`
    const threadId = `thread-${randomUUID()}`
    const requestsBefore = model.requests().length
    await postRun(first, runId, threadId, (_event, events) => {
      const seen = transcriptOf(events).filter((chunk) => chunk.type === EventType.TOOL_CALL_START).length >= 1
      if (seen) first.child.kill('SIGKILL')
      return seen
    })
    await first.exited
    const left = await stores.runs.get(runId)
    expect(left, 'nobody detached the run: nothing lists it as reclaimable').toMatchObject({ status: 'running' })
    expect(left?.detachedSince).toBeUndefined()
    expect(left?.sandboxKey, 'the sandbox key was recorded when the sandbox was ensured').toEqual(expect.any(String))
    const { sweep, hasFinished } = reaper()
    // While the dead host's lease still runs, the run is not an orphan yet.
    expect((await sweep(30 * 60_000)).orphans).toEqual([])
    expect(await waitFor(async () => !(await stores.locks.isHeld(`tanstack-ai-sandbox:run-driver:${runId}`)), 10_000), 'the dead host\'s lease lapsed').toBe(true)
    const found = await sweep(30 * 60_000)
    expect(found.orphans, 'the sweep found the orphan').toEqual([runId])
    expect((await stores.runs.get(runId))?.detachedSince).toEqual(expect.any(Number))
    // The agent works on without a host; once it finished, a sweep finalizes the run from the journal.
    expect(await waitFor(async () => (await hasFinished((await stores.runs.get(runId))!)).state === 'finished', 60_000), 'the agent finished').toBe(true)
    const result = await sweep(30 * 60_000)
    expect(result.entries.find((entry) => entry.runId === runId), JSON.stringify(result.entries)).toMatchObject({ outcome: 'finalized', status: 'completed' })
    // Compared with the control run's own log: a log holds chunks as core stores them, not as a client restores them.
    expect(tallyTranscript(await logOf({ runId, threadId }), await logOf(controlIds)), 'the log holds the whole run').toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
    await expectRunClosedOut(runId, requestsBefore)
    expect((await sweep(0)).entries.filter((entry) => entry.runId === runId), 'nothing is left to sweep').toEqual([])
  }, 150_000)
})
