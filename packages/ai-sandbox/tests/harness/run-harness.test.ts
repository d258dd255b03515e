/**
 * `runHarness`, the run loop every harness adapter shares, on its own: a tiny
 * adapter whose "CLI" is a shell line printing NDJSON, run by chat() +
 * withSandbox over the naive host provider (real `sh` processes). The loop's
 * own rules: the translator's chunks stream, a final event ends the run and
 * the CLI is gone after it, an empty prompt or a refused session id ends the
 * run before any CLI starts, a CLI that hangs is stopped at `timeoutMs`, a
 * CLI that dies without a final event ends with the translator's `finish`,
 * and a prompt over a declared limit is refused when the sandbox came from
 * elsewhere than withSandbox.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { chat, defineChatMiddleware, EventType, type ModelMessage, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import {
  declareHarnessPromptLimit,
  defineSandbox,
  harnessRunError,
  provideSandbox,
  runHarness,
  SandboxCapability,
  withSandbox,
  type HarnessExit,
  type HarnessLaunch,
  type HarnessTranslator,
  type SandboxHandle,
} from '../../src/index.js'
import { naiveHostProvider, NAIVE_TAG_ENV } from '../testkit/naive-host-provider.js'

const TAG = `run-harness-${process.pid}`
const provider = naiveHostProvider(TAG)

/** Pids of live processes carrying this file's tag (every CLI the loop started). */
function taggedProcesses(): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`${NAIVE_TAG_ENV}=${TAG}`)) out.push(Number(entry))
    } catch {
      continue // gone, or not ours to read
    }
  }
  return out
}

async function noneLeft(): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (taggedProcesses().length === 0) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

afterEach(async () => {
  expect(await noneLeft(), 'no CLI process of the test is left').toBe(true)
})

/** The NDJSON events the test CLI prints: text, then a final `end`. */
const line = (event: Record<string, unknown>) => `printf '%s\\n' '${JSON.stringify(event)}'`

/** Translates `{ t: 'text', v }` and `{ t: 'end' }` (the final event); `finish` reports a CLI that ended without one. */
function translator(ids: { runId: string; threadId: string }): HarnessTranslator {
  let ended = false
  return {
    start: () => [{ type: EventType.RUN_STARTED, runId: ids.runId, threadId: ids.threadId } as StreamChunk],
    push(event) {
      const e = event as { t?: string; v?: string }
      if (e.t === 'text') return [{ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: e.v ?? '' } as StreamChunk]
      if (e.t === 'end') {
        ended = true
        return [{ type: EventType.RUN_FINISHED, runId: ids.runId, threadId: ids.threadId, finishReason: 'stop' } as StreamChunk]
      }
      return []
    },
    finish(exit: HarnessExit) {
      if (ended) return []
      return [harnessRunError(ids.runId, ids.threadId, `the test CLI exited with ${exit.exitCode} without a final event: ${exit.stderrTail.trim()}`, 'cli_exit') as StreamChunk]
    },
  }
}

/** An adapter on runHarness whose CLI is `command` (a shell line); the prompt reaches it as $PROMPT. */
function shellAdapter(name: string, command: string, extra: { timeoutMs?: number; sessionPattern?: RegExp } = {}): TextAdapter<any, any, any, any> {
  return {
    kind: 'text',
    name,
    model: 'test',
    requires: [SandboxCapability],
    '~types': undefined as never,
    chatStream: (options: any) =>
      runHarness({
        harness: name,
        model: 'test',
        options,
        ...(extra.timeoutMs ? { timeoutMs: extra.timeoutMs } : {}),
        ...(extra.sessionPattern ? { sessionId: { pattern: extra.sessionPattern, refused: (id: string) => `refused session ${id}` } } : {}),
        translator,
        prepare: async ({ handle, prompt }): Promise<HarnessLaunch> => ({ command, cwd: handle.workspaceRoot, env: { PROMPT: prompt } }),
      }),
    async structuredOutput() {
      throw new TypeError('not used')
    },
  } as unknown as TextAdapter<any, any, any, any>
}

async function drive(adapter: TextAdapter<any, any, any, any>, messages: ModelMessage[], middleware: unknown[], modelOptions?: Record<string, unknown>): Promise<{ chunks: StreamChunk[]; thrown?: unknown }> {
  const chunks: StreamChunk[] = []
  try {
    const stream = chat({ adapter, messages, threadId: 'thread-rh', middleware, ...(modelOptions ? { modelOptions } : {}) } as never) as AsyncIterable<StreamChunk>
    for await (const chunk of stream) chunks.push(chunk)
    return { chunks }
  } catch (thrown) {
    return { chunks, thrown }
  }
}

