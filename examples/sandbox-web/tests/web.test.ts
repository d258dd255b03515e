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
 * 429 the page shows. The page itself: Markdown rendered, long tool inputs
 * clipped with a toggle, elapsed time and tokens in the header, a stopped
 * run shown as stopped with the diff captured before its sandbox went, and a
 * phone-width pass (360×740). Claude Code's per-run folders are gone once the
 * runs ended. Leaves screenshots in docs/images.
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs'
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
    // The agent's Markdown is rendered (`math.js` in backticks is code), never shown raw.
    expect(await page.$$eval('[data-testid=text] code', (nodes) => nodes.map((node) => node.textContent))).toContain('math.js')
    expect(transcript.texts.join('\n')).not.toContain('`')
    // The header: the final elapsed time and the tokens the run's RUN_FINISHED reported; the ids are there, secondary.
    expect(await page.getAttribute('[data-testid=elapsed]', 'data-final')).toBe('true')
    expect(Number(await page.getAttribute('[data-testid=elapsed]', 'data-ms'))).toBeGreaterThan(1000)
    expect(Number(await page.getAttribute('[data-testid=tokens]', 'data-total'))).toBeGreaterThan(0)
    expect(await page.textContent('[data-testid=tokens]')).toMatch(/^[\d,]+ tokens \([\d,]+ in · [\d,]+ out\)/)
    // A long tool input (the heredoc of the third call) is clipped with a way to read it all, and back.
    const longInput = page.locator('[data-tool-call-id=toolu_web_3_test] .tool-input')
    const clipped = await longInput.evaluate((node) => ({ client: node.clientHeight, scroll: node.scrollHeight }))
    expect(clipped.scroll).toBeGreaterThan(clipped.client)
    const toggle = page.locator('[data-tool-call-id=toolu_web_3_test] [data-testid=expand]').first()
    expect(await toggle.getAttribute('aria-expanded')).toBe('false')
    await toggle.click()
    expect(await toggle.getAttribute('aria-expanded')).toBe('true')
    expect(await longInput.evaluate((node) => node.scrollHeight <= node.clientHeight + 1)).toBe(true)
    expect(await page.$$('[data-tool-call-id=toolu_web_1_look] [data-testid=expand]')).toHaveLength(0) // a short one has no toggle
    await page.screenshot({ path: join(IMAGES, 'sandbox-web-run.png'), fullPage: true })
    await toggle.click()
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

  it('Stop cancels the run for real: the record is aborted, the sandbox is gone, and the page shows it stopped with what it had changed', async () => {
    const existing = new Set(await sandboxes())
    const page = await openThread(`stop-${Date.now()}`)
    const runId = await startTask(page)
    // After the edit of math.js, during the third call: the stopped agent has changed something.
    await page.waitForSelector('[data-tool-call-id=toolu_web_3_test]', { timeout: RUN_MS })
    const created = (await sandboxes()).filter((id) => !existing.has(id))
    expect(created).toHaveLength(1)
    // The elapsed time ticks while the run goes on; Claude Code's HOME is the run's own folder.
    const ticking = Number(await page.getAttribute('[data-testid=elapsed]', 'data-ms'))
    expect(await page.getAttribute('[data-testid=elapsed]', 'data-final')).toBe('false')
    await expect.poll(async () => Number(await page.getAttribute('[data-testid=elapsed]', 'data-ms')), { timeout: 3000, interval: 200 }).toBeGreaterThan(ticking)
    expect(existsSync(join(server.dataDir, 'claude-home', runId))).toBe(true)
    await page.click('[data-testid=stop]')
    await waitForStatus(page, 'aborted')
    // Stopped, in words, instead of the stream's "Request aborted"; and the diff the server took before the sandbox went.
    expect(await page.textContent('[data-testid=run-status]')).toBe('stopped')
    await page.waitForSelector('[data-testid=run-stopped]')
    expect(await page.$('[data-testid=run-error]')).toBeNull()
    await page.waitForSelector('[data-testid=diff][data-captured=true]', { timeout: 10_000 })
    expect(await page.textContent('[data-testid=diff] .diff[data-path="math.js"]')).toContain('+export function multiply(a, b) {')
    expect(await page.textContent('[data-testid=run-stopped]')).toContain('Changes shows what it had changed')
    const captured = (await (await server.api(`/api/runs/${runId}/changes`)).json()) as { files: { path: string }[] }
    expect(captured.files.map((file) => file.path)).toContain('math.js')
    expect(await page.getAttribute('[data-testid=elapsed]', 'data-final')).toBe('true')
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

  it('at phone width (360×740) the transcript is readable, the changes are a tab away, and the composer and Stop stay reachable', async () => {
    // The control run's thread (a finished run with its diff), so the phone pass needs no sample run of its own.
    const context = await browser.newContext({ viewport: { width: 360, height: 740 } })
    const page = await context.newPage()
    await page.goto(`${server.url}/?thread=${control.threadId}&token=${server.token}`)
    await waitForStatus(page, 'completed')
    expect(await seen(page)).toEqual(control.transcript)
    // Nothing wider than the screen, and the transcript takes its width, not squeezed beside the panel.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360)
    const width = (await page.locator('[data-testid=transcript]').boundingBox())?.width ?? 0
    expect(width).toBeGreaterThanOrEqual(300)
    // Nothing covers it: the point at its middle (scrolled to the middle of the screen) is the transcript's own.
    const hitsTranscript = await page.evaluate(() => {
      const transcript = document.querySelector('[data-testid=transcript]')!
      const box = transcript.getBoundingClientRect()
      window.scrollTo(0, window.scrollY + box.top + box.height / 2 - window.innerHeight / 2)
      const after = transcript.getBoundingClientRect()
      const hit = document.elementFromPoint(after.left + after.width / 2, Math.min(window.innerHeight / 2, after.bottom - 1))
      return hit !== null && transcript.contains(hit)
    })
    expect(hitsTranscript).toBe(true)
    // Scrolled down a long transcript, Start and Stop are still on the screen.
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight))
    for (const id of ['prompt', 'start', 'stop']) {
      const box = await page.locator(`[data-testid=${id}]`).boundingBox()
      expect(box, id).not.toBeNull()
      expect(box!.x, id).toBeGreaterThanOrEqual(0)
      expect(box!.x + box!.width, id).toBeLessThanOrEqual(360)
      expect(box!.y, id).toBeGreaterThanOrEqual(0)
      expect(box!.y + box!.height, id).toBeLessThanOrEqual(740)
    }
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: join(IMAGES, 'sandbox-web-phone.png'), fullPage: true })
    // The workspace and the diff: one tap away, in the transcript's place.
    expect(await page.isVisible('[data-testid=diff]')).toBe(false)
    await page.click('[data-testid=pane-changes]')
    expect(await page.isVisible('[data-testid=diff]')).toBe(true)
    expect(await page.isVisible('[data-testid=file-tree]')).toBe(true)
    expect(await page.textContent('[data-testid=diff] .diff[data-path="math.js"]')).toContain('+export function multiply(a, b) {')
    expect((await page.locator('[data-testid=diff]').boundingBox())!.width).toBeGreaterThanOrEqual(300)
    await page.screenshot({ path: join(IMAGES, 'sandbox-web-phone-changes.png') })
    // A new prompt from the phone: the transcript comes back for the run, and its reply shows.
    await page.fill('[data-testid=prompt]', 'Rewrite the library in Rust.')
    await page.click('[data-testid=start]')
    await waitForStatus(page, 'completed')
    expect(await page.isVisible('[data-testid=transcript]')).toBe(true)
    expect((await seen(page)).texts.join('\n')).toContain('ANTHROPIC_API_KEY')
    await context.close()
  }, RUN_MS)

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

  it("Claude Code's per-run folders (claude-home/<runId>, claude-tmp/<runId>) are gone once the runs ended: they do not grow run after run", async () => {
    // Every run of this file has ended (completed, failed, stopped, capped); the stopped ones' agents were killed
    // after the cancel, so the reaper's sweep (every 2 s here) removes what they left.
    const left = () => ['claude-home', 'claude-tmp'].flatMap((folder) => (existsSync(join(server.dataDir, folder)) ? readdirSync(join(server.dataDir, folder)).map((name) => `${folder}/${name}`) : []))
    await expect.poll(left, { timeout: 20_000, interval: 500 }).toEqual([])
  }, 30_000)
})
