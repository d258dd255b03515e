/**
 * The offline model: aimock answering Claude Code's Messages API from the
 * example's script (`fixtures/task.json`: four Bash steps that add
 * `multiply` to the sample repository, test it and note it in CHANGES.md;
 * and `SHOW_TASK`, one step that prints what those steps wrote).
 * The steps use paths relative to the agent's working directory, so one
 * script serves every sandbox. `FAILING_TASK` gets an API error; any other
 * task gets `OFFLINE_REPLY`, which says how to reach the real model. Owns the
 * mock's lifetime and the gate in front of it (only the agent, with the
 * launch's model key, reaches the Messages API; nothing reaches aimock's
 * control API).
 */
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { LLMock, type FixtureFileEntry } from '@copilotkit/aimock'

/** The task the script answers; the UI offers it as the default prompt. */
export const SAMPLE_TASK = 'Add a multiply(a, b) function to math.js with a test, note it in CHANGES.md, then run the tests.'

/**
 * The second scripted task: one Bash step that prints `CHANGES.md` and the end of `math.js`, so a run after the
 * sample (or after "Restore in a new sandbox") shows what its sandbox holds.
 */
export const SHOW_TASK = 'Show CHANGES.md and the end of math.js.'

/** The offline task the model answers with an API error, so a failed run can be seen (and tested). */
export const FAILING_TASK = 'Simulate a model failure.'

/** What the offline model answers to any task but the sample. */
export const OFFLINE_REPLY =
  'This server runs offline: its model is a local mock that only knows the sample task (adding multiply to math.js). ' +
  'Start the server with ANTHROPIC_API_KEY set to run any task against the real model.'

const FIXTURE = fileURLToPath(new URL('../../fixtures/task.json', import.meta.url))

/**
 * The key the agent sends the offline model: made once per data folder and
 * kept in it (`offline-model.key`, 0600 in the 0700 folder), so an agent a
 * previous launch started, still running detached, keeps reaching the model
 * after a restart. Not the page's access token: the agent sees this one.
 * @param dataDir - The app's data folder.
 */
export async function offlineModelKey(dataDir: string): Promise<string> {
  const file = join(dataDir, 'offline-model.key')
  const existing = await readFile(file, 'utf8').catch(() => '')
  if (/^[0-9a-f]{48}$/.test(existing.trim())) return existing.trim()
  const key = randomBytes(24).toString('hex')
  await writeFile(file, key, { mode: 0o600 })
  return key
}

/** A running mock model. */
export interface OfflineModel {
  /** The gate's port; the sandbox reaches the model as `http://<host>:<port>` with `x-api-key: <apiKey>`. */
  readonly port: number
  stop: () => Promise<void>
}

/** The only requests the gate passes on: Claude Code's Messages API (`/v1/messages`, `/v1/messages/count_tokens`). */
const MODEL_PATH = /^\/v1\/messages(?:\/count_tokens)?(?:\?|$)/

/**
 * Start the mock behind a gate on `port` (0: a free one). The mock itself
 * listens on a loopback port of its own; the gate passes on only `POST`s to
 * the Messages API that carry `apiKey` (as `x-api-key` or a bearer token), so
 * a web page the developer opens can neither reach aimock's control API
 * (`/__aimock/*`: reset the script, read every request) nor use the model (a
 * cross-site request cannot set that header). Everything else answers 404.
 * @param options.stepSeconds - How long each scripted step sleeps (the `{{stepSeconds}}` of the fixture).
 * @param options.host - Address the gate listens on: loopback for local-process, `0.0.0.0` for a bridged Docker sandbox.
 * @param options.apiKey - What the agent sends as its API key (`ANTHROPIC_API_KEY`).
 * @example
 * ```ts
 * const model = await startOfflineModel({ stepSeconds: 2, host: '127.0.0.1', port: 0, apiKey })
 * // ANTHROPIC_BASE_URL=http://127.0.0.1:${model.port} ANTHROPIC_API_KEY=${apiKey}
 * ```
 */
export async function startOfflineModel(options: { stepSeconds: number; host: string; port: number; apiKey: string }): Promise<OfflineModel> {
  const { stepSeconds, host, port, apiKey } = options
  const template = await readFile(FIXTURE, 'utf8')
  const file = JSON.parse(template.replaceAll('{{stepSeconds}}', String(stepSeconds))) as { fixtures: FixtureFileEntry[] }
  const mock = new LLMock({ port: 0, host: '127.0.0.1', strict: true, logLevel: 'silent' })
  // Paced like a fast model, so text visibly streams in deltas.
  mock.addFixturesFromJSON(file.fixtures.map((entry) => ({ streamingProfile: { ttft: 150, tps: 300 }, ...entry })))
  // A way to see a failed run offline: the model answers this task with an API error that is never retried (400).
  mock.addFixture({ match: { userMessage: FAILING_TASK, hasToolResult: false }, response: { error: { message: 'The offline model was asked to fail.', type: 'invalid_request_error' }, status: 400 } })
  // Last, so it answers only what the script does not, and only a task's first call: any other task gets a reply that
  // says why. A call later in a conversation that no step matches (a step cut off mid-stream by a restart) stays an
  // error, so the run fails instead of ending "completed" with the work half done.
  const firstCall = (request: { messages: { role: string }[] }) => !request.messages.some((message) => message.role === 'assistant')
  mock.addFixture({ match: { hasToolResult: false, predicate: firstCall }, response: { content: OFFLINE_REPLY }, streamingProfile: { ttft: 150, tps: 300 } })
  const mockPort = Number(new URL(await mock.start()).port)
  const gate = createServer((request, response) => {
    const key = request.headers['x-api-key'] ?? request.headers.authorization?.replace(/^Bearer /, '')
    if (request.method !== 'POST' || !MODEL_PATH.test(request.url ?? '') || key !== apiKey) {
      request.resume()
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      return
    }
    const upstream = httpRequest({ host: '127.0.0.1', port: mockPort, method: 'POST', path: request.url, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(response)
    })
    upstream.on('error', () => response.destroy())
    request.pipe(upstream)
  })
  try {
    await new Promise<void>((resolve, reject) => {
      gate.once('error', reject)
      gate.listen(port, host, resolve)
    })
  } catch (error) {
    await mock.stop()
    throw error
  }
  let stopped: Promise<void> | undefined
  const stop = async (): Promise<void> => {
    gate.closeAllConnections()
    await new Promise((resolve) => gate.close(resolve))
    await mock.stop()
  }
  return { port: (gate.address() as AddressInfo).port, stop: () => (stopped ??= stop()) }
}
