/**
 * Live mode (`ANTHROPIC_API_KEY` set) without the internet: the server is
 * pointed with `ANTHROPIC_BASE_URL` at a model server of the test's own
 * (the example's scripted mock, started here, behind a recording proxy that
 * notes each call's `x-api-key`), standing in for Anthropic's API. It proves the live wiring: no mock in the server, the key reaches the
 * model as the agent's `x-api-key` (delivered as a workspace secret), the
 * run completes, and the key appears nowhere in the run's log.
 */
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startOfflineModel, type OfflineModel } from '../src/server/model.js'
import { readRunLog, startServer, type AppServer } from './helpers/app.js'
import { SAMPLE_TOOL_CALLS } from './helpers/page.js'

const KEY = `sk-ant-test-${crypto.randomUUID()}`

describe('examples/sandbox-web in live mode (ANTHROPIC_API_KEY set)', () => {
  let model: OfflineModel
  let server: AppServer
  /** The proxy in front of the model: each call's path and `x-api-key`, as the agent sent them. */
  const calls: { path: string; key: string | undefined }[] = []
  const proxy = createServer((request, response) => {
    calls.push({ path: request.url ?? '', key: request.headers['x-api-key'] as string | undefined })
    const upstream = httpRequest({ host: '127.0.0.1', port: model.port, method: request.method, path: request.url, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(response)
    })
    upstream.on('error', () => response.destroy())
    request.pipe(upstream)
  })

  beforeAll(async () => {
    model = await startOfflineModel({ stepSeconds: 0, host: '127.0.0.1', port: 0, apiKey: KEY })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    const { port } = proxy.address() as AddressInfo
    server = await startServer({ env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` } })
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    proxy.closeAllConnections()
    await new Promise((resolve) => proxy.close(resolve))
    await model?.stop()
  })

  it('runs the task against the configured model with the key, and the key never reaches the transcript', async () => {
    expect(server.output()).toContain('live: the real API')
    const sample = (await (await server.api('/api/sample')).json()) as { task: string; mode: string }
    expect(sample.mode).toBe('live')

    const runId = `live-${Date.now()}`
    const response = await server.api(`/api/run?runId=${runId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId: `live-thread-${Date.now()}`, prompt: sample.task }), signal: AbortSignal.timeout(90_000) })
    const wire = await response.text()
    expect(response.status).toBe(200)

    const modelCalls = calls.filter((call) => call.path.startsWith('/v1/messages'))
    expect(modelCalls.length).toBeGreaterThanOrEqual(SAMPLE_TOOL_CALLS.length + 1)
    expect(modelCalls.filter((call) => call.key !== KEY)).toEqual([])

    const log = await readRunLog(server, runId)
    expect(log.filter((event) => event.chunk.type === 'TOOL_CALL_START').map((event) => event.chunk.toolCallId)).toEqual(SAMPLE_TOOL_CALLS)
    expect(log.at(-1)?.chunk.type).toBe('RUN_FINISHED')
    expect(wire).not.toContain(KEY)
    expect(JSON.stringify(log)).not.toContain(KEY)
    const status = (await (await server.api('/api/status')).json()) as { mode: string; runs: { runId: string; status: string }[] }
    expect(status.mode).toBe('live')
    expect(status.runs.find((run) => run.runId === runId)?.status).toBe('completed')
  }, 120_000)
})
