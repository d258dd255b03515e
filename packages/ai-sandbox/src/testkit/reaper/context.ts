/**
 * The shared state of one reaper conformance run: the provider under test
 * (wrapped to track its sandboxes), one instance store and definition, the
 * stores, and the app-side wiring the reaper needs as spec 000 writes it.
 * `startDetached` leaves a real durable `chat()` detached mid-run.
 * Invariant: `cleanup()` deletes every journal of the case and destroys every
 * sandbox it made, even after a failure. Design notes: docs/design/testkit.md
 */
import { randomUUID } from 'node:crypto'
import { chat, InMemoryRunStore, memoryStream, toServerSentEventsResponse, type RunDriverOptions, type RunRecord, type StreamChunk } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { SandboxProvider } from '../../contracts/provider.js'
import { defineSandbox, type SandboxDefinition } from '../../definition/define-sandbox.js'
import { InMemorySandboxInstanceStore } from '../../definition/instance-store.js'
import { runDriverLockKey } from '../../durability/claim.js'
import { endJournaledRun } from '../../journal/run-end.js'
import { withSandbox } from '../../middleware/with-sandbox.js'
import { probeRunExit, type RunExitProbe } from '../../reaper/probe.js'
import { sandboxReclaimer, type ReclaimOutcome } from '../../reaper/reclaim.js'
import { shellQuote } from '../../shell/quote.js'
import { sseMessages } from '../sse.js'
import type { TakeoverStores } from '../takeover/drivers.js'
import { reaperAgentAdapter, reaperMarker, type ReaperAgentScript } from './agent.js'

/** The stores a reaper case runs over: the same shape as the takeover kit's. */
export type ReaperStores = TakeoverStores

/** Core's in-memory stores: a run store, a lock store and `memoryStream` logs. */
export function inMemoryReaperStores(): ReaperStores {
  return { runs: new InMemoryRunStore(), locks: new InMemoryLockStore(), log: (runId) => memoryStream({ runId }) }
}

/** One run a case detached. */
export interface DetachedRun {
  readonly runId: string
  readonly threadId: string
  readonly sandboxKey: string
  readonly handle: SandboxHandle
  /** Text steps the agent prints in all. */
  readonly steps: number
}

/** What every reaper case reads. */
export interface ReaperConformanceContext {
  readonly provider: SandboxProvider
  readonly instances: InMemorySandboxInstanceStore
  readonly sandbox: SandboxDefinition
  readonly stores: ReaperStores
  readonly journalDir: string | undefined
  /** Provider ids whose `destroy` throws (a case adds one to make `reclaim-failed` happen). */
  readonly refuseDestroy: Set<string>
  /** Per-case timeout, ms. */
  readonly timeoutMs: number
  /** Start a durable run and leave it after `detachAfter` text chunks (default 1): detached, agent running. */
  startDetached: (label: string, script?: ReaperAgentScript & { detachAfter?: number }) => Promise<DetachedRun>
  /** Let a run's agent finish, and wait until its journal has the genuine sentinel. */
  finish: (run: DetachedRun) => Promise<void>
  /** `ReapOptions.hasFinished` as spec 000 writes it: the instance record, `provider.resume`, `probeRunExit`. */
  hasFinished: (record: RunRecord) => Promise<RunExitProbe>
  /** `ReapOptions.drive`: the attach `chat()` (`withSandbox` with `durability.attach: true`). Counts its calls. */
  drive: RunDriverOptions['drive']
  /** How many times `drive` was called. */
  drives: () => number
  /** `sandboxReclaimer` over the tracked provider and the instance store. */
  reclaim: (record: RunRecord) => Promise<ReclaimOutcome>
  /** The chunks the run's log holds. */
  storedChunks: (runId: string) => Promise<StreamChunk[]>
  /** Whether the provider still has the sandbox. */
  sandboxUp: (handle: SandboxHandle) => Promise<boolean>
  /** Delete every journal of the case and destroy every sandbox it made. */
  cleanup: () => Promise<void>
}

const MESSAGES = [{ role: 'user' as const, content: 'Work through the steps' }]

/** The claim's signal mirrored onto the AbortController `chat()` takes. */
function controllerFor(signal: AbortSignal): AbortController {
  const controller = new AbortController()
  if (signal.aborted) controller.abort(signal.reason)
  else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true })
  return controller
}

/** Read SSE events off `body` until `stop(chunk)` holds (then hang up) or it ends. */
async function readUntil(body: ReadableStream<Uint8Array>, stop: (chunk: StreamChunk) => boolean): Promise<void> {
  const messages = sseMessages(body)
  for (let next = await messages.next(); !next.done; next = await messages.next()) {
    if (stop(JSON.parse(next.value.data) as StreamChunk)) {
      await messages.return(undefined).catch(() => undefined) // hang up; how the producer takes it is not this read's concern
      return
    }
  }
}

/** Poll `check` every 25 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`reaper conformance: timed out after ${timeoutMs} ms waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/**
 * Build the context of a reaper conformance run.
 *
 * @param base - The provider under test.
 * @param options - `stores` (default core's in-memory ones), `journalDir` (default the journal default), `timeoutMs` per case.
 */
