/**
 * A server restart under an open tab, in chromium: the server is stopped
 * (SIGTERM, which detaches its runs) while the agent works, the tab shows
 * `reconnecting` and retries by itself, and a new server on the same port,
 * data folder and model port takes the run over when the tab reattaches.
 * Without a reload, the tab ends with the whole run: every tool call once,
 * the final text once, the record `completed` by the new server's driver,
 * and the sandbox gone. And a failed run's kept sandbox, whose server
 * restarted before removing it, is removed by the next server's sweep.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeInBrowser, freePort, launchChromium, readRunLog, startServer, type AppServer } from './helpers/app.js'
import { logSummary, openThread, RUN_MS, SAMPLE_TOOL_CALLS, seen, startTask, waitForStatus } from './helpers/page.js'

describeInBrowser('examples/sandbox-web: a run survives a server restart under an open tab', {}, () => {
  let browser: Browser
  let dataDir: string
  const servers: AppServer[] = []
  /** The settings every server of this file shares (the first test picks the ports). */
  let env: Record<string, string> = {}

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sandbox-web-restart-'))
    browser = await launchChromium()
  }, 300_000)

  afterAll(async () => {
    await browser?.close()
    for (const server of servers) await server.stop({ keepData: true })
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('the open tab reconnects by itself and the new server finishes the run: nothing lost or doubled', async () => {
    const [port, modelPort] = [await freePort(), await freePort()]
    // The same port (the tab's origin), data folder (records, log, prompts), model port (where the agent calls) and
    // access token (the one the open tab holds: a server with a new token would answer the tab 401).
    env = { SANDBOX_WEB_TOKEN: `restart-${randomBytes(24).toString('hex')}`, PORT: String(port), SANDBOX_WEB_MODEL_PORT: String(modelPort), SANDBOX_WEB_STEP_SECONDS: '4', SANDBOX_WEB_KEEP_FAILED_MS: '4000', SANDBOX_WEB_REAP_EVERY_MS: '1000' }
    const first = await startServer({ env, dataDir })
    servers.push(first)
    const page = await openThread(browser, first, `restart-${Date.now()}`)
    const runId = await startTask(page)
    // After the edit of math.js came back: that write happens on the first server.
    await page.waitForSelector('[data-tool-call-id=toolu_web_3_test]', { timeout: RUN_MS })

    const before = await seen(page)
    await first.stop({ keepData: true })
    await waitForStatus(page, 'reconnecting', 20_000)
    const second = await startServer({ env, dataDir })
    servers.push(second)
    expect(second.url).toBe(first.url)
    expect(second.token).toBe(first.token)
    await waitForStatus(page, 'completed')

    // The first server went away mid-run: the last tool call had not started.
    expect(before.tools.map((tool) => tool.id)).not.toContain('toolu_web_4_run')
    const view = await seen(page)
    expect(view.tools.map((tool) => tool.id)).toEqual(SAMPLE_TOOL_CALLS)
    expect(view.tools.every((tool) => tool.done)).toBe(true)
    expect(view.texts.at(-1)).toContain('2 tests, 0 failures')
    expect(new Set(view.messageIds).size).toBe(view.messageIds.length)
    // The diff is the whole run's change, math.js's edit before the restart included: the new server diffs against the run's start.
    expect(await page.$$eval('[data-testid=diff] .diff', (nodes) => nodes.map((node) => node.getAttribute('data-path')).sort())).toEqual(['CHANGES.md', 'math.js', 'math.test.js'])
    expect(await page.textContent('[data-testid=diff] .diff[data-path="math.js"]')).toContain('+export function multiply(a, b) {')
    // And the tree shows every write, those made while no server watched included.
    expect(await page.getAttribute('[data-testid=file-tree] [data-path="CHANGES.md"]', 'data-state')).toBe('created')
    expect(await page.getAttribute('[data-testid=file-tree] [data-path="math.js"]', 'data-state')).toBe('changed')
    expect(await page.getAttribute('[data-testid=file-tree] [data-path="math.test.js"]', 'data-state')).toBe('changed')
    const log = logSummary(await readRunLog(second, runId))
    expect(log.starts).toEqual(SAMPLE_TOOL_CALLS) // each tool call once in the log
    expect(log.idsUnique).toBe(true)
    expect(log.text.match(/2 tests, 0 failures/g)).toHaveLength(1)

    const status = (await (await second.api('/api/status')).json()) as { runs: { runId: string; status: string; detached: boolean }[]; sandboxes: string[] }
    expect(status.runs.find((run) => run.runId === runId)).toMatchObject({ status: 'completed', detached: false })
    await expect.poll(() => readdirSync(join(dataDir, 'sandboxes')), { timeout: 30_000, interval: 250 }).toEqual([])
    await page.context().close()
  }, RUN_MS * 2)

  it('a failed run whose server restarted within SANDBOX_WEB_KEEP_FAILED_MS still loses its sandbox: the next server sweeps it', async () => {
    const running = servers.at(-1)!
    const sandboxes = () => readdirSync(join(dataDir, 'sandboxes'))
    const response = await running.api(`/api/run?runId=failing-${Date.now()}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId: `failing-${Date.now()}`, prompt: 'Simulate a model failure.' }) })
    expect(await response.text()).toContain('asked to fail')
    expect(sandboxes()).toHaveLength(1) // kept for a look inside
    await running.stop({ keepData: true }) // before its keepAlive timer (4 s) fires
    expect(sandboxes()).toHaveLength(1)
    servers.push(await startServer({ env, dataDir }))
    await expect.poll(sandboxes, { timeout: 30_000, interval: 250 }).toEqual([])
  }, RUN_MS)
})
