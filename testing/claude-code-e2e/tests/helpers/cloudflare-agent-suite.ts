/**
 * The e2e suite of `createCloudflareSandboxAgent`, run once per mode, in
 * workerd (Miniflare) with the real `@cloudflare/sandbox` Durable Object and
 * the real `claude` CLI in a stand-in container against the fake model: a
 * trigger returns at once with the run id, the Coordinator drives the run
 * (do-drives: chat() in the object; colocated: the runner in the container)
 * into its Durable Object log, a client tails it over SSE and reconnects from
 * a cursor, the agent calls a chat() tool that runs in the Coordinator, a
 * cancel stops the run, a Coordinator restart mid-run loses and doubles
 * nothing, and a missing or wrong bearer is refused on every route.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { bundleContainerProgram, bundleWorker, cloudflareMissing, startCloudflareLab, type CloudflareLab } from '@testing/cloudflare-standin'
import { bridgeHostAddress, describeWithDocker } from '@testing/support/docker-engine'
import { claudeBinary, startFakeModel, type FakeModel } from '../../src/aimock.js'
import { normalizedFingerprints } from '../../src/takeover-trial.js'
import { BRIDGE_FIXTURES, toolResultsOf } from './bridge.js'
import { ofType, processesWithHome, waitFor } from './run-claude.js'

const CLI = '/opt/claude/claude'
/** The four-step durable job of the takeover suites (each step a 1.5 s Bash command in the sandbox), the bridge's tool turns, and a tool call that never returns by itself. */
const FIXTURES = [
  ...(JSON.parse(readFileSync(fileURLToPath(new URL('../../fixtures/durable-takeover.json', import.meta.url)), 'utf8')) as { fixtures: unknown[] }).fixtures,
  ...BRIDGE_FIXTURES,
  { match: { toolCallId: 'toolu_slow_lookup' }, response: { content: 'The slow lookup finished.' } },
  { match: { userMessage: 'Where is order SLOW-1?' }, response: { toolCalls: [{ id: 'toolu_slow_lookup', name: 'mcp__tanstack__lookup_order', arguments: { orderId: 'SLOW-1' } }] } },
]
const DURABLE_PROMPT = 'Run the durable job in four steps.'
/** The app's Worker of each mode, and the colocated runner module. */
const WORKERS = {
  'do-drives': fileURLToPath(new URL('./cloudflare-agent-worker.ts', import.meta.url)),
  colocated: fileURLToPath(new URL('./cloudflare-colocated-worker.ts', import.meta.url)),
}
const RUNNER = fileURLToPath(new URL('./colocated-runner.ts', import.meta.url))

/** Read an SSE response to its end: each event's id and chunk. */
async function tail(response: Response): Promise<{ id: number; chunk: StreamChunk }[]> {
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  const events: { id: number; chunk: StreamChunk }[] = []
  for (const block of (await response.text()).split('\n\n')) {
    const id = /^id: (\d+)$/m.exec(block)?.[1]
    const data = /^data: (.*)$/m.exec(block)?.[1]
    if (id !== undefined && data !== undefined) events.push({ id: Number(id), chunk: JSON.parse(data) as StreamChunk })
  }
  return events
}

/**
 * The suite for one mode. The Worker is tests/helpers/cloudflare-agent-worker.ts
 * (do-drives) or cloudflare-colocated-worker.ts with the runner module
 * colocated-runner.ts bundled and mounted into the container, beside this
 * machine's Node binary.
 */
