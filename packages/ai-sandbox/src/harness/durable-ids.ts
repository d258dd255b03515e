/**
 * Run and thread ids for durable runs: the one place an adapter decides
 * between the caller's id and a generated one. Pure; no I/O.
 * Invariant: a durable run is never given a generated `runId` (the fallback
 * is not even called), and an attach is never given a generated `threadId`.
 * Design notes: docs/design/harness-adapters.md
 */
import { z } from 'zod'
import { SandboxConfigError, SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'
import { parseOptions } from '../contracts/validate.js'

/**
 * Thrown when a durable run (sandbox durability wired: `withSandbox(def, { runs, durability })`)
 * has no `runId`. Pass `chat({ runId })` with an id unique to the run.
 *
 * @example
 * ```ts
 * if (DurableRunIdRequiredError.isInstance(error)) return badRequest('runId is required')
 * ```
 */
export class DurableRunIdRequiredError extends SandboxError<'run-id-required'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/DurableRunIdRequiredError'
  /** The adapter that refused, e.g. `claude-code`. */
  readonly adapter: string

  constructor(adapter: string, options?: SandboxErrorOptions) {
    super(
      'run-id-required',
      `The ${adapter} adapter is running a durable run (sandbox durability is wired) without a runId. Pass chat({ runId }) with an id unique to this run. ` +
        `A durable run never gets a generated id: its journal path and its message ids are derived from the runId, and a host that takes the run over can only find them again from an id it can recompute.`,
      options,
    )
    this.adapter = adapter
  }
}

/**
 * Thrown when an attach (`withSandbox(def, { durability: { attach: true } })`)
 * has no `threadId`. Pass the run record's `threadId` into `chat({ threadId })`.
 *
 * @example
 * ```ts
 * chat({ adapter, runId, threadId: record.threadId, middleware: [withSandbox(def, { runs, durability: { adapter: log, attach: true } })] })
 * ```
 */
export class DurableThreadIdRequiredError extends SandboxError<'thread-id-required'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/DurableThreadIdRequiredError'
  /** The adapter that refused, e.g. `codex`. */
  readonly adapter: string

  constructor(adapter: string, options?: SandboxErrorOptions) {
    super(
      'thread-id-required',
      `The ${adapter} adapter is attaching to an existing durable run (durability.attach: true) without a threadId. ` +
        `Pass the run record's threadId (RunRecord.threadId, which sandboxRunDriver hands to drive({ runId, threadId, signal })) into chat({ threadId }). ` +
        `Every chunk carries the threadId, so a generated one would differ from the stored log at its very first chunk and the replay could not be aligned.`,
      options,
    )
    this.adapter = adapter
  }
}

/**
 * Thrown by an adapter that does not journal its agent's output (OpenCode;
 * Grok Build, whose ACP conversation over stdio cannot be journaled) when
 * asked to attach to a running run: there is no journal to replay.
 * Start a fresh run instead, or use a journaling adapter (Claude Code, Codex).
 *
 * @example
 * ```ts
 * if (DurableAttachNotSupportedError.isInstance(error)) return restartFresh()
 * ```
 */
export class DurableAttachNotSupportedError extends SandboxError<'attach-not-supported'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/DurableAttachNotSupportedError'
  /** The adapter that cannot attach, e.g. `opencode`. */
  readonly adapter: string

  constructor(adapter: string, options?: SandboxErrorOptions) {
    super(
      'attach-not-supported',
      `The ${adapter} adapter cannot attach to a running run (durability.attach: true): it does not journal its agent's output, so there is nothing to replay. ` +
        `Start the run fresh without attach, or use an adapter that journals (Claude Code, Codex).`,
      options,
    )
    this.adapter = adapter
  }
}

/** What {@link resolveDurableRunId} needs to know about the run. */
export interface ResolveDurableRunIdOptions {
  /** True when sandbox durability is wired for this run (it journals). */
  durable: boolean
  /** The adapter's name, for the error message, e.g. `claude-code`. */
  adapter: string
  /** Makes an id for a non-durable run; never called for a durable one. */
  fallback: () => string
}

/** What {@link resolveDurableThreadId} needs to know about the run. */
export interface ResolveDurableThreadIdOptions extends ResolveDurableRunIdOptions {
  /** True when this `chat()` attaches to an existing run instead of starting one. */
  attaching: boolean
}

const runIdOptionsSchema = z
  .object({
    durable: z.boolean({ message: 'expected true or false' }),
    adapter: z.string().min(1, "expected the adapter's name, e.g. 'claude-code'"),
    fallback: z.custom<() => string>((v) => typeof v === 'function', { message: 'expected a function () => string that makes an id' }),
  })
  .strict()

const threadIdOptionsSchema = runIdOptionsSchema.extend({ attaching: z.boolean({ message: 'expected true or false' }) }).strict()

/**
 * The run id to use: `runId` when it is a non-empty string, otherwise
 * `fallback()` for a non-durable run. A durable run without one throws:
 * a generated id is never minted for it, not even one that is thrown away.
 *
 * @param runId - The caller's `chat({ runId })`, possibly absent.
 * @param options - `durable`, `adapter`, `fallback`.
 * @throws DurableRunIdRequiredError `run-id-required` for a durable run without a runId.
 * @throws SandboxConfigError `invalid-option` when `runId` is not a string, or for bad options.
 * @example
 * ```ts
 * const runId = resolveDurableRunId(options.runId, { durable: journal !== undefined, adapter: 'codex', fallback: () => `codex-${randomUUID()}` })
 * ```
 */
export function resolveDurableRunId(runId: string | undefined, options: ResolveDurableRunIdOptions): string {
  const { durable, adapter, fallback } = parseOptions(runIdOptionsSchema, options, 'resolveDurableRunId')
  if (given(runId, 'runId')) return runId
  if (durable) throw new DurableRunIdRequiredError(adapter)
  return fallback()
}

/**
 * The thread id to use: `threadId` when it is a non-empty string, otherwise
 * `fallback()`. Throws only for a durable run that attaches: a fresh durable
 * run is the one that establishes its thread id, so it may mint one.
 *
 * @param threadId - The caller's `chat({ threadId })`, possibly absent.
 * @param options - `durable`, `attaching`, `adapter`, `fallback`.
 * @throws DurableThreadIdRequiredError `thread-id-required` for a durable attach without a threadId.
 * @throws SandboxConfigError `invalid-option` when `threadId` is not a string, or for bad options.
 * @example
 * ```ts
 * const threadId = resolveDurableThreadId(options.threadId, { durable: true, attaching: true, adapter: 'codex', fallback: () => runId })
 * ```
 */
export function resolveDurableThreadId(threadId: string | undefined, options: ResolveDurableThreadIdOptions): string {
  const { durable, attaching, adapter, fallback } = parseOptions(threadIdOptionsSchema, options, 'resolveDurableThreadId')
  if (given(threadId, 'threadId')) return threadId
  if (durable && attaching) throw new DurableThreadIdRequiredError(adapter)
  return fallback()
}

/** True for a non-empty string; absent or empty is false; anything else is a config error. */
function given(id: unknown, field: 'runId' | 'threadId'): id is string {
  if (id === undefined || id === null || id === '') return false
  if (typeof id === 'string') return true
  throw new SandboxConfigError(field, `Invalid option chat({ ${field} }): expected a string, got ${typeof id}.`)
}