export function createReaperConformanceContext(base: SandboxProvider, options: { stores?: ReaperStores; journalDir?: string; timeoutMs: number }): ReaperConformanceContext {
  const made: SandboxHandle[] = []
  const runIds: string[] = []
  const refuseDestroy = new Set<string>()
  const provider: SandboxProvider = {
    ...base,
    name: base.name,
    capabilities: () => base.capabilities(),
    create: async (input) => {
      const handle = await base.create(input)
      made.push(handle)
      return handle
    },
    resume: (input) => base.resume(input),
    destroy: async (input) => {
      if (refuseDestroy.has(input.id)) throw new Error(`reaper conformance: destroy of ${input.id} refused on purpose`)
      return base.destroy(input)
    },
  }
  const instances = new InMemorySandboxInstanceStore()
  const sandbox = defineSandbox({ id: 'reaper-conformance', provider, instances, fileEvents: false })
  const stores = options.stores ?? inMemoryReaperStores()
  const { journalDir, timeoutMs } = options
  const durabilityFor = (runId: string, attach: boolean) => ({ adapter: stores.log(runId), attach, ...(journalDir ? { journalDir } : {}) })
  let drives = 0

  const context: ReaperConformanceContext = {
    provider,
    instances,
    sandbox,
    stores,
    journalDir,
    refuseDestroy,
    timeoutMs,
    startDetached: async (label, script = {}) => {
      const runId = `reaper-kit-${label}-${randomUUID()}`
      const threadId = `reaper-kit-thread-${label}-${randomUUID()}`
      runIds.push(runId)
      await stores.runs.createOrResume({ runId, threadId, startedAt: Date.now() })
      const host = new AbortController()
      const stream = chat({
        adapter: reaperAgentAdapter(script),
        messages: MESSAGES,
        middleware: [withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, durability: durabilityFor(runId, false) })],
        runId,
        threadId,
        abortController: host,
      } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
      const response = toServerSentEventsResponse(stream, { abortController: host, durability: { adapter: stores.log(runId), batch: 1 } })
      const detachAfter = script.detachAfter ?? 1
      let seen = 0
      await readUntil(response.body!, (chunk) => chunk.type === 'TEXT_MESSAGE_CONTENT' && ++seen >= detachAfter)
      host.abort()
      let record: RunRecord | null = null
      await until(`run ${runId} was detached (detachedSince + sandboxKey on its record)`, async () => {
        record = await stores.runs.get(runId)
        return record?.detachedSince !== undefined && record.sandboxKey !== undefined
      }, timeoutMs / 2)
      // The detach is over once the host that started the run let its driver lease go (after its last record write).
      await Promise.race([
        stores.locks.withLock(runDriverLockKey(runId), async () => undefined),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`reaper conformance: the host that started ${runId} kept its driver lease after the detach`)), timeoutMs / 2).unref?.()),
      ])
      record = await stores.runs.get(runId)
      const sandboxKey = (record as RunRecord | null)!.sandboxKey!
      const instance = await instances.get(sandboxKey)
      const handle = instance ? await base.resume({ id: instance.providerSandboxId }) : null
      if (!handle) throw new Error(`reaper conformance: the sandbox of detached run ${runId} is gone; a detach must keep it`)
      return { runId, threadId, sandboxKey, handle, steps: script.steps ?? 3 }
    },
    finish: async (run) => {
      const touched = await run.handle.process.exec(`touch ${shellQuote(reaperMarker(run.runId))}`)
      if (touched.exitCode !== 0) throw new Error(`reaper conformance: could not write the marker of ${run.runId}: ${touched.stderr}`)
      await until(`the agent of ${run.runId} wrote its exit sentinel`, async () => (await probeRunExit({ handle: run.handle, runId: run.runId, ...(journalDir ? { journalDir } : {}) })).state === 'finished', timeoutMs / 2)
    },
    hasFinished: async (record) => {
      if (record.sandboxKey === undefined) return { state: 'unknown' }
      try {
        const instance = await instances.get(record.sandboxKey)
        if (instance === null) return { state: 'unknown' }
        const handle = await provider.resume({ id: instance.providerSandboxId })
        if (handle === null) return { state: 'unknown' }
        return await probeRunExit({ handle, runId: record.runId, ...(journalDir ? { journalDir } : {}) })
      } catch (error) {
        return { state: 'unknown', error }
      }
    },
    drive: (input) => {
      drives++
      return chat({
        adapter: reaperAgentAdapter(),
        messages: MESSAGES,
        middleware: [withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, durability: durabilityFor(input.runId, true) })],
        runId: input.runId,
        threadId: input.threadId,
        abortController: controllerFor(input.signal),
      } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
    },
    drives: () => drives,
    reclaim: sandboxReclaimer({ provider, instances, ...(journalDir ? { journalDir } : {}) }),
    storedChunks: async (runId) => (await stores.log(runId).snapshot()).map((entry) => entry.chunk),
    sandboxUp: async (handle) => (await base.resume({ id: handle.id })) !== null,
    cleanup: async () => {
      refuseDestroy.clear()
      const handles = made.splice(0)
      const ids = runIds.splice(0)
      const failures: string[] = []
      for (const handle of handles) {
        try {
          if ((await base.resume({ id: handle.id })) !== null) {
            // Stop each agent first, so its shell writes the sentinel before the journal is deleted (not after).
            for (const runId of ids) await endJournaledRun(handle, { runId, dir: journalDir }, () => undefined)
            if (ids.length > 0) await handle.process.exec(`rm -f ${ids.map((runId) => shellQuote(reaperMarker(runId))).join(' ')}`)
          }
          await base.destroy({ id: handle.id })
        } catch (error) {
          failures.push(`${handle.id}: ${error instanceof Error ? error.message : String(error)}`)
        }
      }
      if (failures.length > 0) throw new Error(`reaper conformance: cleaning up failed: ${failures.join('; ')}`)
    },
  }
  return context
}