export function cloudflareAgentSuite(mode: 'do-drives' | 'colocated'): void {
  const TOKEN = `token-${randomUUID()}`
  const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
  const dir = mkdtempSync(join(tmpdir(), `cc-cf-${mode}-`))
  let lab: CloudflareLab | undefined
  let model: FakeModel | undefined
  /** A run of this lab, for the routes that need one. */
  let someRunId = 'run-x'

  /** The Worker as the client (and the container) reach it. */
  const base = (): URL => lab!.containerUrl!
  const auth = { authorization: `Bearer ${TOKEN}` }

  /** POST a run; its id. */
  async function trigger(threadId: string, content: string): Promise<string> {
    const response = await fetch(new URL('runs', base()), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ threadId, messages: [{ role: 'user', content }] }) })
    expect(response.status).toBe(202)
    return ((await response.json()) as { runId: string }).runId
  }

  /** The run's record. */
  async function recordOf(runId: string): Promise<{ status: string; lastSeq: number; cancelRequested?: boolean }> {
    return (await (await fetch(new URL(`runs/${runId}`, base()), { headers: auth })).json()) as { status: string; lastSeq: number }
  }

  describeWithDocker(`createCloudflareSandboxAgent (${mode}) with the real CLI in a Cloudflare sandbox (stand-in)`, cloudflareReason, () => {
    beforeAll(async () => {
      model = await startFakeModel(FIXTURES as never, { host: (await bridgeHostAddress())!, vars: { stepSeconds: '1.5' } })
      const options = { executable: CLI, env: { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' } }
      const script = await bundleWorker(WORKERS[mode], join(dir, 'worker.js'))
      const mounts = [{ source: claudeBinary(), target: CLI, readOnly: true }]
      if (mode === 'colocated') {
        mounts.push({ source: await bundleContainerProgram(RUNNER, join(dir, 'runner', 'runner.mjs')), target: '/opt/runner/runner.mjs', readOnly: true })
        mounts.push({ source: realpathSync(process.execPath), target: '/opt/node/node', readOnly: true })
      }
      lab = await startCloudflareLab({
        script,
        bindings: { SANDBOX_LOG_LEVEL: 'error', RUN_TOKEN: TOKEN, CLAUDE_OPTIONS: JSON.stringify(options) },
        mounts,
        hostGateway: true,
        durableObjects: { Coordinator: 'Coordinator' },
        persist: join(dir, 'state'),
      })
    }, 180_000)

    afterAll(async () => {
      await model?.stop()
      await lab?.close()
      rmSync(dir, { recursive: true, force: true })
      expect(processesWithHome(home), 'no CLI process is left').toEqual([])
    }, 180_000)

    it('a trigger returns at once; the run is tailed over SSE to its end, with a chat() tool bridged from the Coordinator', async () => {
      const started = Date.now()
      const trigger = await fetch(new URL('runs', base()), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ threadId: 't-edge-1', messages: [{ role: 'user', content: 'Where is order A-17?' }] }) })
      expect(trigger.status).toBe(202)
      const { runId, threadId } = (await trigger.json()) as { runId: string; threadId: string }
      expect(threadId).toBe('t-edge-1')
      someRunId = runId
      expect(runId).toMatch(/^run-/)
      const record = (await (await fetch(new URL(`runs/${runId}`, base()), { headers: auth })).json()) as { status: string; lastSeq: number }
      expect(record.status, 'the trigger did not wait for the agent').toBe('running')
      expect(Date.now() - started).toBeLessThan(30_000)

      const events = await tail(await fetch(new URL(`runs/${runId}/events`, base()), { headers: auth }))
      const chunks = events.map((event) => event.chunk)
      expect(events.map((event) => event.id)).toEqual(events.map((_, index) => index))
      expect(ofType(chunks, 'RUN_ERROR')).toEqual([])
      expect(chunks.map((c) => (c.type === 'CUSTOM' ? `CUSTOM:${(c as { name: string }).name}` : c.type))).toContain('RUN_FINISHED')
      expect(ofType(chunks, 'TEXT_MESSAGE_CONTENT').map((c) => c.delta as string).join('')).toBe('Order A-17 has shipped.')
      expect(ofType(chunks, 'RUN_FINISHED').at(-1)).toBeDefined()

      // The tool ran in the Coordinator (workerd) and its value reached the model.
      expect(toolResultsOf(model!.requests().at(-1)!)).toEqual([{ toolCallId: 'toolu_bridge_lookup', content: JSON.stringify({ orderId: 'A-17', status: 'shipped', runtime: 'Cloudflare-Workers' }) }])

      const done = (await (await fetch(new URL(`runs/${runId}`, base()), { headers: auth })).json()) as { status: string; lastSeq: number; threadId: string }
      expect(done).toMatchObject({ status: 'completed', threadId: 't-edge-1', lastSeq: events.length - 1 })

      // A reconnect from a cursor gets exactly the events after it, by Last-Event-ID or ?after=.
      const cursor = Math.floor(events.length / 2)
      const byQuery = await tail(await fetch(new URL(`runs/${runId}/events?after=${cursor}`, base()), { headers: auth }))
      expect(byQuery).toEqual(events.slice(cursor + 1))
      const resumed = await tail(await fetch(new URL(`runs/${runId}/events`, base()), { headers: { ...auth, 'last-event-id': String(cursor) } }))
      expect(resumed).toEqual(events.slice(cursor + 1))

      // The run's sandbox was destroyed with it.
      expect(await waitFor(async () => (await lab!.containers()).length === 0), "the run's container was removed").toBe(true)
    }, 240_000)

    it('cancel is a request: it stops the run mid-tool, ends the tail, and leaves no container or CLI', async () => {
      const runId = await trigger('t-edge-cancel', 'Where is order SLOW-1?')
      const tailing = fetch(new URL(`runs/${runId}/events`, base()), { headers: auth }).then(tail)
      // The agent is in the tool call, which waits in the Coordinator until it is cancelled.
      expect(await waitFor(async () => (await recordOf(runId)).lastSeq >= 3, 120_000), 'the run got going').toBe(true)
      const cancel = await fetch(new URL(`runs/${runId}/cancel`, base()), { method: 'POST', headers: auth })
      expect(cancel.status).toBe(202)
      expect(await cancel.json()).toEqual({ runId, cancelRequested: true })
      const events = await tailing
      expect(events.map((event) => event.id)).toEqual(events.map((_, index) => index))
      expect(await recordOf(runId)).toMatchObject({ status: 'aborted', cancelRequested: true })
      expect(ofType(events.map((event) => event.chunk), 'TEXT_MESSAGE_CONTENT').map((c) => c.delta as string).join('')).not.toContain('slow lookup finished')
      // A second cancel of an ended run changes nothing.
      expect(await (await fetch(new URL(`runs/${runId}/cancel`, base()), { method: 'POST', headers: auth })).json()).toEqual({ runId, cancelRequested: false })
      expect(await waitFor(async () => (await lab!.containers()).length === 0, 60_000), "the run's container was removed").toBe(true)
      // and stays removed: a call still on its way to the destroyed sandbox would have the SDK start a new container.
      await new Promise((resolve) => setTimeout(resolve, 3_000))
      expect(await lab!.containers(), 'no container came back after the destroy').toEqual([])
      expect(await waitFor(() => processesWithHome(home).length === 0), 'no CLI process is left').toBe(true)
    }, 240_000)

    it('a Coordinator restart mid-run (Miniflare disposed and started again on the same storage) loses and doubles nothing', async () => {
      const ids = (runId: string, threadId: string) => ({ runId, threadId })
      const controlId = await trigger('t-edge-control', DURABLE_PROMPT)
      const control = await tail(await fetch(new URL(`runs/${controlId}/events`, base()), { headers: auth }))
      expect(ofType(control.map((event) => event.chunk), 'RUN_FINISHED').length).toBeGreaterThan(0)

      const runId = await trigger('t-edge-restart', DURABLE_PROMPT)
      // Somewhere inside the run: after the second step's command started.
      expect(await waitFor(async () => (await recordOf(runId)).lastSeq >= Math.floor(control.length / 2), 120_000), 'the run got half way').toBe(true)
      const seen = (await recordOf(runId)).lastSeq
      await lab!.restart()
      const events = await tail(await fetch(new URL(`runs/${runId}/events`, base()), { headers: auth }))
      expect(events.map((event) => event.id)).toEqual(events.map((_, index) => index))
      expect(events.length).toBeGreaterThan(seen + 1)
      expect(normalizedFingerprints(events.map((event) => event.chunk), ids(runId, 't-edge-restart'))).toEqual(normalizedFingerprints(control.map((event) => event.chunk), ids(controlId, 't-edge-control')))
      expect(await recordOf(runId)).toMatchObject({ status: 'completed' })
      expect(await waitFor(async () => (await lab!.containers()).length === 0, 60_000), "the run's container was removed").toBe(true)
    }, 360_000)

    it('refuses a missing or wrong bearer on every route, and names a bad trigger body', async () => {
      const routes: [string, string][] = [['POST', 'runs'], ['GET', 'runs/run-x'], ['GET', 'runs/run-x/events'], ['POST', 'runs/run-x/cancel']]
      for (const [method, path] of routes) {
        for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN.slice(0, -1) }] as Record<string, string>[]) {
          const response = await fetch(new URL(path, base()), { method, headers, ...(method === 'POST' ? { body: '{}' } : {}) })
          expect(response.status, `${method} ${path} with ${JSON.stringify(headers)}`).toBe(401)
        }
      }
      const bad = await fetch(new URL('runs', base()), { method: 'POST', headers: auth, body: JSON.stringify({ messages: [] }) })
      expect(bad.status).toBe(400)
      expect(await bad.text()).toMatch(/messages: expected at least one message/)
      expect((await fetch(new URL('runs/run-unknown', base()), { headers: auth })).status).toBe(404)
      if (mode === 'colocated') {
        // The tools route takes the run's own bearer only: neither none, nor a wrong one, nor the app's.
        for (const headers of [{}, { authorization: 'Bearer wrong' }, auth] as Record<string, string>[]) {
          const response = await fetch(new URL(`runs/${someRunId}/tools`, base()), { method: 'POST', headers, body: JSON.stringify({ toolName: 'lookup_order', args: { orderId: 'A-1' } }) })
          expect(response.status, `tools with ${JSON.stringify(headers)}`).toBe(401)
        }
      }
      // The agent's route of each mode is its own and serves nothing else, whatever its query says (found by a
      // newcomer: do-drives served the record, the events, cancel and even a new run's start through /tools).
      const agentRoute = mode === 'do-drives' ? 'tools' : 'tool-bridge/mcp'
      for (const [method, action, body] of [['GET', 'record'], ['GET', 'events'], ['POST', 'cancel'], ['POST', 'start', JSON.stringify({ runId: 'run-evil', threadId: 't', messages: [{ role: 'user', content: 'x' }] })]] as [string, string, string?][]) {
        const url = new URL(`runs/${someRunId}/${agentRoute}?runId=${someRunId}&action=${action}`, base())
        expect((await fetch(url, { method, ...(body ? { body } : {}) })).status, `${method} ${agentRoute}?action=${action}`).toBe(401)
        expect((await fetch(url, { method, headers: auth, ...(body ? { body } : {}) })).status, `${method} ${agentRoute}?action=${action} with the bearer`).toBe(404)
      }
      expect(await recordOf(someRunId)).toMatchObject({ status: 'completed' })
      expect((await fetch(new URL('runs/run-evil', base()), { headers: auth })).status).toBe(404)
    })

    it('names what is wrong with a trigger, a route or a method', async () => {
      const post = (body: string) => fetch(new URL('runs', base()), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body })
      const notJson = await post('{"messages": [')
      expect([notJson.status, await notJson.text()]).toEqual([400, expect.stringMatching(/not JSON/)])
      const robot = await post(JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] }))
      expect([robot.status, await robot.text()]).toEqual([400, expect.stringMatching(/messages\.0\.role: expected role 'user', 'assistant' or 'tool'/)])
      const noContent = await post(JSON.stringify({ messages: [{ role: 'user' }] }))
      expect([noContent.status, await noContent.text()]).toEqual([400, expect.stringMatching(/messages\.0\.content: expected content/)])
      const huge = await post(JSON.stringify({ messages: [{ role: 'user', content: 'y'.repeat(1_100_000) }] }))
      expect([huge.status, await huge.text()]).toEqual([413, expect.stringMatching(/over 1048576 bytes/)])
      const wrongMethod = await fetch(new URL(`runs/${someRunId}/events`, base()), { method: 'POST', headers: auth })
      expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([405, 'GET'])
      expect((await fetch(new URL(`runs/${someRunId}/nothing`, base()), { headers: auth })).status).toBe(404)
    })

    if (mode === 'do-drives') {
      it('an adapter factory that throws ends the run at once with a RUN_ERROR saying so', async () => {
        const runId = await trigger('t-adapter-throws', 'hello')
        const events = await tail(await fetch(new URL(`runs/${runId}/events`, base()), { headers: auth }))
        expect(ofType(events.map((event) => event.chunk), 'RUN_ERROR').map((c) => c.message as string)).toEqual([expect.stringMatching(/the adapter factory failed on purpose/)])
        expect(await recordOf(runId)).toMatchObject({ status: 'failed' })
      }, 60_000)
    }
  })
}

/** Why the suite cannot run here (no Docker engine, no stand-in image), or null. */
const cloudflareReason = (await cloudflareMissing()) ?? null
