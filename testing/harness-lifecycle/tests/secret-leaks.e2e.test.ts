/**
 * No workspace secret leaves a sandboxed run, raw or encoded (issue 16,
 * "Secrets in what we emit"): the fake Claude Code prints `$LEAK_TOKEN`
 * base64-encoded across two streamed text deltas, hex in its tool
 * arguments, raw, URL- and base64url-encoded in a tool result, base64 into a
 * file (so `file.changed` carries it), and base64url and URL-encoded in a
 * failed turn's error; a setup step prints it through `base64` and fails.
 * Through chat() + withSandbox on local-process, with a logger that has every
 * debug category on, and with `debug: true` writing to the console: no form
 * of the secret reaches a chunk, a log line, the console or a thrown error.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { chat, type StreamChunk } from '@tanstack/ai'
import { createSecrets, defineSandbox, defineWorkspace, withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { CLAUDE, FAKE_BIN, killLeftovers, newTag, type Scenario } from './helpers/harnesses.js'

/** `/`, `+`, `=`, `?` need URL escapes; its base64 has `/` and padding, so base64url differs from it. */
const TOKEN = 'lk_T0k/en+Value=42ab?~'
const bytes = Buffer.from(TOKEN)
const FORMS: Record<string, string> = {
  raw: TOKEN,
  base64: bytes.toString('base64'),
  'base64 unpadded': bytes.toString('base64').replace(/=+$/, ''),
  base64url: bytes.toString('base64url'),
  'URL-encoded': encodeURIComponent(TOKEN),
  hex: bytes.toString('hex'),
  'base64 first half': bytes.toString('base64').slice(0, 14),
}
/** The names of every form found in `text`. */
const leaks = (text: string) => Object.entries(FORMS).filter(([, form]) => text.includes(form)).map(([name]) => name)

const root = mkdtempSync(join(tmpdir(), 'lifecycle-secret-leaks-'))
const provider = localProcessSandbox({ root })
const secrets = createSecrets({ LEAK_TOKEN: TOKEN })
const sandboxes: { sandbox: SandboxDefinition; threadId: string }[] = []

afterEach(async () => {
  for (const { sandbox, threadId } of sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) }).catch(() => undefined)
})
afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
  expect(killLeftovers()).toEqual([])
})

function sandboxFor(id: string, setup: string[] = []): { sandbox: SandboxDefinition; threadId: string } {
  const entry = { sandbox: defineSandbox({ id, provider, workspace: defineWorkspace({ secrets, setup }) }), threadId: `t-${id}` }
  sandboxes.push(entry)
  return entry
}

/** Everything a run made visible: its chunks, every log line with its meta, and what reached the console. */
interface Seen {
  chunks: StreamChunk[]
  logs: string
  console: string
  error?: unknown
}

async function run(scenario: Scenario | string, entry: { sandbox: SandboxDefinition; threadId: string }, debug: 'logger' | 'console'): Promise<Seen> {
  const { env } = newTag()
  const adapter = CLAUDE.adapter({ executable: join(FAKE_BIN, CLAUDE.fake!), env: { ...env, FAKE_SCENARIO: scenario }, exitGraceMs: 500 })
  const logs: string[] = []
  const record = (message: string, meta?: unknown) => void logs.push(`${message} ${inspect(meta, { depth: null })}`)
  const printed: string[] = []
  const spies = (['debug', 'info', 'warn', 'error', 'log', 'dir'] as const).map((method) => vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void printed.push(args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: null }))).join(' '))))
  const seen: Seen = { chunks: [], logs: '', console: '' }
  try {
    const stream = chat({
      adapter,
      threadId: entry.threadId,
      messages: [{ role: 'user', content: 'Show me the token' }],
      middleware: [withSandbox(entry.sandbox)],
      debug: debug === 'console' ? true : { logger: { debug: record, info: record, warn: record, error: record } },
    } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
    for await (const chunk of stream) seen.chunks.push(chunk)
  } catch (error) {
    seen.error = error
  } finally {
    for (const spy of spies) spy.mockRestore()
  }
  seen.logs = logs.join('\n')
  seen.console = printed.join('\n')
  return seen
}

describe('no form of a workspace secret leaves a run', () => {
  it.each(['logger', 'console'] as const)('a turn that prints it everywhere (debug to the %s)', async (debug) => {
    const out = await run('leak-secret', sandboxFor(`leak-${debug}`), debug)
    expect(out.error).toBeUndefined()
    const stream = JSON.stringify(out.chunks)
    expect(leaks(stream), 'the stream').toEqual([])
    expect(leaks(debug === 'logger' ? out.logs : out.console), `the debug ${debug}`).toEqual([])
    // What was redacted is still there, by name: the text, the tool call and its result, the file.
    const text = out.chunks.filter((c) => c.type === 'TEXT_MESSAGE_CONTENT').map((c) => (c as { delta: string }).delta).join('')
    expect(text).toBe('The token is [secret LEAK_TOKEN], in hex [secret LEAK_TOKEN].')
    const result = out.chunks.find((c) => c.type === 'TOOL_CALL_RESULT' && (c as { toolCallId: string }).toolCallId === 'toolu_fake_cat') as { content: string } | undefined
    expect(result?.content).toBe('raw [secret LEAK_TOKEN] url [secret LEAK_TOKEN] base64url [secret LEAK_TOKEN]')
    const changed = out.chunks.find((c) => c.type === 'CUSTOM' && c.name === 'file.changed' && (c.value as { path: string }).path.endsWith('leaked.txt')) as { value: { diff: string } } | undefined
    expect(changed?.value.diff).toContain('+[secret LEAK_TOKEN]')
    // The debug output did see the run (so its silence about the secret means something).
    expect(debug === 'logger' ? out.logs : out.console).toMatch(/tanstack-ai:middleware.*TOOL_CALL_RESULT/)
    expect(debug === 'logger' ? out.logs : out.console).toMatch(/tanstack-ai:output/)
  })

  it('a failed turn: RUN_ERROR carries the secret only by name', async () => {
    const out = await run('leak-error', sandboxFor('leak-error'), 'logger')
    const error = out.chunks.find((c) => c.type === 'RUN_ERROR') as { message: string } | undefined
    expect(error?.message).toBe('auth failed for [secret LEAK_TOKEN] (sent as [secret LEAK_TOKEN])')
    expect(leaks(JSON.stringify(out.chunks))).toEqual([])
    expect(leaks(out.logs)).toEqual([])
  })

  it('a setup step that prints it through base64 and fails: the thrown error and the logs carry it only by name', async () => {
    const out = await run('plain', sandboxFor('leak-setup', ['printf %s "$LEAK_TOKEN" | base64; printf %s "$LEAK_TOKEN" | od -An -tx1 | tr -d " \\n"; exit 3']), 'logger')
    expect(out.error).toBeInstanceOf(Error)
    const message = (out.error as Error).message
    expect(message).toMatch(/Setup step 1 failed with exit code 3/)
    expect(message).toContain('[secret LEAK_TOKEN]')
    expect(leaks(`${message}\n${(out.error as Error).stack}\n${JSON.stringify(out.error)}`)).toEqual([])
    expect(leaks(out.logs)).toEqual([])
  })
})
