/**
 * `withSandbox`: the chat middleware that gives a run its sandbox. This file
 * owns its options and wires the hooks to one file per phase: `./run-setup.ts`,
 * `./run-turn.ts`, `./run-abort.ts`, `./run-end.ts`, over `./run-state.ts`.
 * Source: spec 000, "Lifecycle & resume", "Instance durability", "File-event
 * hooks", "Takeover". Design notes: docs/design/with-sandbox.md
 */
import { defineChatMiddleware, DetachableRunCapability, type AbortInfo, type RunStore } from '@tanstack/ai'
import { PendingTurnCapability, RunDisconnectCapability, SandboxRuntimeCapability } from '@tanstack/ai/adapter-internals'
import { LocksCapability, type LockStore } from '@tanstack/ai/locks'
import { z } from 'zod'
import { ProjectionCapability, SandboxCapability, SandboxDurabilityCapability, SandboxInstanceStoreCapability, SandboxPolicyCapability, SandboxRunChunksCapability, SandboxTranscriptCapability } from '../capabilities/tokens.js'
import { parseOptions } from '../contracts/validate.js'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import type { SandboxInstanceStore } from '../definition/instance-store.js'
import type { SandboxDurabilityOptions } from '../durability/capability.js'
import { sandboxSnapshotsSchema, type SandboxSnapshots } from '../snapshots/sandbox-snapshots.js'
import { durabilityOptionShapes, resolveSandboxDurability } from './durability.js'
import { endAbortedRun } from './run-abort.js'
import { endFailedRun, endFinishedRun } from './run-end.js'
import { setUpRun } from './run-setup.js'
import type { WithSandboxScope } from './run-state.js'
import { passRunChunk } from './run-turn.js'
import { withoutSandboxToolCalls } from './tool-history.js'

/** Options of {@link withSandbox}. */
export interface SandboxMiddlewareOptions {
  /** Instance store. Wins over `SandboxInstanceStoreCapability`, which wins over the definition's in-memory store. */
  instances?: SandboxInstanceStore
  /**
   * Lock store for `ensure`. Wins over `LocksCapability` (`withLocks`), which
   * wins over a process-wide in-memory lock. A durable run warns (once per
   * `withSandbox`) when the lock in effect is in-memory or absent: it cannot
   * coordinate hosts.
   */
  locks?: LockStore
  /**
   * The run record store, the SAME one chat persistence uses
   * (`persistence.stores.runs`). A run is durable only when `runs` AND
   * `durability` are given; one alone is today's behaviour, with no warning.
   * `withSandbox` creates the record of a run it starts before the sandbox
   * boots (`createOrResume`, spec 002) and patches it (`detachedSince`,
   * `sandboxKey`); an attach only patches it.
   */
  runs?: RunStore
  /**
   * The run's event log (`adapter`, the SAME instance the transport gets) and
   * the journal options: `attach` (an attach route only; default `false`),
   * `attachWaitMs` (ms, default 10 000), `journalDir` (absolute; default the
   * handle's own `journalDir`, else `/tmp/tanstack-runs`). Durable only
   * together with `runs`.
   */
  durability?: SandboxDurabilityOptions
  /**
   * On a durable run, an abort with no cancel recorded (neither
   * `requestRunCancel` on the record nor `RUN_CANCEL_REASON` as the abort
   * reason) detaches: the sandbox and its agent stay, the record gets
   * `detachedSince` (epoch ms) + `sandboxKey`. `false`: every abort destroys the
   * sandbox, as without durability. Default `true`. Ignored unless durable.
   */
  detachOnDisconnect?: boolean
  /**
   * Portable snapshots (spec 000): from `createSandboxSnapshots(...)` or
   * `memorySandboxSnapshots(...)`, with `withPersistence(snapshots.persistence)`
   * before `withSandbox` in middleware. Each run of a thread holds the
   * thread's writer lease; a new sandbox (never a live resumed one) gets
   * the thread's latest checkpoint restored before the run projects
   * anything; a successful run whose transcript was saved writes a
   * checkpoint of the workspace before the lifecycle may destroy it. Runs
   * without a `threadId` take no part.
   */
  snapshots?: SandboxSnapshots
}

