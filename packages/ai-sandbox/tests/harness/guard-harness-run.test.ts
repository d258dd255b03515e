/**
 * The harness run guard: the run's ids, RUN_ERROR chunks redacted on the way
 * out, a throw turned into one redacted `adapter_error` (and logged), and no
 * chunk of its own after the run ended or the request was aborted.
 */
import { describe, expect, it } from 'vitest'
import type { AdapterYieldChunk, CapabilityContext } from '@tanstack/ai'
import { harnessRunIds } from '../../src/harness/guard-harness-run.js'
import { guardHarnessRun, harnessRunError, provideProjection, type GuardHarnessRunOptions, type HarnessRunContext, type HarnessRunOptions } from '../../src/index.js'

const SECRET = 'sk-live-0123456789'
/** A forwarded host credential, read from a stand-in for process.env. */
const secrets = { forwardedHostEnv: ['API_KEY'], hostEnv: { API_KEY: SECRET } }
const finished = (runId: string, threadId: string) => ({ type: 'RUN_FINISHED', runId, threadId }) as unknown as AdapterYieldChunk
const text = (delta: string) => ({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta }) as unknown as AdapterYieldChunk

/** chatStream's options as the guard reads them, with a logger that records `errors` lines. */
function runOptions(extra: Partial<HarnessRunOptions> = {}) {
  const errors: { message: string; meta: unknown }[] = []
  const options: HarnessRunOptions = { runId: 'run-1', threadId: 'thread-1', logger: { errors: (message, meta) => void errors.push({ message, meta }) }, ...extra }
  return { options, errors }
}

async function collect(stream: AsyncIterable<AdapterYieldChunk>): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = []
  for await (const chunk of stream) out.push(chunk as unknown as Record<string, unknown>)
  return out
}

function guard(options: HarnessRunOptions, run: GuardHarnessRunOptions['run']) {
  return guardHarnessRun({ harness: 'codex', options, secrets, run })
}

