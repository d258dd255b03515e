/**
 * The app with `--docker`, in chromium: the agent runs in a container of the
 * Debian image, the mock model is reached as `host.docker.internal`. A run
 * refreshed mid-way ends with the whole transcript (each tool call once, the
 * diff of the three files), its container gone after it completed and its
 * portable checkpoint written from inside the container (the page shows #1,
 * five files); Stop in a second run removes that run's container and writes
 * no checkpoint.
 */
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeInBrowser, launchChromium, readRunLog, startServer, type AppServer } from './helpers/app.js'
import { logSummary, openThread, RUN_MS, SAMPLE_TOOL_CALLS, seen, startTask, waitForStatus } from './helpers/page.js'

describeInBrowser('examples/sandbox-web --docker in chromium', { docker: true }, () => {
  let server: AppServer
  let browser: Browser

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([startServer({ docker: true }), launchChromium()])
  }, 300_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  /** This server's containers (by its label), from its status route. */
  const containers = async () => ((await (await server.api('/api/status')).json()) as { sandboxes: string[] | null }).sandboxes

  it('runs the sample task in a container; a refresh mid-run loses and doubles nothing; the container goes when the run completes', async () => {
    const page = await openThread(browser, server, `docker-${Date.now()}`)
    const runId = await startTask(page)
    await page.waitForSelector('[data-tool-call-id=toolu_web_2_edit]', { timeout: RUN_MS })
    expect(await containers()).toHaveLength(1)
    await page.reload()
    await waitForStatus(page, 'completed')

    const view = await seen(page)
    expect(view.tools.map((tool) => tool.id)).toEqual(SAMPLE_TOOL_CALLS)
    expect(view.texts.at(-1)).toContain('2 tests, 0 failures')
    expect(await page.$$eval('[data-testid=diff] .diff', (nodes) => nodes.map((node) => node.getAttribute('data-path')).sort())).toEqual(['CHANGES.md', 'math.js', 'math.test.js'])
    expect(await page.getAttribute('[data-testid=file-tree] [data-path="CHANGES.md"]', 'data-state')).toBe('created')
    const log = logSummary(await readRunLog(server, runId))
    expect(log.starts).toEqual(SAMPLE_TOOL_CALLS)
    expect(log.idsUnique).toBe(true)
    await expect.poll(containers, { timeout: 30_000, interval: 500 }).toEqual([])
    // The checkpoint of the completed run, captured in the container (the same five files as on local-process).
    await page.waitForSelector('[data-testid=latest-checkpoint][data-sequence="1"]:text("5 files")')
    await page.context().close()
  }, RUN_MS + 60_000)

  it('Stop removes the run container and the record is aborted, after the diff was taken inside it', async () => {
    const page = await openThread(browser, server, `docker-stop-${Date.now()}`)
    const runId = await startTask(page)
    await page.waitForSelector('[data-tool-call-id=toolu_web_2_edit]', { timeout: RUN_MS })
    expect(await containers()).toHaveLength(1)
    await page.click('[data-testid=stop]')
    await waitForStatus(page, 'aborted')
    // The cancel route diffed the workspace inside the container before it went (the edit had not landed yet: nothing changed).
    await page.waitForSelector('[data-testid=run-stopped]')
    const captured = await server.api(`/api/runs/${runId}/changes`)
    expect(captured.status).toBe(200)
    expect(((await captured.json()) as { files: unknown[] }).files).toEqual([])
    await expect.poll(containers, { timeout: 30_000, interval: 500 }).toEqual([])
    const runs = ((await (await server.api('/api/status')).json()) as { runs: { runId: string; status: string }[] }).runs
    expect(runs.find((run) => run.runId === runId)?.status).toBe('aborted')
    const threadId = new URL(page.url()).searchParams.get('thread')!
    expect(((await (await server.api(`/api/threads/${threadId}/checkpoints`)).json()) as { checkpoints: unknown[] }).checkpoints).toEqual([]) // a stopped run writes none
    await page.context().close()
  }, RUN_MS + 30_000)
})