const sandbox = () => defineSandbox({ id: `rh-${Math.random().toString(36).slice(2, 8)}`, provider, lifecycle: { reuse: 'none' } })
const user = (content: string): ModelMessage[] => [{ role: 'user', content }]
const types = (chunks: StreamChunk[]) => chunks.map((chunk) => chunk.type)
const texts = (chunks: StreamChunk[]) => chunks.flatMap((chunk) => (chunk.type === 'TEXT_MESSAGE_CONTENT' ? [chunk.delta] : []))

describe('runHarness', () => {
  it("streams the translator's chunks and ends at the final event; the prompt reaches the CLI", async () => {
    const adapter = shellAdapter('rh-text', `${line({ t: 'text', v: 'hello ' })}; printf '%s\\n' "{\\"t\\":\\"text\\",\\"v\\":\\"$PROMPT\\"}"; ${line({ t: 'end' })}`)
    const { chunks, thrown } = await drive(adapter, user('from the test'), [withSandbox(sandbox())])
    expect(thrown).toBeUndefined()
    expect(texts(chunks)).toEqual(['hello ', 'from the test'])
    expect(types(chunks).at(-1)).toBe('RUN_FINISHED')
  })

  it('stops a CLI that lingers after its final event (exitGraceMs), so the run ends', async () => {
    const adapter = shellAdapter('rh-linger', `${line({ t: 'end' })}; exec sleep 30`)
    const started = Date.now()
    const { chunks } = await drive(adapter, user('go'), [withSandbox(sandbox())])
    expect(types(chunks).at(-1)).toBe('RUN_FINISHED')
    expect(Date.now() - started, 'ended within the default grace, not after the sleep').toBeLessThan(25_000)
  })

  it('ends with no_prompt when the latest user message has no text', async () => {
    const adapter = shellAdapter('rh-empty', `touch started; ${line({ t: 'end' })}`)
    const { chunks } = await drive(adapter, user('   '), [withSandbox(sandbox())])
    expect(chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'no_prompt' })
  })

  it('ends with invalid_session_id for a session id the adapter refuses', async () => {
    const adapter = shellAdapter('rh-session', line({ t: 'end' }), { sessionPattern: /^[a-z]+$/ })
    const { chunks } = await drive(adapter, user('go'), [withSandbox(sandbox())], { sessionId: '-rf' })
    expect(chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'invalid_session_id', message: 'refused session -rf' })
  })

  it('stops a CLI that hangs without output at timeoutMs and ends with timeout', async () => {
    const adapter = shellAdapter('rh-hang', 'exec sleep 60', { timeoutMs: 300 })
    const { chunks } = await drive(adapter, user('go'), [withSandbox(sandbox())])
    expect(chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'timeout' })
  })

  it("ends with the translator's finish when the CLI dies without a final event", async () => {
    const adapter = shellAdapter('rh-crash', `${line({ t: 'text', v: 'partial' })}; echo boom >&2; exit 3`)
    const { chunks } = await drive(adapter, user('go'), [withSandbox(sandbox())])
    expect(texts(chunks)).toEqual(['partial'])
    expect(chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'cli_exit', message: expect.stringMatching(/exited with 3 .*boom/) })
  })

  it('refuses a prompt over the declared limit with prompt_too_large when the sandbox came from another middleware', async () => {
    const name = 'rh-limit'
    declareHarnessPromptLimit(name, { maxPromptChars: 5, source: 'a test limit' })
    const handle: SandboxHandle = await provider.create({})
    try {
      const own = defineChatMiddleware({ name: 'own-sandbox', provides: [SandboxCapability], setup: (ctx) => provideSandbox(ctx, handle) })
      const { chunks } = await drive(shellAdapter(name, `touch started; ${line({ t: 'end' })}`), user('too long'), [own])
      expect(chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'prompt_too_large', message: expect.stringMatching(/8 characters.*at most 5/) })
      expect((await handle.process.exec('ls')).stdout, 'no CLI started').toBe('')
    } finally {
      await handle.destroy()
    }
  })
})
