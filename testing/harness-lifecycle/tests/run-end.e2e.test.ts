/**
 * How a harness run ends, through chat() + withSandbox on the local-process
 * provider, for every adapter on the shared run loop (`runHarness`), with fake
 * CLIs that print recorded-shaped events: the stream ends at the CLI's final
 * event while the CLI still runs, and the CLI is stopped after `exitGraceMs`
 * (issue 18 case 1); a background child holding stdout neither keeps the run
 * open nor survives it, whether the CLI printed its final event or only exited
 * (case 2); an abort stops the CLI; `timeoutMs` ends the
 * run with RUN_ERROR `timeout`. Tagged processes prove which CLI is alive.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { ALL_HARNESSES, NDJSON_HARNESSES, ofType, processesOf, runBounded, typesOf, waitFor } from './helpers/harnesses.js'
import { localSuite } from './helpers/local-sandboxes.js'

const suite = localSuite('lifecycle-run-end')
const user = (content: string): ModelMessage => ({ role: 'user', content })
/** The grace period of the CLIs that exit or leave background work; it bounds how long a case waits for the kill. */
const GRACE_MS = 1000
/**
 * The grace period of a CLI that lingers after its final event. The stream
 * closes a few ms after RUN_FINISHED on an idle machine, but withSandbox's
 * end-of-run work (process sweep, file-change scan) runs after it, and with
 * CI's test files side by side on 2 cores that took over 750 ms in Docker
 * (Grok's grace starts at its prompt answer, 250 ms before RUN_FINISHED).
 * The case proves the stream does not wait for the CLI, so the grace must
 * stay well above that close time, whatever the load.
 */
const LINGER_GRACE_MS = 5000
/** How each adapter ends a run whose CLI exited 0 after some events but without its final one. */
const EXIT_END: Record<string, string> = { 'claude-code': 'RUN_ERROR', codex: 'RUN_ERROR', opencode: 'RUN_FINISHED' }

