/**
 * The guard every harness adapter's `chatStream` runs inside: it fixes the
 * run's ids, takes the run's secrets (raw and encoded) out of every chunk,
 * and turns an unexpected throw into a `RUN_ERROR` `adapter_error`.
 * Invariant: the guarded stream never throws what the run throws, and adds no
 * chunk after the run's `RUN_FINISHED`/`RUN_ERROR` or once the request aborted.
 * Design notes: docs/design/harness-adapters.md
 */
import { randomUUID } from 'node:crypto'
import type { AdapterYieldChunk, TextOptions } from '@tanstack/ai'
import { SandboxLimitError } from '../contracts/errors.js'
import { JournalAttachUnavailableError } from '../journal/attach-preflight.js'
import { JournalError } from '../journal/errors.js'
import { harnessRunError } from './harness-run-error.js'
import { createHarnessSecretScrubber, type HarnessSecretRedactorOptions } from './harness-secret-redactor.js'

/** What {@link guardHarnessRun} hands the run. */
export interface HarnessRunContext {
  /** The run's id; every chunk of the run carries it. */
  readonly runId: string
  /** The run's thread id. */
  readonly threadId: string
  /** Takes the run's secret values out of a text, in every form the scrubber knows and also the starts and ends of those forms (8+ characters); use it on everything the run logs. */
  readonly redact: (text: string) => string
}

/** The part of `chatStream`'s options that {@link guardHarnessRun} reads (any `TextOptions` fits). */
export type HarnessRunOptions = Pick<TextOptions, 'runId' | 'threadId' | 'capabilities' | 'request'> & {
  /** Receives one `errors` line, redacted, when the run throws. */
  logger: Pick<TextOptions['logger'], 'errors'>
}

/** Options of {@link guardHarnessRun}. */
export interface GuardHarnessRunOptions {
  /** The adapter's name (its `TextAdapter.name`, e.g. `claude-code`): starts the `adapter_error` message and the log line. */
  harness: string
  /** Start of a generated run id, `<prefix>-<uuid>`. Default: `harness`. */
  runIdPrefix?: string
  /** `chatStream`'s options: ids, capabilities, the request's abort signal, the logger. */
  options: HarnessRunOptions
  /**
   * The secret values besides the workspace's (which come from `options.capabilities`):
   * forwarded host variables and the adapter's `env` option, as for
   * `createHarnessSecretRedactor`. Read once, when iteration starts. Default: workspace secrets only.
   */
  secrets?: Omit<HarnessSecretRedactorOptions, 'capabilities'>
  /** The run itself: the adapter's chunks. It may throw; the guard reports it. */
  run: (run: HarnessRunContext) => AsyncIterable<AdapterYieldChunk>
}

/**
 * The ids of one harness run.
 *
 * @param options - `chatStream`'s options.
 * @param runIdPrefix - Start of a generated run id, e.g. `codex`.
 * @returns `runId`: `options.runId`, else the run id the chat engine put on
 *   the middleware context (so chunks carry the id `withSandbox` and devtools
 *   saw), else `<runIdPrefix>-<uuid>`; `threadId`: `options.threadId`, else the run id.
 * @example
 * ```ts
 * harnessRunIds({ threadId: 't1' }, 'codex') // { runId: 'codex-1b4e…', threadId: 't1' }
 * ```
 */
export function harnessRunIds(options: Pick<TextOptions, 'runId' | 'threadId' | 'capabilities'>, runIdPrefix: string): { runId: string; threadId: string } {
  const runId = options.runId ?? contextRunId(options.capabilities) ?? `${runIdPrefix}-${randomUUID()}`
  return { runId, threadId: options.threadId ?? runId }
}

/**
 * Run a harness adapter's stream inside the guard. Every chunk of `run`
 * passes through the run's secret scrubber: each string field (a
 * `TOOL_CALL_RESULT`'s content, a `RUN_ERROR`'s message, `CUSTOM` values,
 * `STATE` snapshots, `rawEvent`) has every secret form replaced by
 * `[secret NAME]`, and streamed deltas are scrubbed across chunk boundaries
 * (a tail that could start a secret waits for the next delta, the message's
 * end or the terminal chunk). When `run`
 * throws, the stream ends with `RUN_ERROR` `adapter_error`
 * (`<harness>: the run failed inside the adapter: <error message>`, redacted)
 * and `options.logger.errors` gets `<harness> adapter failed`; it ends with
 * nothing instead when the request was aborted (the throw is the abort's
 * teardown) or the run had already ended.
 *
 * @param input - See {@link GuardHarnessRunOptions}.
 * @returns The guarded stream, lazy like an async generator: nothing runs before the first `next()`.
 * @throws UnknownSecretError from iteration when a `secrets.env` reference was not made by `createSecrets`; never what `run` throws.
 * @example
 * ```ts
 * chatStream: (options) =>
 *   guardHarnessRun({ harness: 'codex', options, secrets: { forwardedHostEnv: ['OPENAI_API_KEY'], env: config.env }, run: (run) => runCodex(model, config, options, run) }),
 * ```
 */
export async function* guardHarnessRun(input: GuardHarnessRunOptions): AsyncGenerator<AdapterYieldChunk, void, undefined> {
  const { harness, options, run } = input
  const { runId, threadId } = harnessRunIds(options, input.runIdPrefix ?? harness)
  const scrubber = createHarnessSecretScrubber({ ...input.secrets, capabilities: options.capabilities })
  // What the run logs may hold a piece of a secret (a raw CLI line carrying one delta): pieces go too.
  const redact = scrubber.fragments
  const chunks = scrubber.stream()
  const signal = (options.request as RequestInit | undefined)?.signal ?? undefined
  let ended = false
  try {
    for await (const out of run({ runId, threadId, redact })) {
      if (out.type === 'RUN_ERROR' || out.type === 'RUN_FINISHED') ended = true
      yield* chunks.push(out) as AdapterYieldChunk[]
    }
    if (!ended) yield* chunks.end() as AdapterYieldChunk[]
  } catch (error) {
    if (signal?.aborted || ended) return
    yield* chunks.end() as AdapterYieldChunk[]
    // A memory bound (a CLI line past maxLineBytes) or a journal that stopped (`journal_stalled`) is named by its own code.
    const limit = SandboxLimitError.isInstance(error) || JournalError.isInstance(error) || JournalAttachUnavailableError.isInstance(error) ? error : undefined
    const message = redact(limit ? `${harness}: ${limit.message}` : `${harness}: the run failed inside the adapter: ${error instanceof Error ? error.message : String(error)}`)
    options.logger.errors(`${harness} adapter failed`, { error: redact(String(error)) })
    yield harnessRunError(runId, threadId, message, limit ? limit.reason.replaceAll('-', '_') : 'adapter_error')
  }
}

/** The run id the chat engine put on the middleware context; `chat()` passes `options.runId` only when the caller set one. */
function contextRunId(capabilities: object | undefined): string | undefined {
  const runId = (capabilities as { runId?: unknown } | undefined)?.runId
  return typeof runId === 'string' && runId !== '' ? runId : undefined
}
