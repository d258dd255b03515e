/**
 * The reaper closing out a run nobody comes back to, over fetch against the
 * server process (offline, local-process): a client starts the sample task
 * and leaves after a few events (the run detaches), the server restarts, and
 * the new server's scheduled sweep finalizes the run from its journal. The
 * record ends `completed`, the status route shows the close-out, the log has
 * the whole run once (every tool call once, one RUN_FINISHED), a file event
 * for each changed file (also those written while no server watched) and the
 * three-file diff; the sandbox folder and the run's journal and baseline are gone.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { journalPaths } from '@tanstack/ai-sandbox'
import { SAMPLE_TASK } from '../src/server/model.js'
import { freePort, readRunLog, readUntil, startServer, type AppServer } from './helpers/app.js'
import { logSummary, SAMPLE_TOOL_CALLS } from './helpers/page.js'

describe('examples/sandbox-web: the reaper', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-web-reaper-'))
  const servers: AppServer[] = []
  afterAll(async () => {
    for (const server of servers) await server.stop({ keepData: true })
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('finalizes a run whose client left and whose server restarted: whole log once, every file event and the diff, nothing left', async () => {
    const env = { PORT: String(await freePort()), SANDBOX_WEB_MODEL_PORT: String(await freePort()), SANDBOX_WEB_STEP_SECONDS: '3', SANDBOX_WEB_REAP_EVERY_MS: '1000' }
    const first = await startServer({ env, dataDir })
    servers.push(first)
    const runId = `reaped-${Date.now()}`
    const leave = new AbortController()
    const response = await first.api(`/api/run?runId=${runId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId: `t-${runId}`, prompt: SAMPLE_TASK }), signal: leave.signal })
    expect(response.status).toBe(200)
    // Read until the first tool call started, then leave (the tab is closed).
    await readUntil(response, 'toolu_web_1_look')
    leave.abort()
    await first.stop({ keepData: true })

    const second = await startServer({ env, dataDir })
    servers.push(second)
    const status = async () => (await (await second.api('/api/status')).json()) as { runs: { runId: string; status: string }[]; reaper: { lastCloseOut: { runs: { runId: string; outcome: string }[] } | null } }
    await expect.poll(async () => (await status()).runs.find((run) => run.runId === runId)?.status, { timeout: 90_000, interval: 500 }).toBe('completed')
    expect((await status()).reaper.lastCloseOut?.runs).toContainEqual({ runId, outcome: 'finalized' })

    const log = await readRunLog(second, runId)
    const summary = logSummary(log)
    expect(summary.starts).toEqual(SAMPLE_TOOL_CALLS)
    expect(summary.idsUnique).toBe(true)
    expect(log.filter((e) => e.chunk.type === 'RUN_FINISHED' && e.chunk.finishReason !== 'tool_calls')).toHaveLength(1)
    const custom = (name: string) => log.flatMap((e) => (e.chunk.type === 'CUSTOM' && e.chunk.name === name ? [e.chunk.value as { type?: string; path: string }] : []))
    const files = (name: string) => [...new Set(custom(name).map((value) => value.path.slice(value.path.lastIndexOf('/') + 1)))].sort()
    expect(files('sandbox.file'), 'a file event for each changed file').toEqual(['CHANGES.md', 'math.js', 'math.test.js'])
    expect(custom('file.changed').map((value) => value.path.slice(value.path.lastIndexOf('/') + 1)).sort(), 'each file in the diff once').toEqual(['CHANGES.md', 'math.js', 'math.test.js'])

    await expect.poll(() => readdirSync(join(dataDir, 'sandboxes')), { timeout: 30_000, interval: 250 }).toEqual([])
    // The journal and the baseline lived in the sandbox's own folder (<sandboxes>/<id>/runs), which is gone with it;
    // nothing of the run is in the host's shared default folder either.
    const shared = journalPaths(runId)
    const baseline = join(shared.dir, `baseline-${createHash('sha256').update(runId).digest('hex').slice(0, 32)}`)
    for (const path of [shared.journal, shared.stderr, baseline]) expect(existsSync(path), `${path} was never used`).toBe(false)
  }, 240_000)
})
