/**
 * What the shared run loop makes of a CLI's output, through chat() +
 * withSandbox on the local-process provider with fake NDJSON CLIs: an exit 0
 * with nothing but stderr is RUN_ERROR `no_output` carrying that stderr, or
 * `session_not_found` on a resume the CLI says it cannot find (issue 18
 * case 4); a tool call still open at the final event is closed as interrupted
 * before RUN_FINISHED (case 6); a banner printed without a newline in front of
 * the first event does not lose the session id (case 7).
 */
import { describe, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { CLAUDE, CODEX, NDJSON_HARNESSES, OPENCODE, custom, ofType, processesOf, runBounded, typesOf, waitFor } from './helpers/harnesses.js'
import { localSuite } from './helpers/local-sandboxes.js'

const suite = localSuite('lifecycle-run-output')
const user = (content: string): ModelMessage => ({ role: 'user', content })

/** The session id each fake prints (see tests/fixtures/bin). */
const PRINTED_SESSION: Record<string, string> = {
  'claude-code': '0b72c278-b7a8-4dc9-b813-0ef996c0b8a5',
  codex: '01a226af-20fe-7763-8118-db048fd43939',
  opencode: 'ses_dd94a2337ffeeF96YUqsPFxnqq',
}

describe('a CLI that prints no event', () => {
  it.each(NDJSON_HARNESSES.map((h) => [h.name, h] as const))('%s: exit 0 with only stderr is RUN_ERROR no_output carrying the stderr text', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-silent-${harness.name}`)
    const stderr = `${harness.name}: could not read config.toml: permission denied (fake)`
    const { tag, adapter } = suite.fake(harness, 'stderr-only', { env: { FAKE_STDERR: stderr } })
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Say hello')] })

    expect(out.error?.code).toBe('no_output')
    expect(out.error?.message).toContain(stderr)
    expect(typesOf(out.chunks)).toEqual(['RUN_STARTED', 'RUN_ERROR'])
    expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
  })

  it.each([
    [CODEX.name, CODEX, `Error: thread/resume: thread/resume failed: no rollout found for thread id ${CODEX.sessionId} (code -32600)`],
    [OPENCODE.name, OPENCODE, `Error: Session not found: ${OPENCODE.sessionId}`],
  ] as const)('%s: a resume whose stderr says the session does not exist is RUN_ERROR session_not_found', async (_, harness, stderr) => {
    const { sandbox, threadId } = suite.sandbox(`lc-gone-${harness.name}`)
    const { adapter } = suite.fake(harness, 'stderr-only', { env: { FAKE_STDERR: stderr } })
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Go on')], modelOptions: { sessionId: harness.sessionId } })

    expect(out.error?.code).toBe('session_not_found')
    expect(typesOf(out.chunks)).toEqual(['RUN_STARTED', 'RUN_ERROR'])
  })
})

describe('a tool call left open at the final event', () => {
  it.each([CLAUDE, CODEX].map((h) => [h.name, h] as const))('%s: gets an interrupted TOOL_CALL_RESULT before RUN_FINISHED', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-open-tool-${harness.name}`)
    const { adapter } = suite.fake(harness, 'open-tool')
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Run a slow command')] })

    expect(out.error).toBeUndefined()
    const [start] = ofType(out.chunks, 'TOOL_CALL_START')
    expect(start, 'the CLI started a tool call').toBeDefined()
    const results = ofType(out.chunks, 'TOOL_CALL_RESULT').filter((c) => c.toolCallId === start!.toolCallId)
    expect(results).toHaveLength(1)
    expect(JSON.parse(results[0]!.content)).toMatchObject({ status: 'interrupted', message: expect.any(String) })
    const types = typesOf(out.chunks)
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(out.chunks.indexOf(results[0] as never)).toBeLessThan(types.lastIndexOf('RUN_FINISHED'))
  })
})

describe('a banner without a newline in front of the first event', () => {
  it.each(NDJSON_HARNESSES.map((h) => [h.name, h] as const))('%s: the session id is still reported', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-banner-${harness.name}`)
    const { adapter } = suite.fake(harness, 'banner')
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Say hello')] })

    expect(out.error).toBeUndefined()
    expect(custom(out.chunks, harness.sessionEvent)).toHaveLength(1)
    expect(out.sessionId).toBe(PRINTED_SESSION[harness.name])
    expect(out.text).toBe('After the banner.')
  })
})
