/**
 * "Restore in a new sandbox" in Debian's chromium, against the server as its
 * own process (offline: the local mock model, local-process sandboxes).
 * A completed sample run writes checkpoint #1 (the page shows it); a failed
 * run keeps its sandbox and writes none; Restore destroys that kept sandbox
 * and says which checkpoint the next run starts from; the next run (the
 * mock's second task, which prints CHANGES.md and the end of math.js) runs
 * in a new sandbox, a third id, and prints what the sample run wrote. A
 * thread without a checkpoint gets the 409 message, so does one with a live
 * run (which goes on), and the restore route is locked like the other
 * thread routes (token, JSON from this app's origin).
 * Everything started is stopped, and checked gone: no sandbox left, the data
 * folder removed, chromium closed.
 */
import { existsSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { FAILING_TASK, SAMPLE_TASK, SHOW_TASK } from '../src/server/model.js'
import type { CheckpointSummary } from '../src/server/routes.js'
import { describeInBrowser, launchChromium, startRunOverApi, startServer, type AppServer } from './helpers/app.js'
import { openThread as openPage, RUN_MS, startTask, waitForStatus } from './helpers/page.js'


describeInBrowser('examples/sandbox-web: restore a thread in a new sandbox', {}, () => {
  let server: AppServer
  let browser: Browser

  beforeAll(async () => {
    // A failed run keeps its sandbox for two minutes: long enough for Restore to be the one that destroys it.
    ;[server, browser] = await Promise.all([startServer({ env: { SANDBOX_WEB_KEEP_FAILED_MS: '120000' } }), launchChromium()])
  }, 300_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  const liveSandboxes = async (): Promise<string[]> => ((await (await server.api('/api/status')).json()) as { sandboxes: string[] }).sandboxes
  const checkpoints = async (threadId: string) => (await (await server.api(`/api/threads/${threadId}/checkpoints`)).json()) as { checkpoints: CheckpointSummary[]; latest: CheckpointSummary | null }
  /** The run's sandbox id once the page has it (the server records it when the run starts; the page reads it with the run's record). */
  const sandboxIdOf = async (page: Page, runId: string): Promise<string> => {
    await page.waitForSelector(`[data-testid=run-id]:text("${runId}")`)
    const node = await page.waitForSelector('[data-testid=sandbox-id]', { timeout: 30_000 })
    return (await node.getAttribute('data-sandbox-id'))!
  }
  /** Wait for the run's badge to say `status`; on a timeout, fail with what the page and the server said. */
  const waitFor = async (page: Page, status: string): Promise<void> => {
    try {
      await waitForStatus(page, status)
    } catch (error) {
      const shown = await page.evaluate(() => document.querySelector('main')?.innerText ?? '').catch(() => '')
      throw new Error(`${String(error)}\n--- page:\n${shown}\n--- server:\n${server.output().slice(-4000)}`, { cause: error })
    }
  }
  const startWith = async (page: Page, prompt: string): Promise<string> => {
    const previous = await page.textContent('[data-testid=run-id]')
    await page.fill('[data-testid=prompt]', prompt)
    await page.click('[data-testid=start]')
    await page.waitForFunction((before) => document.querySelector('[data-testid=run-id]')?.textContent !== before, previous)
    return (await page.textContent('[data-testid=run-id]'))!
  }

  it('a completed run checkpoints; Restore destroys the sandbox a failed run kept; the next run gets a new sandbox with the files back', async () => {
    const threadId = `restore-${Date.now()}`
    const page = await openPage(browser, server, threadId)
    expect(await page.getAttribute('[data-testid=latest-checkpoint]', 'data-sequence')).toBe('0')

    // 1. The sample task (adds multiply to math.js, writes CHANGES.md): completed, so withSandbox writes checkpoint #1.
    const first = await startTask(page)
    await waitFor(page, 'completed')
    const firstSandbox = await sandboxIdOf(page, first)
    await page.waitForSelector('[data-testid=latest-checkpoint][data-sequence="1"]')
    const afterSample = await checkpoints(threadId)
    expect(afterSample.checkpoints).toHaveLength(1)
    expect(afterSample.latest).toMatchObject({ sequence: 1, runId: first })
    // package.json, README.md, math.js, math.test.js and CHANGES.md; .git is not stored.
    expect(afterSample.latest!.fileCount).toBe(5)
    expect(await page.textContent('[data-testid=latest-checkpoint]')).toContain('5 files')
    expect(await liveSandboxes()).not.toContain(firstSandbox) // a completed run's sandbox goes at once

    // 2. A failed run: a new sandbox (restored from #1), kept after the failure; no checkpoint.
    const failed = await startWith(page, FAILING_TASK)
    await waitFor(page, 'failed')
    const keptSandbox = await sandboxIdOf(page, failed)
    expect(keptSandbox).not.toBe(firstSandbox)
    expect(await liveSandboxes()).toContain(keptSandbox)
    expect((await checkpoints(threadId)).checkpoints).toHaveLength(1)

    // 3. Restore: the kept sandbox is destroyed, and the page says which checkpoint the next run starts from.
    await page.click('[data-testid=restore]')
    const notice = await page.waitForSelector('[data-testid=restore-notice]')
    const said = (await notice.textContent())!
    expect(said).toContain(`Sandbox ${keptSandbox} was destroyed`)
    expect(said).toContain('new sandbox restored from checkpoint #1 (5 files,')
    expect(await liveSandboxes()).not.toContain(keptSandbox)

    // 4. The next run reads what the sample run wrote, in a sandbox of its own.
    await page.click('[data-testid=use-show-task]')
    expect(await page.inputValue('[data-testid=prompt]')).toBe(SHOW_TASK)
    const third = await startWith(page, SHOW_TASK)
    await waitFor(page, 'completed')
    const thirdSandbox = await sandboxIdOf(page, third)
    expect(new Set([firstSandbox, keptSandbox, thirdSandbox]).size).toBe(3)
    const result = await page.textContent('[data-tool-call-id=toolu_web_show] .tool-result')
    expect(result).toContain('# Changes')
    expect(result).toContain('- multiply(a, b)')
    expect(result).toContain('export function multiply(a, b) {')
    expect(await page.$('[data-testid=restore-notice]')).toBeNull() // the notice belonged to the run before
    await page.waitForSelector('[data-testid=latest-checkpoint][data-sequence="2"]')
    expect((await checkpoints(threadId)).latest).toMatchObject({ sequence: 2, runId: third, fileCount: 5 })

    // Over the API, a second restore names checkpoint #2 and finds no sandbox to destroy (a completed run's is gone).
    const again = await server.api(`/api/threads/${threadId}/restore`, { method: 'POST', headers: { origin: server.url, 'content-type': 'application/json' }, body: '{}' })
    expect(again.status).toBe(200)
    expect(await again.json()).toMatchObject({ threadId, checkpoint: { sequence: 2, runId: third, fileCount: 5 }, destroyedSandboxId: null })
    await page.context().close()
  }, 3 * RUN_MS)

  it('Restore on a thread with no checkpoint shows the 409 message; the route is locked like the other thread routes and refuses a thread with a live run', async () => {
    const threadId = `restore-none-${Date.now()}`
    const page = await openPage(browser, server, threadId)
    await page.waitForSelector('[data-testid=latest-checkpoint][data-sequence="0"]:text("No checkpoint yet")')
    await page.click('[data-testid=restore]')
    const error = await page.waitForSelector('[data-testid=restore-error]')
    expect(await error.textContent()).toBe(`thread ${threadId} has no checkpoint yet: one is written when a run of the thread completes, so there is nothing to restore from. Nothing was changed.`)
    await page.context().close()

    const restore = (init: RequestInit) => fetch(`${server.url}/api/threads/${threadId}/restore`, { method: 'POST', ...init })
    const json = { origin: server.url, 'content-type': 'application/json' }
    expect((await restore({ headers: json, body: '{}' })).status).toBe(401) // no token
    expect((await restore({ headers: { ...json, authorization: `Bearer ${server.token}`, origin: 'http://evil.example' }, body: '{}' })).status).toBe(403)
    expect((await restore({ headers: { authorization: `Bearer ${server.token}`, 'content-type': 'text/plain' }, body: '{}' })).status).toBe(415)
    expect((await server.api(`/api/threads/${threadId}/checkpoints`, { headers: {} })).status).toBe(200)
    expect((await fetch(`${server.url}/api/threads/${threadId}/checkpoints`)).status).toBe(401)
    expect((await server.api('/api/threads/bad%20id/checkpoints')).status).toBe(400)

    // A thread with a live run: 409 as well, naming the run, and the run goes on untouched (then it is stopped).
    const runId = `run-live-${Date.now()}`
    const live = await startRunOverApi(server, runId, threadId, SAMPLE_TASK)
    const refused = await server.api(`/api/threads/${threadId}/restore`, { method: 'POST', headers: json, body: '{}' })
    expect(refused.status).toBe(409)
    expect(((await refused.json()) as { error: string }).error).toBe(`thread ${threadId} has a live run, ${runId}: stop it or let it finish, then restore`)
    const runStatus = async () => ((await (await server.api(`/api/threads/${threadId}`)).json()) as { runs: { runId: string; status: string }[] }).runs.find((run) => run.runId === runId)?.status
    expect(await runStatus()).toBe('running')
    await server.api('/api/run/cancel', { method: 'POST', headers: json, body: JSON.stringify({ threadId }) })
    await live.text() // the stream ends once the cancel landed
    await expect.poll(runStatus, { timeout: 30_000, interval: 250 }).toBe('aborted')
    expect((await checkpoints(threadId)).checkpoints).toEqual([])
  }, 90_000)

  it('leaves nothing behind: no live sandbox, and stopping the server removes its data', async () => {
    await expect.poll(liveSandboxes, { timeout: 30_000, interval: 250 }).toEqual([])
    expect(((await (await server.api('/api/status')).json()) as { drivingHere: string[] }).drivingHere).toEqual([])
    const { dataDir } = server
    await server.stop()
    expect(existsSync(dataDir)).toBe(false)
    await browser.close()
    expect(browser.isConnected()).toBe(false)
  }, 30_000)
})
