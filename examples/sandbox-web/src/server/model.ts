/**
 * The offline model: aimock answering Claude Code's Messages API from the
 * example's script (`fixtures/task.json`: four Bash steps that add
 * `multiply` to the sample repository, test it and note it in CHANGES.md).
 * The steps use paths relative to the agent's working directory, so one
 * script serves every sandbox. `FAILING_TASK` gets an API error; any other
 * task gets `OFFLINE_REPLY`, which says how to reach the real model. Owns the mock's lifetime only.
 */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { LLMock, type FixtureFileEntry } from '@copilotkit/aimock'

/** The task the script answers; the UI offers it as the default prompt. */
export const SAMPLE_TASK = 'Add a multiply(a, b) function to math.js with a test, note it in CHANGES.md, then run the tests.'

/** The offline task the model answers with an API error, so a failed run can be seen (and tested). */
export const FAILING_TASK = 'Simulate a model failure.'

/** What the offline model answers to any task but the sample. */
export const OFFLINE_REPLY =
  'This server runs offline: its model is a local mock that only knows the sample task (adding multiply to math.js). ' +
  'Start the server with ANTHROPIC_API_KEY set to run any task against the real model.'

const FIXTURE = fileURLToPath(new URL('../../fixtures/task.json', import.meta.url))

/** A running mock model. */
export interface OfflineModel {
  /** Its port; the sandbox reaches it as `http://<host>:<port>`. */
  readonly port: number
  stop: () => Promise<void>
}

/**
 * Start the mock on `port` (0: a free one).
 * @param stepSeconds - How long each scripted step sleeps (the `{{stepSeconds}}` of the fixture).
 * @param host - Address to listen on: loopback for local-process, `0.0.0.0` for a bridged Docker sandbox.
 * @example
 * ```ts
 * const model = await startOfflineModel(2, '127.0.0.1', 0)
 * // ANTHROPIC_BASE_URL=http://127.0.0.1:${model.port}
 * ```
 */
export async function startOfflineModel(stepSeconds: number, host: string, port: number): Promise<OfflineModel> {
  const template = await readFile(FIXTURE, 'utf8')
  const file = JSON.parse(template.replaceAll('{{stepSeconds}}', String(stepSeconds))) as { fixtures: FixtureFileEntry[] }
  const mock = new LLMock({ port, host, strict: true, logLevel: 'silent' })
  // Paced like a fast model, so text visibly streams in deltas.
  mock.addFixturesFromJSON(file.fixtures.map((entry) => ({ streamingProfile: { ttft: 150, tps: 300 }, ...entry })))
  // A way to see a failed run offline: the model answers this task with an API error that is never retried (400).
  mock.addFixture({ match: { userMessage: FAILING_TASK, hasToolResult: false }, response: { error: { message: 'The offline model was asked to fail.', type: 'invalid_request_error' }, status: 400 } })
  // Last, so it answers only what the script does not, and only a task's first call: any other task gets a reply that
  // says why. A call later in a conversation that no step matches (a step cut off mid-stream by a restart) stays an
  // error, so the run fails instead of ending "completed" with the work half done.
  const firstCall = (request: { messages: { role: string }[] }) => !request.messages.some((message) => message.role === 'assistant')
  mock.addFixture({ match: { hasToolResult: false, predicate: firstCall }, response: { content: OFFLINE_REPLY }, streamingProfile: { ttft: 150, tps: 300 } })
  const url = await mock.start()
  let stopped: Promise<void> | undefined
  return { port: Number(new URL(url).port), stop: () => (stopped ??= mock.stop()) }
}
