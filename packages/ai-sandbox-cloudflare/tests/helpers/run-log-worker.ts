/**
 * The Worker of the Durable Object run-log suite: a SQLite-backed Durable
 * Object (`RunLogObject`) that keeps a `DurableObjectRunEventLog` over its
 * own storage and answers one method per log call, reached from Node as
 * `POST /__log/<object name>/<method>` with the arguments as a JSON array
 * (results and typed errors as wire.ts data). `read` is a long poll
 * (`readPage`): the events after a cursor, waiting up to `waitMs` for the
 * first one inside the object, so a reader blocked in the object is woken by
 * an append another request makes. `putRaw` stores a record as given (the
 * legacy layout). `instance…` reach the object's `durableObjectInstanceStore`.
 */
import { DurableObject } from 'cloudflare:workers'
import type { StreamChunk } from '@tanstack/ai'
import { DurableObjectRunEventLog, durableObjectInstanceStore } from '../../src/agent.js'
import type { SandboxInstanceRecord } from '@tanstack/ai-sandbox'
import type { RunEvent } from '../../src/agent.js'
import { settle } from './wire.js'

export { Sandbox } from '../../src/index.js'

interface Env {
  RunLog: { idFromName(name: string): unknown; get(id: unknown): { call(method: string, args: unknown[]): Promise<unknown> } }
}

/** One page of a long-poll read. */
export interface ReadPage {
  readonly events: RunEvent[]
  /** The log ended (closed, or the run terminal) after these events. */
  readonly ended: boolean
}

export class RunLogObject extends DurableObject {
  readonly log = new DurableObjectRunEventLog(this.ctx.storage)
  readonly instances = durableObjectInstanceStore(this.ctx.storage)

  async call(method: string, args: unknown[]): Promise<unknown> {
    return settle(async () => {
      const [runId, a, b] = args as [string, unknown, unknown]
      switch (method) {
        case 'open':
          return this.log.open(args[0] as Parameters<DurableObjectRunEventLog['open']>[0])
        case 'get':
          return this.log.get(runId)
        case 'update': {
          const patch: Record<string, unknown> = { ...(a as object) }
          for (const key of args[3] as string[]) patch[key] = undefined
          return this.log.update(runId, patch, (b ?? undefined) as never)
        }
        case 'list':
          return this.log.list(args[0] as never)
        case 'append':
          return this.log.append(runId, a as StreamChunk[], b as never)
        case 'close':
          return this.log.close(runId, a as never)
        case 'snapshot':
          return this.log.snapshot(runId)
        case 'tail':
          return this.log.tail(runId)
        case 'readPage':
          return this.readPage(runId, a as number, b as number)
        case 'instanceGet':
          return this.instances.get(runId)
        case 'instanceUpsert':
          return this.instances.upsert(args[0] as SandboxInstanceRecord)
        case 'instanceDelete':
          return this.instances.delete(runId)
        case 'putRaw':
          this.ctx.storage.sql.exec('INSERT INTO tsb_run_records (run_id, thread_id, status, record) VALUES (?, ?, ?, ?)', runId, '', String((a as { status: string }).status), JSON.stringify(a))
          return null
        default:
          throw new Error(`run-log worker: no method ${method}`)
      }
    })
  }

  private async readPage(runId: string, after: number, waitMs: number): Promise<ReadPage> {
    const stop = new AbortController()
    const timer = setTimeout(() => stop.abort(), waitMs)
    const events: RunEvent[] = []
    let ended: boolean
    try {
      for await (const event of this.log.read(runId, { after, signal: stop.signal })) {
        events.push(event)
        // What is stored already arrives without a wait; stop at the next turn of the event loop.
        if (events.length === 1) setTimeout(() => stop.abort(), 0)
      }
      ended = !stop.signal.aborted
    } finally {
      clearTimeout(timer)
    }
    return { events, ended }
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const match = /^\/__log\/([^/]+)\/([A-Za-z]+)$/.exec(new URL(request.url).pathname)
    if (request.method !== 'POST' || !match) return new Response('not found', { status: 404 })
    const stub = env.RunLog.get(env.RunLog.idFromName(decodeURIComponent(match[1]!)))
    const result = await stub.call(match[2]!, (await request.json()) as unknown[])
    return Response.json(result)
  },
}
