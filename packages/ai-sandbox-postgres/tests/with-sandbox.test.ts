// The README's example, run: a durable withSandbox on a real local-process
// sandbox with all four PostgreSQL stores wired. Store set "A" starts the run
// (POST route), store set "B" on its own pool over the same schema (what a
// second replica opens) serves the join (GET route) from the stored log and
// finds the sandbox record and the run record A wrote.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  chat,
  EventType,
  resumeServerSentEventsResponse,
  toServerSentEventsResponse,
  type AdapterYieldChunk,
  type StreamChunk,
  type TextAdapter,
} from '@tanstack/ai'
import { withLocks } from '@tanstack/ai/locks'
import { defineSandbox, getSandbox, SandboxCapability, withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { afterAll, expect, it } from 'vitest'
import type { PostgresStores } from '../src/index.js'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

const root = mkdtempSync(join(tmpdir(), 'pg-with-sandbox-'))

afterAll(() => {
  expect(readdirSync(root)).toEqual([])
  rmSync(root, { recursive: true, force: true })
  expect(existsSync(root)).toBe(false)
})

type EchoAdapter = TextAdapter<'echo', Record<string, never>, readonly ['text'], any>

/** A tiny adapter: runs `echo` in the run's sandbox and streams its stdout as text. */
function echoAdapter(): EchoAdapter {
  return {
    kind: 'text',
    name: 'echo',
    model: 'echo',
    requires: [SandboxCapability],
    '~types': undefined as unknown as EchoAdapter['~types'],
    async *chatStream(options): AsyncIterable<AdapterYieldChunk> {
      const handle = getSandbox(options.capabilities!)
      const runId = options.runId!
      const threadId = options.threadId!
      yield { type: EventType.RUN_STARTED, runId, threadId, timestamp: Date.now() } as StreamChunk
      const { stdout } = await handle.process.exec('echo "hello from the sandbox"')
      yield { type: EventType.TEXT_MESSAGE_START, messageId: 'm1', role: 'assistant', timestamp: Date.now() } as StreamChunk
      yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: stdout.trim(), timestamp: Date.now() } as StreamChunk
      yield { type: EventType.TEXT_MESSAGE_END, messageId: 'm1', timestamp: Date.now() } as StreamChunk
      yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: Date.now() } as AdapterYieldChunk
    },
    async structuredOutput() {
      throw new TypeError('no structured output')
    },
  }
}

// The two routes of the README, over the stores of "this process".
async function startRun(stores: PostgresStores, sandbox: SandboxDefinition, request: Request, threadId: string): Promise<Response> {
  const runId = request.headers.get('X-Run-Id')!
  await stores.runs.createOrResume({ runId, threadId, startedAt: Date.now() })
  const log = stores.stream(request) // one log, handed to withSandbox and the transport
  const controller = new AbortController()
  const stream = chat({
    adapter: echoAdapter(),
    messages: [{ role: 'user', content: 'say hello' }],
    threadId,
    runId,
    abortController: controller,
    middleware: [withLocks(stores.locks), withSandbox(sandbox, { runs: stores.runs, instances: stores.instances, durability: { adapter: log } })],
  })
  return toServerSentEventsResponse(stream, { abortController: controller, durability: { adapter: log } })
}

function joinRun(stores: PostgresStores, request: Request): Response {
  return resumeServerSentEventsResponse({ adapter: stores.stream(request) })
}

function sseData(body: string): Array<Record<string, unknown>> {
  return [...body.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>)
}

describePostgres('a durable withSandbox over the PostgreSQL stores', (url) => {
  const schemas = tempSchemas(url)

  it('stores the log, the sandbox record and the run record where another pool serves them', async () => {
    const schema = schemas.schema()
    const a = await schemas.open({ schema })
    const b = await schemas.open({ schema })
    const sandbox = defineSandbox({ id: 'postgres-readme', provider: localProcessSandbox({ root }), lifecycle: { reuse: 'thread' } })
    const threadId = 'thread-1'
    const runId = 'run-1'
    const key = sandbox.key({ threadId, runId })
    try {
      const produced = await (await startRun(a, sandbox, new Request('http://app.test/api/run', { method: 'POST', headers: { 'X-Run-Id': runId } }), threadId)).text()
      const producedData = sseData(produced)
      expect(producedData.find((c) => c.type === 'TEXT_MESSAGE_CONTENT')?.delta).toBe('hello from the sandbox')
      expect(producedData.at(-1)?.type).toBe('RUN_FINISHED')

      // Another replica: the whole run from the database, byte for byte.
      const joined = await joinRun(b, new Request(`http://app.test/api/run?runId=${runId}&offset=-1`)).text()
      expect(joined).toBe(produced)
      // The sandbox record ensure wrote, and the run record.
      const instance = await b.instances.get(key)
      expect(instance).toMatchObject({ key, provider: 'local-process', threadId })
      expect(existsSync(join(root, instance!.providerSandboxId))).toBe(true)
      // withSandbox settled the record of the run it started: completed, so the thread has no active run left.
      expect(await b.runs.get(runId)).toMatchObject({ runId, threadId, status: 'completed' })
      expect(await b.runs.findActiveRun(threadId)).toBeNull()
    } finally {
      await sandbox.destroy({ key, instances: a.instances })
    }
    expect(await b.instances.get(key)).toBeNull()
  })
})
