/**
 * The launcher's offline model: aimock answering Claude Code's Messages API
 * from fixtures/task.json (the sample task: ask the Worker's order tool about
 * order A-17, write a note about it in the workspace, say so), any other task
 * with a reply saying only the sample is scripted. The sandbox container
 * reaches it on the Docker bridge's address; a gate there passes on only
 * `POST /v1/messages` carrying the launch's model key, so nothing else on
 * this machine (another container, a web page) reaches aimock's control API
 * (`/__aimock/*`, which rewrites the script). Owns the mock's lifetime.
 */
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { LLMock, type FixtureFileEntry } from '@copilotkit/aimock'

/** The task the script answers; the page offers it as its default. */
export const SAMPLE_TASK = 'Where is order A-17? Write what you find to order-A-17.md.'

/** What the offline model answers to any task but the sample. */
export const OFFLINE_REPLY =
  'This launch runs offline: its model is a local mock that only knows the sample task (order A-17). ' +
  'Start the launcher with ANTHROPIC_API_KEY set to give the agent any task with the real model.'

const FIXTURE = fileURLToPath(new URL('../fixtures/task.json', import.meta.url))

/** Paced like a fast model, so the page shows text arriving in pieces. */
const STREAMING = { ttft: 150, tps: 300 }

/** A running offline model. */
export interface OfflineModel {
  /** The gate's port on `host`; the agent calls `http://<host>:<port>` with `x-api-key: <apiKey>`. */
  readonly port: number
  /** The key the gate requires, made for this launch; the agent gets it as its ANTHROPIC_API_KEY. */
  readonly apiKey: string
  /** Close the gate and the mock. Safe to call twice. */
  stop: () => Promise<void>
}

/** The only requests the gate passes on: the Messages API (`/v1/messages`, `/v1/messages/count_tokens`). */
const MODEL_PATH = /^\/v1\/messages(?:\/count_tokens)?(?:\?|$)/

/**
 * Start the mock (on a loopback port of its own) behind its gate (on `host`, a free port).
 * @param options.host - The address the gate listens on: the Docker bridge's, so the sandbox container reaches it.
 * @param options.stepSeconds - How long the sample's Bash step sleeps (the fixture's `{{stepSeconds}}`), so a run
 *   lasts long enough to reload the page or stop it.
 * @returns The running model; `stop()` it when done.
 * @throws when the fixture file is unreadable or the gate cannot listen on `host`.
 * @example
 * ```ts
 * const model = await startOfflineModel({ host: '172.17.0.1', stepSeconds: 3 })
 * // ANTHROPIC_BASE_URL=http://host.docker.internal:${model.port} ANTHROPIC_API_KEY=${model.apiKey}
 * ```
 */
export async function startOfflineModel(options: { host: string; stepSeconds: number }): Promise<OfflineModel> {
  const template = await readFile(FIXTURE, 'utf8')
  const { fixtures } = JSON.parse(template.replaceAll('{{stepSeconds}}', String(options.stepSeconds))) as { fixtures: FixtureFileEntry[] }
  const mock = new LLMock({ port: 0, host: '127.0.0.1', strict: true, logLevel: 'silent' })
  mock.addFixturesFromJSON(fixtures.map((entry) => ({ streamingProfile: STREAMING, ...entry })))
  // Last, so it answers only what the script does not, and only a conversation's first call.
  const firstCall = (request: { messages: { role: string }[] }) => !request.messages.some((message) => message.role === 'assistant')
  mock.addFixture({ match: { hasToolResult: false, predicate: firstCall }, response: { content: OFFLINE_REPLY }, streamingProfile: STREAMING })
  const mockPort = Number(new URL(await mock.start()).port)
  const apiKey = randomBytes(24).toString('hex')
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
      gate.listen(0, options.host, resolve)
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
  return { port: (gate.address() as AddressInfo).port, apiKey, stop: () => (stopped ??= stop()) }
}
