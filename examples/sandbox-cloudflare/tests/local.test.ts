/**
 * The example as its launcher runs it (`startLocal` of src/local.ts, which
 * `pnpm dev` calls): src/worker.ts in workerd under Miniflare, the real
 * `@cloudflare/sandbox` Durable Object starting stand-in containers with the
 * real Claude Code CLI in them, the offline mock model. Over the API: a run is
 * triggered, tailed, dropped mid-way and resumed with Last-Event-ID, which
 * gives exactly the rest. In chromium: the printed address opens the page,
 * the sample task streams in, a reload mid-run ends with the whole run drawn
 * once, and Stop stops a second run. One launch serves every case; closing it
 * removes its containers (the lab checks) and its temp folder. And, without
 * Docker, wrangler.jsonc and the Dockerfile agree with the Worker.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import type { Page, Request as BrowserRequest } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLOUDFLARE_IMAGE, cloudflareMissing } from '@testing/cloudflare-standin'
import { containerExists, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { sseMessages } from '@testing/support/sse-client'
import { startLocal, type LocalApp } from '../src/local.js'
import { SAMPLE_TASK } from '../src/offline-model.js'
import { itInBrowser, launchChromium } from './helpers/browser.js'

const EXAMPLE = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url))

/** What the sample run says, message by message (fixtures/task.json). */
const SAMPLE_TEXTS = [
  "I'll ask the order service about A-17.",
  "The order service says A-17 has shipped. I'll write that down in the workspace.",
  'Done. Order A-17 shipped with DHL on 2 June, tracking number JD014600006281230000; the note is in `order-A-17.md`.',
]
const SAMPLE_TOOL_CALLS = ['toolu_cf_1_lookup', 'toolu_cf_2_note']

interface LogEvent {
  id: number
  chunk: { type: string; [field: string]: unknown }
}

const reason = (await cloudflareMissing()) ?? (await dockerMissing([]))
const ownTempDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith('sandbox-cloudflare-'))

/** Poll `check` every 250 ms until it holds or `ms` pass. */
async function waitFor(check: () => Promise<boolean>, ms = 60_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 250))) if (await check()) return true
  return false
}