describe('harnessRunIds', () => {
  it('takes options.runId, else the run id on the middleware context, else <prefix>-<uuid>; the thread defaults to the run', () => {
    const ctx = { capabilities: { markProvided: () => undefined }, runId: 'ctx-run' } as unknown as CapabilityContext
    expect(harnessRunIds({ runId: 'r1', threadId: 't1', capabilities: ctx }, 'codex')).toEqual({ runId: 'r1', threadId: 't1' })
    expect(harnessRunIds({ capabilities: ctx }, 'codex')).toEqual({ runId: 'ctx-run', threadId: 'ctx-run' })
    const generated = harnessRunIds({ threadId: 't2', capabilities: { ...ctx, runId: '' } as CapabilityContext }, 'claude')
    expect(generated.runId).toMatch(/^claude-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    expect(generated.threadId).toBe('t2')
    expect(harnessRunIds({}, 'grok').runId).toMatch(/^grok-/)
  })
})

describe('guardHarnessRun', () => {
  it('hands the run its ids and redactor and passes its chunks through, scrubbed', async () => {
    const { options } = runOptions()
    let seen: HarnessRunContext | undefined
    const out = await collect(
      guard(options, async function* (run) {
        seen = run
        yield text(`key ${SECRET}`)
        yield finished(run.runId, run.threadId)
      }),
    )
    expect(seen?.runId).toBe('run-1')
    expect(seen?.threadId).toBe('thread-1')
    expect(seen?.redact(`a ${SECRET} b`)).toBe('a [secret API_KEY] b')
    // Every chunk leaves scrubbed (issue 16): the stream is logged by core and may be persisted.
    expect(out).toEqual([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'key [secret API_KEY]' }, { type: 'RUN_FINISHED', runId: 'run-1', threadId: 'thread-1' }])
  })

  it('redacts both messages of a RUN_ERROR the run yields, and adds nothing after it', async () => {
    const { options, errors } = runOptions()
    const out = await collect(
      guard(options, async function* (run) {
        yield harnessRunError(run.runId, run.threadId, `auth failed for ${SECRET}`, 'auth')
        throw new Error(`teardown after the error ${SECRET}`)
      }),
    )
    expect(out).toEqual([{ type: 'RUN_ERROR', runId: 'run-1', threadId: 'thread-1', message: 'auth failed for [secret API_KEY]', code: 'auth', error: { message: 'auth failed for [secret API_KEY]', code: 'auth' } }])
    expect(errors).toEqual([])
  })

  it('turns a throw into one RUN_ERROR adapter_error with a redacted message, and logs it redacted', async () => {
    const { options, errors } = runOptions()
    const out = await collect(
      guard(options, async function* () {
        yield text('partial')
        throw new Error(`the sandbox is gone (token ${SECRET})`)
      }),
    )
    const message = 'codex: the run failed inside the adapter: the sandbox is gone (token [secret API_KEY])'
    expect(out).toEqual([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'partial' }, { type: 'RUN_ERROR', runId: 'run-1', threadId: 'thread-1', message, code: 'adapter_error', error: { message, code: 'adapter_error' } }])
    expect(errors).toEqual([{ message: 'codex adapter failed', meta: { error: 'Error: the sandbox is gone (token [secret API_KEY])' } }])
    expect(JSON.stringify(errors)).not.toContain(SECRET)
  })

  it('reports a non-Error throw and a run that throws before returning a stream', async () => {
    const thrown = await collect(
      guard(runOptions().options, async function* () {
        yield* []
        throw 'plain string'
      }),
    )
    expect(thrown).toMatchObject([{ type: 'RUN_ERROR', code: 'adapter_error', message: 'codex: the run failed inside the adapter: plain string' }])
    const early = await collect(
      guard(runOptions().options, () => {
        throw new TypeError('bad input')
      }),
    )
    expect(early).toMatchObject([{ type: 'RUN_ERROR', code: 'adapter_error', message: 'codex: the run failed inside the adapter: bad input' }])
  })

  it('adds nothing when the run throws after RUN_FINISHED', async () => {
    const { options, errors } = runOptions()
    const out = await collect(
      guard(options, async function* (run) {
        yield finished(run.runId, run.threadId)
        throw new Error('cleanup failed')
      }),
    )
    expect(out.map((c) => c.type)).toEqual(['RUN_FINISHED'])
    expect(errors).toEqual([])
  })

  it('adds nothing when the request was aborted and the throw is its teardown', async () => {
    const abort = new AbortController()
    const { options, errors } = runOptions({ request: { signal: abort.signal } })
    const out = await collect(
      guard(options, async function* () {
        yield text('before the abort')
        abort.abort()
        throw new Error('the CLI was killed')
      }),
    )
    expect(out.map((c) => c.type)).toEqual(['TEXT_MESSAGE_CONTENT'])
    expect(errors).toEqual([])
  })

  it('is lazy: neither the secrets nor the run are read before iteration, and the ids fall back to <harness>-<uuid>', async () => {
    const calls: string[] = []
    const hostEnv = {
      get API_KEY() {
        calls.push('secrets')
        return SECRET
      },
    }
    const stream = guardHarnessRun({
      harness: 'opencode',
      options: { logger: { errors: () => undefined } },
      secrets: { forwardedHostEnv: ['API_KEY'], hostEnv },
      run: async function* (run) {
        calls.push('run')
        yield finished(run.runId, run.threadId)
      },
    })
    expect(calls).toEqual([])
    const [chunk] = await collect(stream)
    expect([...new Set(calls)]).toEqual(['secrets', 'run'])
    expect(chunk?.runId).toMatch(/^opencode-[0-9a-f-]{36}$/)
    expect(chunk?.threadId).toBe(chunk?.runId)
  })

  it('redacts the workspace secrets from the capabilities, also without other secrets', async () => {
    const capabilities = { capabilities: { markProvided: () => undefined } } as unknown as CapabilityContext
    provideProjection(capabilities, { resolveSecretEnv: () => ({ GITHUB_TOKEN: 'ghp_workspace_token' }) } as never)
    const out = await collect(
      guardHarnessRun({
        harness: 'grok-build',
        options: runOptions({ capabilities }).options,
        run: async function* () {
          yield* []
          throw new Error(`clone failed with ghp_workspace_token, ${SECRET} is not known here`)
        },
      }),
    )
    expect(out).toMatchObject([{ message: `grok-build: the run failed inside the adapter: clone failed with [secret GITHUB_TOKEN], ${SECRET} is not known here` }])
  })
})