/** True while `pid` runs on this host (a zombie has exited). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!)
  } catch {
    return false
  }
}

describe('the end of a run on local-process', () => {
  it('claude-code: processes that left the CLI\'s process tree (setsid, a double fork) are stopped when the run ends', async () => {
    const harness = ALL_HARNESSES.find((h) => h.name === 'claude-code')!
    const { sandbox, threadId } = suite.sandbox('lc-escapes')
    const { tag, adapter } = suite.fake(harness, 'escapes', { exitGraceMs: GRACE_MS })
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Leave something running')] })
    expect(out.error).toBeUndefined()
    expect(typesOf(out.chunks).at(-1)).toBe('RUN_FINISHED')
    // Found by the run's own tag (TANSTACK_HARNESS_RUN), which every process of the run inherits.
    expect(await waitFor(() => processesOf(tag).length === 0, 20_000), `nothing of the run is left: ${processesOf(tag)}`).toBe(true)
  })

  it.each(ALL_HARNESSES.map((h) => [h.name, h] as const))('%s: RUN_FINISHED ends the stream while the CLI lingers, and the CLI is stopped after exitGraceMs', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-linger-${harness.name}`)
    const { tag, adapter } = suite.fake(harness, 'final-then-linger', { exitGraceMs: LINGER_GRACE_MS })
    let aliveAtFinish: number[] | undefined
    let finishedAt = 0
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Say hello')], onChunk: (chunk) => void (chunk.type === 'RUN_FINISHED' && ((finishedAt = Date.now()), (aliveAtFinish = processesOf(tag)))) })
    const aliveAtEnd = processesOf(tag)
    const closedAfterMs = Date.now() - finishedAt

    expect(out.error).toBeUndefined()
    expect(typesOf(out.chunks).at(-1)).toBe('RUN_FINISHED')
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(1)
    expect(aliveAtFinish, 'the CLI still ran when the client got RUN_FINISHED').not.toEqual([])
    expect(aliveAtFinish).toBeDefined()
    expect(aliveAtEnd, `the chat() stream ended while the CLI still ran (it closed ${closedAfterMs} ms after RUN_FINISHED; the grace is ${LINGER_GRACE_MS} ms)`).not.toEqual([])
    expect(await waitFor(() => processesOf(tag).length === 0, 20_000), 'the lingering CLI is stopped after the grace period').toBe(true)
  })

  it.each(NDJSON_HARNESSES.map((h) => [h.name, h] as const))('%s: a background child holding stdout neither keeps the run open nor outlives it', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-bg-${harness.name}`)
    const { tag, adapter } = suite.fake(harness, 'background-holds-stdout', { exitGraceMs: GRACE_MS })
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Start a job')] })

    expect(out.error).toBeUndefined()
    expect(typesOf(out.chunks).at(-1)).toBe('RUN_FINISHED')
    const background = Number(/pid (\d+)/.exec(out.text)?.[1])
    expect(background, 'the fake reported the pid of its `sleep 300 &`').toBeGreaterThan(0)
    expect(await waitFor(() => !alive(background) && processesOf(tag).length === 0, 20_000), 'no `sleep 300` of the run is left').toBe(true)
  })

  it.each(NDJSON_HARNESSES.map((h) => [h.name, h] as const))('%s: a CLI that exits without its final event while a background child holds stdout ends the run from its exit', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-bg-exit-${harness.name}`)
    const { tag, adapter } = suite.fake(harness, 'background-no-final', { exitGraceMs: GRACE_MS })
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Start a job')] })

    // OpenCode's exit 0 is a finished run; Claude Code and Codex report the missing result line.
    expect(typesOf(out.chunks).at(-1)).toBe(EXIT_END[harness.name])
    expect(ofType(out.chunks, 'RUN_FINISHED').length + ofType(out.chunks, 'RUN_ERROR').length).toBe(1)
    const background = Number(/pid (\d+)/.exec(out.text)?.[1])
    expect(background, 'the fake reported the pid of its `sleep 300 &`').toBeGreaterThan(0)
    expect(await waitFor(() => !alive(background) && processesOf(tag).length === 0, 20_000), 'no `sleep 300` of the run is left').toBe(true)
  })

  it.each(NDJSON_HARNESSES.map((h) => [h.name, h] as const))('%s: aborting the request while the CLI runs stops it, with no terminal chunk', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-abort-${harness.name}`)
    const { tag, adapter } = suite.fake(harness, 'hang')
    const abortController = new AbortController()
    let aliveAtAbort: number[] = []
    const out = await runBounded(harness, {
      adapter,
      sandbox,
      threadId,
      messages: [user('Work forever')],
      abortController,
      onChunk: (chunk) => {
        if (chunk.type !== 'CUSTOM' || chunk.name !== harness.sessionEvent) return
        aliveAtAbort = processesOf(tag)
        abortController.abort()
      },
    })

    expect(aliveAtAbort, 'the CLI ran when the request was aborted').not.toEqual([])
    expect(typesOf(out.chunks)).not.toContain('RUN_FINISHED')
    expect(typesOf(out.chunks)).not.toContain('RUN_ERROR')
    expect(await waitFor(() => processesOf(tag).length === 0, 20_000), 'the aborted CLI is gone').toBe(true)
  })

  it.each(NDJSON_HARNESSES.map((h) => [h.name, h] as const))('%s: a CLI that outlives timeoutMs ends the run with RUN_ERROR timeout and is stopped', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-timeout-${harness.name}`)
    const { tag, adapter } = suite.fake(harness, 'hang', { timeoutMs: 500 })
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Work forever')] })

    expect(out.chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'timeout' })
    expect(ofType(out.chunks, 'RUN_ERROR')).toHaveLength(1)
    expect(await waitFor(() => processesOf(tag).length === 0, 20_000), 'the timed-out CLI is gone').toBe(true)
  })
})
