/**
 * The `RunController` example of spec 000 "Edge / serverless execution",
 * kept as the spec writes it (the `driveOne` function below, comments
 * shortened), run against a real `chat()`-shaped stream: the run completes,
 * `attach` from '-1' replays every chunk in order and ends when the log
 * closes, and the record is terminal.
 */
import { EventType, InMemoryRunStore, memoryStream } from '@tanstack/ai'
import type { StreamChunk } from '@tanstack/ai'
import { afterEach, expect, it, vi } from 'vitest'
import { RunController } from '../../src/index.js'

// ---- the spec's example ----
const runs = new InMemoryRunStore()

export async function driveOne(request: Request, runId: string, threadId: string, stream: AsyncIterable<StreamChunk>): Promise<void> {
  const controller = new RunController({
    runs,
    // A per-run FACTORY: memoryStream keys its log by the run the request names.
    durability: () => memoryStream(request),
  })

  const handle = controller.start({ runId, threadId, stream })
  // handle.runId, handle.done (resolves with the terminal RunRecord)

  // `attach` takes the runId FIRST; '-1' replays from the start.
  for await (const { offset, chunk } of controller.attach(runId, '-1')) {
    console.log(offset, chunk.type)
  }

  await handle.done
  await controller.drain() // await every in-flight run, e.g. inside waitUntil
}
// ---- end of the example ----

afterEach(() => vi.restoreAllMocks())

async function* agentTurn(runId: string, threadId: string): AsyncGenerator<StreamChunk> {
  const at = Date.now()
  yield { type: EventType.RUN_STARTED, runId, threadId, timestamp: at } as StreamChunk
  yield { type: EventType.TEXT_MESSAGE_START, messageId: 'm1', role: 'assistant', timestamp: at } as StreamChunk
  await new Promise((resolve) => setTimeout(resolve, 10))
  yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: 'Hello from the edge.', timestamp: at } as StreamChunk
  yield { type: EventType.TEXT_MESSAGE_END, messageId: 'm1', timestamp: at } as StreamChunk
  yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: at } as StreamChunk
}

it("spec 000's RunController example runs unchanged: the run completes and attach replays it in order", async () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined)
  const runId = `run-${crypto.randomUUID()}`
  const request = new Request(`https://app.example/api/run?runId=${runId}`)
  await driveOne(request, runId, 'thread-spec', agentTurn(runId, 'thread-spec'))

  const seen = log.mock.calls.map(([offset, type]) => [String(offset), type])
  // First the run-accepted CUSTOM chunk the run driver writes when it creates the record (core's RUN_ACCEPTED_EVENT), then the stream.
  expect(seen.map(([, type]) => type)).toEqual(['CUSTOM', 'RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'])
  expect(new Set(seen.map(([offset]) => offset)).size, 'one offset per chunk').toBe(seen.length)
  expect(await runs.get(runId)).toMatchObject({ runId, threadId: 'thread-spec', status: 'completed' })
})
