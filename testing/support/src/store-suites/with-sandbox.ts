/**
 * The README's example, run over a package's four stores: a durable
 * withSandbox on a real local-process sandbox. Store set "A" starts the run
 * (the POST route), store set "B" on the same place (what a second process or
 * replica opens) serves the join (the GET route) from the stored log and finds
 * the sandbox record and the run record A wrote. Also owns
 * {@link sandboxAdapter}, the tiny adapter shape such tests build on.
 */
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
import type { StorePlaces, StoreTarget, SuiteStores } from './target.js'

/** A text adapter named `N` that requires the sandbox capability. */
export type SandboxTextAdapter<N extends string> = TextAdapter<N, Record<string, never>, readonly ['text'], any>

/**
 * A text adapter that requires the sandbox capability and streams what
 * `chatStream` yields; it has no structured output.
 * @param name Its name and model.
 * @param chatStream The run: `getSandbox(options.capabilities!)` is the run's sandbox.
 */
export function sandboxAdapter<N extends string>(name: N, chatStream: SandboxTextAdapter<N>['chatStream']): SandboxTextAdapter<N> {
  return {
    kind: 'text',
    name,
    model: name,
    requires: [SandboxCapability],
    '~types': undefined as unknown as SandboxTextAdapter<N>['~types'],
    chatStream,
    async structuredOutput() {
      throw new TypeError('no structured output')
    },
  }
}

/** Runs `echo` in the run's sandbox and streams its stdout as text. */
const echoAdapter = (): SandboxTextAdapter<'echo'> =>
  sandboxAdapter('echo', async function* (options): AsyncIterable<AdapterYieldChunk> {
    const handle = getSandbox(options.capabilities!)
    const runId = options.runId!
    const threadId = options.threadId!
    yield { type: EventType.RUN_STARTED, runId, threadId, timestamp: Date.now() } as StreamChunk
    const { stdout } = await handle.process.exec('echo "hello from the sandbox"')
    yield { type: EventType.TEXT_MESSAGE_START, messageId: 'm1', role: 'assistant', timestamp: Date.now() } as StreamChunk
    yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: stdout.trim(), timestamp: Date.now() } as StreamChunk
    yield { type: EventType.TEXT_MESSAGE_END, messageId: 'm1', timestamp: Date.now() } as StreamChunk
    yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: Date.now() } as AdapterYieldChunk
  })

// The two routes of the README, over the stores of "this process".
async function startRun(stores: SuiteStores, sandbox: SandboxDefinition, request: Request, threadId: string): Promise<Response> {
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

function joinRun(stores: SuiteStores, request: Request): Response {
  return resumeServerSentEventsResponse({ adapter: stores.stream(request) })
}

function sseData(body: string): Array<Record<string, unknown>> {
  return [...body.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>)
}

/**
 * Register the README example over `target`'s stores (see the module
 * header). Every sandbox it makes is destroyed, and its root folder checked
 * empty and removed after the file.
 */
export function runWithSandboxSuite<S extends SuiteStores, P extends StorePlaces<S>>(target: StoreTarget<S, P>): void {
  const root = mkdtempSync(join(tmpdir(), `${target.prefix}-with-sandbox-`))
  afterAll(() => {
    expect(readdirSync(root)).toEqual([])
    rmSync(root, { recursive: true, force: true })
    expect(existsSync(root)).toBe(false)
  })

  target.describe(`a durable withSandbox over the ${target.label} stores`, (places) => {
    it(`stores the log, the sandbox record and the run record where ${target.words.peer} serves them`, async () => {
      const place = places.place()
      const a = await places.open({ place })
      const b = await places.open({ place })
      const sandbox = defineSandbox({ id: `${target.prefix}-readme`, provider: localProcessSandbox({ root }), lifecycle: { reuse: 'thread' } })
      const threadId = 'thread-1'
      const runId = 'run-1'
      const key = sandbox.key({ threadId, runId })
      try {
        const produced = await (await startRun(a, sandbox, new Request('http://app.test/api/run', { method: 'POST', headers: { 'X-Run-Id': runId } }), threadId)).text()
        const producedData = sseData(produced)
        expect(producedData.find((c) => c.type === 'TEXT_MESSAGE_CONTENT')?.delta).toBe('hello from the sandbox')
        expect(producedData.at(-1)?.type).toBe('RUN_FINISHED')

        // Another process: the whole run from the stored log, byte for byte.
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
}
