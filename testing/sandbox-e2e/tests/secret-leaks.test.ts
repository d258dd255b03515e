/**
 * Secrets in chunks that do not come from a harness (issue 16): withSandbox
 * scrubs every chunk it passes on, and core's own debug categories, for a
 * plain adapter. The shell adapter prints a workspace secret base64- and
 * hex-encoded on stdout (streamed deltas, cut wherever the pipe cuts them);
 * a host tool that chat() runs itself returns it base64-encoded, which core
 * logs under `tools` and streams as `TOOL_CALL_RESULT`. Over the real
 * local-process provider, with every debug category on.
 */
import { inspect } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { chat, EventType, toolDefinition, type AdapterYieldChunk, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import { createSecrets, defineSandbox, defineWorkspace, SandboxCapability, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

const TOKEN = 'st_9f8e7d/6c5b+4a3=21?~'
const bytes = Buffer.from(TOKEN)
const FORMS = { raw: TOKEN, base64: bytes.toString('base64'), base64url: bytes.toString('base64url'), hex: bytes.toString('hex'), url: encodeURIComponent(TOKEN) }
const leaks = (text: string) => Object.entries(FORMS).filter(([, form]) => text.includes(form)).map(([name]) => name)

const tmp = makeRoot('secret-leaks')
const provider = localProcessSandbox({ root: tmp.root })
const secrets = createSecrets({ SHOP_TOKEN: TOKEN })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

/** A logger with every category on that keeps each line and its meta as text. */
function capture() {
  const lines: string[] = []
  const record = (message: string, meta?: unknown) => void lines.push(`${message} ${inspect(meta, { depth: null })}`)
  return { debug: { logger: { debug: record, info: record, warn: record, error: record } }, text: () => lines.join('\n') }
}

/** A plain (not harness) adapter: the first turn calls the host tool `shop_token`, the second answers. */
function toolCallingAdapter(): TextAdapter<'scripted', Record<string, never>, readonly ['text'], any> {
  let turn = 0
  return {
    kind: 'text',
    name: 'scripted',
    model: 'scripted',
    requires: [SandboxCapability],
    '~types': undefined as never,
    async *chatStream(options): AsyncIterable<AdapterYieldChunk> {
      const runId = options.runId ?? 'scripted-run'
      const threadId = options.threadId ?? runId
      yield { type: EventType.RUN_STARTED, runId, threadId } as StreamChunk
      if (turn++ === 0) {
        yield { type: EventType.TOOL_CALL_START, toolCallId: 'call-1', toolCallName: 'shop_token', toolName: 'shop_token' } as StreamChunk
        yield { type: EventType.TOOL_CALL_ARGS, toolCallId: 'call-1', delta: '{}' } as StreamChunk
        yield { type: EventType.TOOL_CALL_END, toolCallId: 'call-1', toolCallName: 'shop_token', input: {} } as StreamChunk
        yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'tool_calls' } as AdapterYieldChunk
        return
      }
      yield { type: EventType.TEXT_MESSAGE_START, messageId: 'm-2', role: 'assistant' } as StreamChunk
      yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm-2', delta: 'Got it.' } as StreamChunk
      yield { type: EventType.TEXT_MESSAGE_END, messageId: 'm-2' } as StreamChunk
      yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop' } as AdapterYieldChunk
    },
    async structuredOutput() {
      throw new TypeError('no structured output')
    },
  }
}

describe('secrets in chunks that do not come from a harness', () => {
  it('the shell adapter printing a secret encoded: no form in the stream or in any debug category', async () => {
    const sandbox = defineSandbox({ id: 'e2e-leak-shell', provider, lifecycle: { reuse: 'none' }, workspace: defineWorkspace({ secrets }) })
    const logs = capture()
    const out = await runShell({
      command: 'printf "b64 %s\\n" "$(printf %s "$SHOP_TOKEN" | base64)"; printf "hex %s\\n" "$(printf %s "$SHOP_TOKEN" | od -An -tx1 | tr -d " \\n")"; printf "raw %s\\n" "$SHOP_TOKEN"',
      threadId: 't-leak-shell',
      middleware: [withSandbox(sandbox)],
      debug: logs.debug as never,
    })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe('b64 [secret SHOP_TOKEN]\nhex [secret SHOP_TOKEN]\nraw [secret SHOP_TOKEN]\n')
    expect(leaks(JSON.stringify(out.chunks))).toEqual([])
    expect(logs.text()).toMatch(/tanstack-ai:output/)
    expect(leaks(logs.text())).toEqual([])
  })

  it('a host tool returning the secret base64-encoded: TOOL_CALL_RESULT and the tools/middleware logs carry it by name only', async () => {
    const sandbox = defineSandbox({ id: 'e2e-leak-tool', provider, lifecycle: { reuse: 'none' }, workspace: defineWorkspace({ secrets }) })
    const shopToken = toolDefinition({ name: 'shop_token', description: 'Return the shop token, encoded.', inputSchema: { type: 'object', properties: {} } as never }).server(async () => ({ encoded: FORMS.base64, hex: FORMS.hex }))
    const logs = capture()
    const chunks: StreamChunk[] = []
    const stream = chat({ adapter: toolCallingAdapter(), threadId: 't-leak-tool', messages: [{ role: 'user', content: 'token?' }], tools: [shopToken], middleware: [withSandbox(sandbox)], debug: logs.debug } as never) as AsyncIterable<StreamChunk>
    for await (const chunk of stream) chunks.push(chunk)
    const result = chunks.find((c) => c.type === 'TOOL_CALL_RESULT') as { content: string } | undefined
    expect(result, 'core ran the host tool and streamed its result').toBeDefined()
    expect(result!.content).toContain('[secret SHOP_TOKEN]')
    expect(leaks(JSON.stringify(chunks))).toEqual([])
    expect(logs.text()).toMatch(/tanstack-ai:tools/)
    expect(leaks(logs.text())).toEqual([])
  })
})
