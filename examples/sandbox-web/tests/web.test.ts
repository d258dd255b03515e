/**
 * The app in a real browser (Debian's chromium via playwright-core) against
 * the real server process, the real Claude Code CLI in local-process
 * sandboxes and the offline mock model: a run watched to the end (the
 * control), a run refreshed mid-way and watched from a second browser (same
 * transcript as the control, nothing doubled, rejoined with Last-Event-ID),
 * Stop (the record is aborted and the sandbox is gone), a tab that comes
 * back after the end (tool cards restored from the run log), a task the
 * offline model does not know, a failed run (its sandbox kept, then gone),
 * and the status page with the reaper's last sweep. And the access token as
 * the page handles it (taken from the address once, sent on every API call,
 * a page without it says what to do), and a start past the run cap, whose
 * 429 the page shows. Leaves screenshots in docs/images.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { SAMPLE_TASK } from '../src/server/model.js'
import { describeInBrowser, EXAMPLE_DIR, launchChromium, readRunLog, readUntil, startRunOverApi, startServer, type AppServer } from './helpers/app.js'
import { logSummary, openThread as openPage, RUN_MS, SAMPLE_TOOL_CALLS, seen, startTask, waitForStatus, type SeenTranscript } from './helpers/page.js'

const IMAGES = join(EXAMPLE_DIR, '../../docs/images')

describeInBrowser('examples/sandbox-web in chromium', {}, () => {
  let server: AppServer
  let browser: Browser
  let control: { threadId: string; runId: string; transcript: SeenTranscript; log: ReturnType<typeof logSummary> }

  beforeAll(async () => {
    mkdirSync(IMAGES, { recursive: true })
    ;[server, browser] = await Promise.all([startServer({ env: { SANDBOX_WEB_KEEP_FAILED_MS: '3000' } }), launchChromium()])
  }, 300_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  const openThread = (threadId: string) => openPage(browser, server, threadId)

  it('streams a run to the end: text, tool cards, file events and the diff', async () => {
    const threadId = `control-${Date.now()}`
    const page = await openThread(threadId)
    const runId = await startTask(page)
    await waitForStatus(page, 'completed')
    const transcript = await seen(page)
    expect(transcript.tools.map((tool) => tool.id)).toEqual(SAMPLE_TOOL_CALLS)
    expect(transcript.tools.every((tool) => tool.done)).toBe(true)
    expect(transcript.texts.at(-1)).toContain('2 tests, 0 failures')
    expect(await page.getAttribute('[data-testid=file-tree] [data-path="CHANGES.md"]', 'data-state')).toBe('created')
    expect(await page.getAttribute('[data-testid=file-tree] [data-path="math.js"]', 'data-state')).toBe('changed')
    expect(await page.$$eval('[data-testid=diff] .diff', (nodes) => nodes.map((node) => node.getAttribute('data-path')).sort())).toEqual(['CHANGES.md', 'math.js', 'math.test.js'])
    expect(await page.textContent('[data-testid=diff] .diff[data-path="math.js"]')).toContain('+export function multiply(a, b) {')
    await page.screenshot({ path: join(IMAGES, 'sandbox-web-run.png'), fullPage: true })
    control = { threadId, runId, transcript, log: logSummary(await readRunLog(server, runId)) }
    expect(control.log.idsUnique).toBe(true)
    await page.context().close()
  }, RUN_MS + 30_000)

  it('the page takes the token from the address once, keeps it over a reload and sends it on every API call; a page without it says what to do', async () => {
    const threadId = `token-${Date.now()}`
    const page = await openThread(threadId)
    const sent: Promise<string | undefined>[] = []
    page.on('request', (request) => {
      if (new URL(request.url()).pathname.startsWith('/api/')) sent.push(request.allHeaders().then((headers) => headers.authorization))
    })
    // Gone from the address bar (and so from a bookmark or a copied link); the thread stays.
    expect(new URL(page.url()).searchParams.get('token')).toBeNull()
    expect(new URL(page.url()).searchParams.get('thread')).toBe(threadId)
    await page.reload()
    await page.waitForFunction(() => (document.querySelector('[data-testid=prompt]') as HTMLTextAreaElement | null)?.value.includes('multiply')) // /api/sample answered
    expect(sent.length).toBeGreaterThanOrEqual(2) // the sample and the thread's runs, at least
    expect(new Set(await Promise.all(sent))).toEqual(new Set([`Bearer ${server.token}`]))
    expect(await page.$('[data-testid=unauthorized]')).toBeNull()
    await page.context().close()

    // A browser that never opened the printed address: told what to open, not left loading.
    const context = await browser.newContext()
    const stranger = await context.newPage()
    await stranger.goto(`${server.url}/?thread=${threadId}`)
    await stranger.waitForSelector('[data-testid=unauthorized]')
    expect(await stranger.textContent('[data-testid=unauthorized]')).toContain('?token=')
    await context.close()
  }, 60_000)

  it('a refresh mid-run rejoins with Last-Event-ID, and a second browser whose Start meets the live run follows it: nothing lost or doubled', async () => {
    const threadId = `refresh-${Date.now()}`
    const page = await openThread(threadId)
    // A second browser (its own context: no cache) open on the thread before the run starts.
    const second = await openThread(threadId)
    const attaches: (string | undefined)[] = []
    page.on('request', (request) => {
      if (request.method() === 'GET' && request.url().includes('/api/run?')) attaches.push(request.headers()['last-event-id'])
    })
    const runId = await startTask(page)
    // As soon as the first tool call shows, the second browser's Start meets the live run (409) and
    // follows that run instead, from the log's start. (Done this early because the rest of the run is
    // a few seconds of scripted steps, and a Start after the end would rightly begin a new run.)
    await page.waitForSelector('[data-tool-call-id=toolu_web_1_look]', { timeout: RUN_MS })
    await startTask(second)
    // Its Start shows the id it made at once, and the live run's once the 409 is back: wait for that, then check that
    // the server holds that one run only (nothing was started under the second browser's id).
    await second.waitForFunction((id) => document.querySelector('[data-testid=run-id]')?.textContent === id, runId, { timeout: 15_000 }).catch(() => undefined)
    expect(await second.textContent('[data-testid=run-id]')).toBe(runId)
    expect(((await (await server.api(`/api/threads/${threadId}`)).json()) as { runs: { runId: string }[] }).runs.map((run) => run.runId)).toEqual([runId])
    // Mid-run: the second tool call has started and is sleeping in the sandbox.
    await page.waitForSelector('[data-tool-call-id=toolu_web_2_edit]', { timeout: RUN_MS })
    const before = await seen(page)
    await page.reload()
    await page.waitForSelector('[data-tool-call-id=toolu_web_1_look]') // repainted from the tab's cache at once
    await page.screenshot({ path: join(IMAGES, 'sandbox-web-rejoined.png'), fullPage: true })
    await Promise.all([waitForStatus(page, 'completed'), waitForStatus(second, 'completed')])

    // The reload came mid-run: before it, the last tool call had not started.
    expect(before.tools.map((tool) => tool.id)).not.toContain('toolu_web_4_run')
    expect(attaches.some((id) => id !== undefined && /^\d+$/.test(id))).toBe(true) // rejoined after the last id it kept
    for (const view of [await seen(page), await seen(second)]) {
      expect(view.tools).toEqual(control.transcript.tools)
      expect(view.texts).toEqual(control.transcript.texts)
      expect(new Set(view.messageIds).size).toBe(view.messageIds.length)
    }
    // The server's log: the same text and tool calls as the control run, each once.
    const log = logSummary(await readRunLog(server, runId))
    expect(log).toEqual(control.log)
    await Promise.all([page.context().close(), second.context().close()])
  }, RUN_MS + 60_000)

  /** The sandboxes the server has now (local-process: the folders under its sandbox root). */
  const sandboxes = async () => ((await (await server.api('/api/status')).json()) as { sandboxes: string[] }).sandboxes

  it('Stop cancels the run for real: the record is aborted and the sandbox is gone', async () => {
    const existing = new Set(await sandboxes())
    const page = await openThread(`stop-${Date.now()}`)
    const runId = await startTask(page)
    await page.waitForSelector('[data-tool-call-id=toolu_web_2_edit]', { timeout: RUN_MS })
    const created = (await sandboxes()).filter((id) => !existing.has(id))
    expect(created).toHaveLength(1)
    await page.click('[data-testid=stop]')
    await waitForStatus(page, 'aborted')
    await page.screenshot({ path: join(IMAGES, 'sandbox-web-stopped.png'), fullPage: true })
    const tools = await seen(page)
    expect(tools.tools.map((tool) => tool.id)).not.toContain('toolu_web_4_run')
    // The call the stop cut short says so; no card is left "running…".
    expect(await page.$$('[data-testid=tool-card] .tool-pending')).toHaveLength(0)
    expect(await page.$$('[data-testid=tool-card] [data-testid=tool-interrupted]')).toHaveLength(tools.tools.filter((tool) => !tool.done).length)
    expect(tools.tools.some((tool) => !tool.done)).toBe(true)
    await expect.poll(sandboxes, { timeout: 30_000, interval: 250 }).not.toContain(created[0])
    const runs = ((await (await server.api('/api/status')).json()) as { runs: { runId: string; status: string }[] }).runs
    expect(runs.find((run) => run.runId === runId)?.status).toBe('aborted')
    await page.context().close()
  }, RUN_MS + 30_000)

  it('a tab that comes back after the run finished gets the transcript with its tool cards, from the cache and from the log', async () => {
    // A fresh browser context has no cache: everything comes from the run log.
    const fresh = await openThread(control.threadId)
    await waitForStatus(fresh, 'completed')
    expect(await seen(fresh)).toEqual(control.transcript)
    // Reloaded: from its own cache, then the log after its last id.
    await fresh.reload()
    await waitForStatus(fresh, 'completed')
    expect(await seen(fresh)).toEqual(control.transcript)
    await fresh.context().close()
  }, 60_000)

  it('offline, a task the mock does not know gets a reply saying so, and the page hints at it before the start', async () => {
    const page = await openThread(`other-${Date.now()}`)
    await page.waitForFunction(() => (document.querySelector('[data-testid=prompt]') as HTMLTextAreaElement | null)?.value.includes('multiply'))
    expect(await page.getAttribute('[data-testid=mode]', 'data-mode')).toBe('offline')
    expect(await page.$('[data-testid=offline-hint]')).toBeNull() // the sample task is in the box
    await page.fill('[data-testid=prompt]', 'Rewrite the library in Rust.')
    await page.waitForSelector('[data-testid=offline-hint]')
    await page.click('[data-testid=start]')
    await waitForStatus(page, 'completed')
    expect((await seen(page)).texts.join('\n')).toContain('ANTHROPIC_API_KEY')
    await page.context().close()
  }, RUN_MS)

  it('a failed run shows its error and keeps its sandbox for a look inside, until it has idled SANDBOX_WEB_KEEP_FAILED_MS', async () => {
    const before = new Set(await sandboxes())
    const page = await openThread(`fail-${Date.now()}`)
    await page.waitForFunction(() => (document.querySelector('[data-testid=prompt]') as HTMLTextAreaElement | null)?.value.includes('multiply'))
    await page.fill('[data-testid=prompt]', 'Simulate a model failure.')
    await page.click('[data-testid=start]')
    await waitForStatus(page, 'failed')
    expect(await page.textContent('[data-testid=run-error]')).toContain('asked to fail')
    const kept = (await sandboxes()).filter((id) => !before.has(id))
    expect(kept).toHaveLength(1)
    await expect.poll(sandboxes, { timeout: 30_000, interval: 250 }).not.toContain(kept[0])
    await page.context().close()
  }, RUN_MS)

  it('a start past the per-client cap shows the server\'s 429 message on the page and starts nothing', async () => {
    const stamp = Date.now()
    const busy = [`busy-a-${stamp}`, `busy-b-${stamp}`]
    const started = await Promise.all(busy.map((threadId) => startRunOverApi(server, `run-${threadId}`, threadId, SAMPLE_TASK)))
    expect(started.map((response) => response.status)).toEqual([200, 200])
    const reading = await Promise.all(started.map((response) => readUntil(response, 'toolu_web_1_look'))) // both working

    const page = await openThread(`over-cap-${stamp}`)
    await page.waitForFunction(() => (document.querySelector('[data-testid=prompt]') as HTMLTextAreaElement | null)?.value.includes('multiply'))
    await page.click('[data-testid=start]')
    await page.waitForSelector('[data-testid=run-notice]')
    expect(await page.textContent('[data-testid=run-notice]')).toMatch(/SANDBOX_WEB_MAX_RUNS=2\): wait for one to finish or stop it/)
    expect(await page.getAttribute('[data-testid=run-status]', 'data-status')).toBe('idle')
    expect(await page.$('[data-testid=run-id]')).toBeNull() // no run to show: none was started
    await page.context().close()

    for (const threadId of busy) {
      await server.api('/api/run/cancel', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId }) })
    }
    await Promise.all(reading.map((read) => read.rest()))
  }, RUN_MS)

  it('the status page shows the reaper schedule and its last sweep', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    await page.goto(`${server.url}/status?token=${server.token}`)
    await page.waitForSelector('[data-testid=reaper-last]', { timeout: 30_000 })
    expect(Number(await page.textContent('[data-testid=reaper-sweeps]'))).toBeGreaterThanOrEqual(1)
    await page.waitForSelector('[data-testid=runs] tr[data-status=aborted]')
    await page.screenshot({ path: join(IMAGES, 'sandbox-web-status.png'), fullPage: true })
    await context.close()
  }, 60_000)
})