const storeSchema = z.custom<SandboxInstanceStore>(
  (v) => typeof v === 'object' && v !== null && ['get', 'upsert', 'delete'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
  { message: 'expected a SandboxInstanceStore (get, upsert, delete)' },
)
const optionsSchema = z
  .object({
    instances: storeSchema.optional(),
    locks: z.custom<LockStore>((v) => typeof v === 'object' && v !== null && typeof (v as LockStore).withLock === 'function', { message: 'expected a LockStore (withLock)' }).optional(),
    snapshots: sandboxSnapshotsSchema.optional(),
    ...durabilityOptionShapes,
  })
  .strict()

/**
 * Provide a sandbox to a `chat()` run. Harness adapters that declare
 * `requires: [SandboxCapability]` read it with `getSandbox(options.capabilities)`.
 *
 * Lifecycle: `reuse: 'thread'` keeps one sandbox per thread across runs (and
 * `keepAlive` destroys it after idling); `reuse: 'none'` or
 * `destroyOnComplete` destroys it after the run (after the last of several
 * concurrent runs of the thread); an abort while the run is live destroys it,
 * and an abort after the run ended (web frameworks abort a request's signal
 * after a normal response) does not. Runs of one sandbox key take turns in
 * this process (a second run of the thread waits in setup until the first
 * reached its terminal hook), so each run's file events are its own work.
 * Every chunk passed on, every `file.changed` diff and every log line of the
 * run (core's own categories too) has the workspace's secrets removed, raw and
 * encoded (base64, base64url, URL, hex; see docs/events.md).
 * The tenant comes from `chat({ context: { tenantId } })` when present.
 * Transitions log under the `sandbox` debug category (`chat({ debug: { sandbox: true } })`).
 *
 * Durable runs (spec 000 "Takeover"): with BOTH `runs` and `durability`, the
 * harness journals its agent (and tails the journal with `attach: true`), and an
 * abort with no cancel recorded detaches instead of destroying: the sandbox
 * stays whatever `destroyOnComplete` says, the record gets `detachedSince` +
 * `sandboxKey`, and the delivery log stays open for a takeover. A cancel in
 * either band (`requestRunCancel(runs, runId)`, or aborting with
 * `RUN_CANCEL_REASON`) destroys the sandbox whatever `destroyOnComplete` or
 * `keepAlive` say. A live durable run re-reads its record every
 * `durability.cancelPollMs` (default `DEFAULT_CANCEL_POLL_MS`, 1000 ms), so a
 * cancel recorded on another host stops it (abort with `RUN_CANCEL_REASON`,
 * sandbox destroyed) within one interval. A durable run that completes clears `detachedSince`.
 *
 * @param sandbox - A definition from `defineSandbox`.
 * @param options - Optional `instances` and `locks` stores; `runs` + `durability` (+ `detachOnDisconnect`, default `true`) for durable runs; `snapshots` for portable snapshots.
 * @throws SandboxSnapshotError (from the run's setup, before the sandbox is ensured) `persistence-missing` when `snapshots` is given without `withPersistence(snapshots.persistence)` before `withSandbox`, `lease-held` when another host's run of the thread holds its writer lease; from the run's end, a failed checkpoint (after the lifecycle ran).
 * @throws SandboxConfigError for invalid options (at call time), naming the field.
 * @throws PromptTooLargeError `prompt-too-large` (from the run's setup, before any record, lease or sandbox exists) when the latest user message is longer than the limit the adapter declared with `declareHarnessPromptLimit` (Claude Code: 3,000,000 characters).
 * @throws DurableRunIdRequiredError `run-id-required` (from the run's setup, before any record, lease or sandbox exists) for a durable run without `chat({ runId })`.
 * @throws DurableThreadIdRequiredError `thread-id-required` (likewise) for an attach without `chat({ threadId })`.
 * @throws JournalAttachUnavailableError `unknown-run` (likewise) for an attach to a run the run store has no record of.
 * @throws InvalidRunIdError `invalid-run-id` (from the run's setup, before any lease, sandbox, journal or baseline exists) for a durable run whose `chat({ runId })` breaks the run-id rule of `assertValidRunId`.
 * @example
 * ```ts
 * chat({ adapter, messages, threadId, middleware: [withSandbox(sandbox)] })
 * // durable: the same runs store as persistence, the same log as the transport
 * chat({ adapter, messages, threadId, runId, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } })] })
 * ```
 */
export function withSandbox(sandbox: SandboxDefinition, options: SandboxMiddlewareOptions = {}) {
  if (typeof sandbox !== 'object' || sandbox === null || typeof sandbox.ensure !== 'function') {
    parseOptions(z.custom(() => false, { message: 'expected the result of defineSandbox({ ... })' }), sandbox, 'withSandbox.sandbox')
  }
  const parsed = parseOptions(optionsSchema, options, 'withSandbox.options')
  const durable = resolveSandboxDurability(parsed)
  const scope: WithSandboxScope = { sandbox, parsed, durable, runs: new WeakMap(), noticed: new WeakMap(), warnedLocks: false }

  return defineChatMiddleware({
    name: 'sandbox',
    provides: [
      SandboxCapability,
      SandboxPolicyCapability,
      ProjectionCapability,
      SandboxRunChunksCapability,
      ...(durable ? [SandboxDurabilityCapability] : []),
      ...(durable?.detachable ? [DetachableRunCapability] : []),
    ],
    optionalRequires: [LocksCapability, SandboxInstanceStoreCapability, SandboxRuntimeCapability, RunDisconnectCapability, PendingTurnCapability, SandboxTranscriptCapability],
    setup: (ctx) => setUpRun(scope, ctx),
    onConfig(_ctx, config) {
      // The harness already holds its own tool history; the model request gets the transcript without it.
      const providerMessages = withoutSandboxToolCalls(config.providerMessages ?? config.messages)
      return providerMessages ? { providerMessages } : undefined
    },
    onChunk: (ctx, chunk) => passRunChunk(scope.runs, ctx, chunk),
    onFinish: (ctx) => endFinishedRun(scope, ctx),
    onAbort: (ctx, info: AbortInfo) => endAbortedRun(scope, ctx, info),
    onError: (ctx, info) => endFailedRun(scope, ctx, info),
  })
}
