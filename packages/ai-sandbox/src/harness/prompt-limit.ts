/**
 * The longest prompt an agent CLI accepts, declared by its adapter and checked
 * by `withSandbox` before any record, lease or sandbox exists, so a request
 * the CLI must refuse fails at once with `prompt_too_large` instead of booting
 * a sandbox first. Owns the declared limits (one per adapter name, which is
 * what middleware sees as `ctx.provider`) and the error.
 */
import type { ModelMessage } from '@tanstack/ai'
import { SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'
import { messageText } from './build-prompt.js'

/** A CLI's prompt limit, as {@link declareHarnessPromptLimit} records it. */
export interface HarnessPromptLimit {
  /** The most characters (UTF-16 code units, JavaScript's `string.length`) of the latest user message the CLI takes. */
  readonly maxPromptChars: number
  /** Where the figure comes from (the CLI and version it was measured on), for the error message. */
  readonly source: string
}

const limits = new Map<string, HarnessPromptLimit>()

/**
 * Record the prompt limit of the CLI behind adapter `adapterName` (the
 * adapter's `name`, e.g. `claude-code`). Adapters call it when they are
 * created; a later call for the same name replaces the limit.
 * @throws TypeError for a limit that is not a positive whole number.
 */
export function declareHarnessPromptLimit(adapterName: string, limit: HarnessPromptLimit): void {
  if (!Number.isSafeInteger(limit.maxPromptChars) || limit.maxPromptChars <= 0) throw new TypeError(`declareHarnessPromptLimit(${JSON.stringify(adapterName)}): maxPromptChars must be a positive whole number`)
  limits.set(adapterName, Object.freeze({ ...limit }))
}

/** The declared prompt limit of adapter `adapterName`, or `undefined` when its adapter declared none. */
export function harnessPromptLimit(adapterName: string): HarnessPromptLimit | undefined {
  return limits.get(adapterName)
}

/**
 * A prompt longer than the agent CLI takes. `withSandbox` throws it from the
 * run's setup, before the run record, lease or sandbox exists; `code` is
 * `prompt_too_large` (the `RUN_ERROR` code adapters use when the CLI itself
 * refuses a prompt as too long).
 *
 * @example
 * ```ts
 * if (PromptTooLargeError.isInstance(error)) askForAShorterRequest(error.maxPromptChars)
 * ```
 */
export class PromptTooLargeError extends SandboxError<'prompt-too-large'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/PromptTooLargeError'
  /** The `RUN_ERROR` code of the same failure, `prompt_too_large`. */
  readonly code = 'prompt_too_large'
  /** The adapter, e.g. `claude-code`. */
  readonly harness: string
  /** Characters in the latest user message. */
  readonly promptChars: number
  /** The limit that was passed. */
  readonly maxPromptChars: number

  constructor(harness: string, promptChars: number, limit: HarnessPromptLimit, options?: SandboxErrorOptions) {
    super(
      'prompt-too-large',
      `${harness}: the latest user message has ${promptChars} characters; the CLI takes at most ${limit.maxPromptChars} (${limit.source}). ` +
        'Send a shorter request: put large material in the workspace (a file the agent reads) instead of the message.',
      options,
    )
    this.harness = harness
    this.promptChars = promptChars
    this.maxPromptChars = limit.maxPromptChars
  }
}

/**
 * Check the latest user message of `messages` against the limit adapter
 * `adapterName` declared; nothing happens when it declared none.
 * @throws PromptTooLargeError when the message is longer than the limit.
 */
export function assertPromptWithinLimit(adapterName: string, messages: readonly ModelMessage[]): void {
  const error = promptTooLarge(adapterName, messages)
  if (error) throw error
}

/** The error {@link assertPromptWithinLimit} would throw, or `undefined` when the prompt is within the limit (or none is declared). */
export function promptTooLarge(adapterName: string, messages: readonly ModelMessage[]): PromptTooLargeError | undefined {
  const limit = limits.get(adapterName)
  if (!limit) return undefined
  const latest = [...messages].reverse().find((message) => message.role === 'user')
  const chars = latest ? messageText(latest).length : 0
  return chars > limit.maxPromptChars ? new PromptTooLargeError(adapterName, chars, limit) : undefined
}
