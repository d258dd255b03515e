/**
 * A `RunEventLog` on the Node side whose every call goes to one
 * `RunLogObject` of the run-log Worker (run-log-worker.ts) over HTTP: the
 * Durable Object log as core's bindings and the kits use it. `read` long-polls
 * the object, which waits for new events itself.
 */
import type { RunStatus, StreamChunk } from '@tanstack/ai'
import { encodeStreamChunks, type SandboxInstanceRecord, type SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { RunEventLogError, type RunEvent, type RunEventLog, type RunEventLogReadOptions, type RunLogPatch, type RunLogRecord } from '../../src/agent/vocabulary.js'
import type { ReadPage } from './run-log-worker.js'
import { unwrap, type Wire } from './wire.js'

/** ms one long poll of `read` waits in the object for a first event. */
const POLL_WAIT_MS = 2_000

/** The instance store of the Durable Object named `name` behind the Worker at `base`. */
export function remoteInstanceStore(base: string, name: string): SandboxInstanceStore {
  const call = caller(base, name)
  return {
    get: (key) => call<SandboxInstanceRecord | null>('instanceGet', [key]),
    upsert: async (record) => {
      await call('instanceUpsert', [record])
    },
    delete: async (key) => {
      await call('instanceDelete', [key])
    },
  }
}

function caller(base: string, name: string) {
  return async <T>(method: string, args: unknown[], signal?: AbortSignal): Promise<T> => {
    const response = await fetch(new URL(`__log/${encodeURIComponent(name)}/${method}`, base), { method: 'POST', body: JSON.stringify(args), ...(signal ? { signal } : {}) })
    if (!response.ok) throw new Error(`run-log worker: ${method} answered HTTP ${response.status}: ${await response.text()}`)
    return unwrap((await response.json()) as Wire<T>)
  }
}

/** The log of the Durable Object named `name` behind the Worker at `base`. */
export function remoteRunLog(base: string, name: string): RunEventLog & { putRaw(runId: string, record: unknown): Promise<void> } {
  const call = caller(base, name)
  return {
    open: (input) => call<RunLogRecord>('open', [input]),
    get: (runId) => call<RunLogRecord | null>('get', [runId]),
    // JSON drops a key whose value is undefined, which a patch uses to clear a field: those keys travel as a list.
    update: (runId, patch: RunLogPatch, options) =>
      call<RunLogRecord | null>('update', [runId, patch, options ?? null, Object.keys(patch).filter((key) => (patch as Record<string, unknown>)[key] === undefined)]),
    list: (filter?: { threadId?: string; status?: RunStatus }) => call<RunLogRecord[]>('list', [filter ?? {}]),
    // JSON has no undefined: an epoch option with `epoch: undefined` travels as {} and arrives as the same "no epoch" view.
    append: async (runId, chunks: readonly StreamChunk[], options) => {
      // A chunk JSON cannot hold cannot travel to the object either: refused here as the object refuses it, nothing sent.
      encodeStreamChunks(chunks, (message, cause) => new RunEventLogError('unserializable-chunk', runId, message, { cause }))
      return call<number[]>('append', [runId, chunks, options === undefined ? undefined : { epoch: options.epoch }])
    },
    close: (runId, options) => call<boolean>('close', [runId, options === undefined ? undefined : { epoch: options.epoch }]),
    snapshot: (runId) => call<RunEvent[]>('snapshot', [runId]),
    tail: (runId) => call<{ lastSeq: number; closed: boolean } | null>('tail', [runId]),
    putRaw: async (runId, record) => {
      await call('putRaw', [runId, record])
    },
    read: async function* (runId: string, options: RunEventLogReadOptions = {}) {
      let after = options.after ?? -1
      for (;;) {
        if (options.signal?.aborted) return
        let page: ReadPage
        try {
          page = await call<ReadPage>('readPage', [runId, after, POLL_WAIT_MS], options.signal)
        } catch (error) {
          if (options.signal?.aborted) return
          throw error
        }
        for (const event of page.events) {
          if (options.signal?.aborted) return
          after = event.seq
          yield event
        }
        if (page.ended) return
      }
    },
  }
}