describe('the deploy configuration', () => {
  it('wrangler.jsonc binds what src/worker.ts exports and reads, and the Dockerfile installs the CLI version the launcher mounts', () => {
    // Full-line comments only in this file, so dropping them leaves JSON.
    const config = JSON.parse(readFileSync(EXAMPLE('wrangler.jsonc'), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as Record<string, any>
    expect(config.main).toBe('src/worker.ts')
    expect(config.compatibility_flags).toContain('nodejs_compat')
    expect(config.durable_objects.bindings).toEqual(expect.arrayContaining([{ name: 'Coordinator', class_name: 'Coordinator' }, { name: 'Sandbox', class_name: 'Sandbox' }]))
    expect(config.migrations[0].new_sqlite_classes).toEqual(expect.arrayContaining(['Coordinator', 'Sandbox']))
    expect(config.containers).toMatchObject([{ class_name: 'Sandbox', image: './Dockerfile' }])
    expect(config.secrets.required.sort()).toEqual(['ANTHROPIC_API_KEY', 'RUN_TOKEN'])
    expect(config.vars.CLAUDE_MODEL).toBeTruthy()
    const worker = readFileSync(EXAMPLE('src/worker.ts'), 'utf8')
    expect(worker).toContain('export const { Coordinator, Sandbox } = agent')
    for (const name of [...config.secrets.required, ...Object.keys(config.vars)]) expect(worker, `src/worker.ts reads env.${name}`).toContain(`env.${name}`)
    const cli = (JSON.parse(readFileSync(EXAMPLE('package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies['@anthropic-ai/claude-code']
    expect(readFileSync(EXAMPLE('Dockerfile'), 'utf8')).toContain(`@anthropic-ai/claude-code@${cli}`)
    expect(readFileSync(EXAMPLE('Dockerfile'), 'utf8')).toContain('FROM docker.io/cloudflare/sandbox:0.12.1')
  })
})

describeWithDocker('examples/sandbox-cloudflare through its launcher (workerd, stand-in containers, the real CLI, the mock model)', reason, () => {
  let app: LocalApp
  const printed: string[] = []
  const tempBefore = ownTempDirs()
  /** Every container this launch's runs were seen with, to check none is left. */
  const seenContainers = new Set<string>()

  const api = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${app.token}`)
    return fetch(new URL(path, app.url), { ...init, headers })
  }
  const recordOf = async (runId: string) => (await (await api(`runs/${runId}`)).json()) as { status: string; lastSeq: number; cancelRequested?: boolean }
  const noteContainers = async () => {
    for (const name of await app.lab.containers()) seenContainers.add(name)
  }

  beforeAll(async () => {
    app = await startLocal({ stepSeconds: 3, print: (line) => printed.push(line) })
  }, 120_000)

  afterAll(async () => {
    // close() disposes of Miniflare, removes the lab's containers and throws if one is left.
    await app?.close()
    for (const name of seenContainers) expect(await containerExists(name), `container ${name} is gone`).toBe(false)
    expect(ownTempDirs().filter((name) => !tempBefore.includes(name)), "the launcher's temp folder is gone").toEqual([])
  }, 120_000)

  it('prints the address to open; the page loads without the token, the API refuses a request without it', async () => {
    expect(printed[0]).toBe(`listening ${app.url.origin} (offline: the local mock model; sandboxes from the stand-in image ${CLOUDFLARE_IMAGE})`)
    expect(printed[1]).toBe(`open ${app.url.origin}/?token=${app.token}`)
    const page = await fetch(app.url)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const html = await page.text()
    expect(html).toContain('data-testid="start"')
    expect(html).not.toContain(app.token)
    const refused = await fetch(new URL('runs', app.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: SAMPLE_TASK }] }) })
    expect(refused.status).toBe(401)
  })

  it('a run triggered over the API is tailed to RUN_FINISHED; dropped mid-run, a reconnect with Last-Event-ID gets exactly the rest', async () => {
    const trigger = await api('runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: SAMPLE_TASK }] }) })
    expect(trigger.status).toBe(202)
    const { runId } = (await trigger.json()) as { runId: string }

    // The first connection reads until the Worker's tool has answered, then hangs up, as a dropped connection does.
    const head: LogEvent[] = []
    for await (const { id, data } of sseMessages((await api(`runs/${runId}/events`)).body!)) {
      head.push({ id: Number(id), chunk: JSON.parse(data) as LogEvent['chunk'] })
      if (head.at(-1)!.chunk.type === 'TOOL_CALL_RESULT') break
    }
    expect((await recordOf(runId)).status, 'the connection dropped while the run went on').toBe('running')
    await noteContainers()

    const readAll = async (headers: Record<string, string> = {}) => {
      const events: LogEvent[] = []
      for await (const { id, data } of sseMessages((await api(`runs/${runId}/events`, { headers })).body!)) events.push({ id: Number(id), chunk: JSON.parse(data) as LogEvent['chunk'] })
      return events
    }
    const rest = await readAll({ 'last-event-id': String(head.at(-1)!.id) })
    const whole = await readAll()
    expect([...head, ...rest]).toEqual(whole)
    expect(whole.map((event) => event.id)).toEqual(whole.map((_, index) => index))
    const chunks = whole.map((event) => event.chunk)
    expect(chunks.filter((chunk) => chunk.type === 'RUN_ERROR')).toEqual([])
    expect(chunks.at(-1)?.type).toBe('RUN_FINISHED')
    const texts = new Map<unknown, string>()
    for (const chunk of chunks) if (chunk.type === 'TEXT_MESSAGE_CONTENT') texts.set(chunk.messageId, (texts.get(chunk.messageId) ?? '') + String(chunk.delta))
    expect([...texts.values()]).toEqual(SAMPLE_TEXTS)
    // The chat() tool ran in the Coordinator (workerd), and the agent in the container got its answer.
    const lookup = chunks.find((chunk) => chunk.type === 'TOOL_CALL_RESULT' && chunk.toolCallId === 'toolu_cf_1_lookup')
    expect(JSON.parse(lookup!.content as string)).toMatchObject({ orderId: 'A-17', status: 'shipped', carrier: 'DHL', answeredBy: 'Cloudflare-Workers' })
    expect(await recordOf(runId)).toMatchObject({ status: 'completed', lastSeq: whole.length - 1 })
    expect(await waitFor(async () => (await app.lab.containers()).length === 0), "the run's sandbox container was removed").toBe(true)
  }, 90_000)

  itInBrowser(
    'in chromium: the sample task streams in, a reload mid-run ends with the whole run drawn once, and Stop stops a second run',
    async () => {
      const browser = await launchChromium()
      try {
        const page = await (await browser.newContext()).newPage()
        const eventRequests: { runId: string; lastEventId: string | undefined }[] = []
        page.on('request', (request: BrowserRequest) => {
          const match = /\/runs\/([^/]+)\/events$/.exec(new URL(request.url()).pathname)
          if (match) eventRequests.push({ runId: match[1]!, lastEventId: request.headers()['last-event-id'] })
        })
        const status = (page: Page) => page.getAttribute('[data-testid=run-status]', 'data-status')
        const waitForStatus = (status: string, timeout = 60_000) => page.waitForSelector(`[data-testid=run-status][data-status=${status}]`, { timeout })

        // The printed address: the page keeps the token and drops it from the address bar.
        await page.goto(printed[1]!.replace(/^open /, ''))
        expect(page.url()).toBe(`${app.url.origin}/`)
        expect(await page.inputValue('[data-testid=prompt]')).toBe(SAMPLE_TASK)

        await page.click('[data-testid=start]')
        await page.waitForSelector('[data-testid=text]', { timeout: 60_000 })
        expect(await status(page), 'text is drawn while the run goes on').toBe('streaming')
        const runId = (await page.textContent('[data-testid=run-id]'))!
        // Reload while the Bash step sleeps in the sandbox.
        await page.waitForSelector('[data-testid=tool-card][data-tool-call-id=toolu_cf_2_note]', { timeout: 60_000 })
        expect((await recordOf(runId)).status).toBe('running')
        await noteContainers()
        const lastBeforeReload = Number(await page.textContent('[data-testid=last-event-id]'))
        const requestsBeforeReload = eventRequests.length
        await page.reload()
        await waitForStatus('completed')

        // After the reload the page asked only for what came after the events it kept.
        const resumed = eventRequests[requestsBeforeReload]
        expect(resumed?.runId).toBe(runId)
        expect(Number(resumed?.lastEventId)).toBeGreaterThanOrEqual(lastBeforeReload)
        // Everything once: three texts, two tool cards, both answered, and the last event the log's last.
        expect(await page.$$eval('[data-testid=text]', (nodes) => nodes.map((node) => (node as HTMLElement).innerText))).toEqual(SAMPLE_TEXTS)
        expect(await page.$$eval('[data-testid=tool-card]', (nodes) => nodes.map((node) => [node.getAttribute('data-tool-call-id'), node.getAttribute('data-done')]))).toEqual(SAMPLE_TOOL_CALLS.map((id) => [id, 'true']))
        expect(await page.textContent('[data-testid=tool-card][data-tool-call-id=toolu_cf_1_lookup] .tool-result')).toContain('"answeredBy": "Cloudflare-Workers"')
        expect(Number(await page.textContent('[data-testid=last-event-id]'))).toBe((await recordOf(runId)).lastSeq)

        // A second run, stopped while its Bash step sleeps.
        await page.click('[data-testid=start]')
        await page.waitForSelector('[data-testid=tool-card][data-tool-call-id=toolu_cf_2_note]', { timeout: 60_000 })
        const stoppedId = (await page.textContent('[data-testid=run-id]'))!
        expect(stoppedId).not.toBe(runId)
        await noteContainers()
        await page.click('[data-testid=stop]')
        await waitForStatus('stopped')
        expect(await recordOf(stoppedId)).toMatchObject({ status: 'aborted', cancelRequested: true })
        expect(await page.$$eval('[data-testid=text]', (nodes) => nodes.map((node) => (node as HTMLElement).innerText))).not.toContain(SAMPLE_TEXTS[2])
        // The page says stopped, not the log's "Request aborted", and the cut-short Bash call says it got no result.
        expect(await page.textContent('[data-testid=run-stopped]')).toContain('Stopped')
        expect(await page.$('[data-testid=run-error]')).toBeNull()
        expect(await page.textContent('[data-testid=tool-card][data-tool-call-id=toolu_cf_2_note] h2')).toBe('Bash (no result: the run ended)')
        expect(await page.isEnabled('[data-testid=start]')).toBe(true)
        expect(await waitFor(async () => (await app.lab.containers()).length === 0), "the stopped run's sandbox container was removed").toBe(true)
      } finally {
        await browser.close()
      }
    },
    150_000,
  )
})
