/**
 * `sandbox.file` is live: a file the agent makes while its adapter is silent
 * (a long tool call) reaches the chat() stream before the adapter's next
 * chunk, on local-process (native fs.watch) and on Docker (the poll). The
 * adapter merges `getSandboxRunChunks` into its output, as the harness run
 * loop does. The proof is ordering, not timing: the adapter stays silent
 * until the test has seen the chunk (a generous bound fails instead of hanging).
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { chat, EventType, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import { defineSandbox, getSandbox, getSandboxRunChunks, mergeChunkStreams, SANDBOX_FILE_EVENT, SandboxCapability, withSandbox, type SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { makeRoot } from './helpers/run-chat.js'

/** How long the adapter stays silent at most before it gives up waiting (the test then fails on order). */
const SILENCE_BOUND_MS = 20_000

type Custom = { type: 'CUSTOM'; name: string; value: any }

/**
 * A harness-like adapter: it creates `live.txt` through the sandbox, then is
 * silent until `resume` resolves (or the bound passes), then says `after`.
 */
function silentAgent(resume: Promise<void>): TextAdapter<any, any, any, any> {
  return {
    kind: 'text',
    name: 'silent-agent',
    model: 'test',
    requires: [SandboxCapability],
    '~types': undefined as never,
    async *chatStream(options: any) {
      const handle = getSandbox(options.capabilities)
      const { runId = 'r1', threadId } = options
      const c = (value: Record<string, unknown>) => ({ timestamp: Date.now(), ...value }) as unknown as StreamChunk
      async function* own() {
        yield c({ type: EventType.RUN_STARTED, runId, threadId })
        await handle.process.exec('echo made > live.txt')
        let timer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([resume, new Promise((resolve) => (timer = setTimeout(resolve, SILENCE_BOUND_MS)))])
        clearTimeout(timer)
        yield c({ type: EventType.TEXT_MESSAGE_START, messageId: 'm1', role: 'assistant' })
        yield c({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: 'after' })
        yield c({ type: EventType.TEXT_MESSAGE_END, messageId: 'm1' })
        yield c({ type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop' })
      }
      const side = getSandboxRunChunks(options.capabilities, { optional: true })
      yield* side ? mergeChunkStreams(own(), side) : own()
    },
    async structuredOutput() {
      throw new TypeError('not used')
    },
  } as TextAdapter<any, any, any, any>
}

/** Run the silent agent; resume it once the stream has carried the sandbox.file chunk of live.txt. */
async function runSilentAgent(provider: SandboxProvider, id: string): Promise<string[]> {
  const sandbox = defineSandbox({ id, provider, lifecycle: { reuse: 'none', snapshot: 'none' } })
  let resume!: () => void
  const resumed = new Promise<void>((resolve) => (resume = resolve))
  const seen: string[] = []
  for await (const chunk of chat({ adapter: silentAgent(resumed), threadId: `t-${id}`, messages: [{ role: 'user', content: 'make live.txt' }], middleware: [withSandbox(sandbox)] } as any) as AsyncIterable<StreamChunk>) {
    const custom = chunk as unknown as Custom
    if (custom.type === 'CUSTOM') seen.push(`${custom.name}${custom.name === SANDBOX_FILE_EVENT ? ` ${custom.value.type} ${custom.value.path.split('/').at(-1)}` : ''}`)
    else seen.push(chunk.type === 'TEXT_MESSAGE_CONTENT' ? `text ${chunk.delta}` : chunk.type)
    if (custom.type === 'CUSTOM' && custom.name === SANDBOX_FILE_EVENT && custom.value.path.endsWith('/live.txt')) resume()
  }
  return seen
}

function expectLiveOrder(seen: string[]): void {
  const file = seen.indexOf(`${SANDBOX_FILE_EVENT} create live.txt`)
  expect(file, `the file event reached the stream: ${seen.join(', ')}`).toBeGreaterThanOrEqual(0)
  expect(file, `before the adapter spoke again: ${seen.join(', ')}`).toBeLessThan(seen.indexOf('TEXT_MESSAGE_START'))
  expect(seen.filter((name) => name === 'sandbox.flush'), 'the internal tick never reaches the stream').toEqual([])
  expect(seen.at(-1)).toBe('RUN_FINISHED')
}

describe('live sandbox.file chunks (local-process, native fs.watch)', () => {
  const tmp = makeRoot('live-files')
  afterAll(() => {
    const left = tmp.entries()
    tmp.cleanup()
    expect(left, 'every sandbox directory is removed by the tests').toEqual([])
  })

  it('streams a file made while the adapter is silent before its next chunk', async () => {
    expectLiveOrder(await runSilentAgent(localProcessSandbox({ root: tmp.root }), 'live-local'))
  }, 60_000)
})

const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `live-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([BUSYBOX], { needsBridge: false })

describeWithDocker('live sandbox.file chunks (Docker, poll)', reason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`)
    await pruneDockerSandboxes({ labels: RUN })
    expect(left, 'every container was destroyed by the run').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  it('streams a file made while the adapter is silent before its next chunk', async () => {
    expectLiveOrder(await runSilentAgent(dockerSandbox({ image: BUSYBOX, labels: RUN, killGraceMs: 500 }), 'live-docker'))
  }, 60_000)
})
