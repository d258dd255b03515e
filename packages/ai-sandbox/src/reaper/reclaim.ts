/**
 * Sandbox reclaim: `reclaimSandbox` tears down the sandbox behind a run the
 * reaper made terminal; `sandboxReclaimer` adapts it to `ReapOptions.reclaim`.
 * Invariant: `destroy` is retried `destroyAttempts` times, then it REJECTS
 * (`SandboxReclaimFailedError`) and keeps the record; a sandbox a later run
 * took over is never destroyed. Source: spec 000 "The reaper ships as a
 * function, not a scheduler". Design notes: docs/design/reaper.md
 */
import type { RunRecord } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import { SandboxError } from '../contracts/errors.js'
import type { SandboxProvider } from '../contracts/provider.js'
import { instanceStoreSchema, type SandboxInstanceStore } from '../definition/instance-store.js'
import { loggerSchema, parseOptions } from '../contracts/validate.js'
import { runIdSchema } from '../durability/run-log.js'
import { endJournaledRun } from '../journal/run-end.js'

/** What {@link reclaimSandbox} did. */
export type ReclaimOutcome =
  | {
      readonly reclaimed: true
      readonly sandboxKey: string
      /** The provider's id of the destroyed sandbox. */
      readonly providerSandboxId: string
      /** `false` when the provider no longer had the sandbox (`resume` gave `null`): only the record was left to remove. */
      readonly wasRunning: boolean
    }
  | {
      readonly reclaimed: false
      /** `no-sandbox-key`: the record has no `sandboxKey`; `unknown-key`: the instance store has no sandbox for it; `other-provider`: it belongs to another provider; `reused`: a later run of the thread uses it now. */
      readonly reason: 'no-sandbox-key' | 'unknown-key' | 'other-provider' | 'reused'
      readonly sandboxKey?: string
      readonly message: string
    }

/** Options of {@link reclaimSandbox}. */
export interface ReclaimSandboxOptions {
  /** The provider that made the sandbox (`sandbox.provider`). */
  provider: SandboxProvider
  /** The SAME instance store `withSandbox` records sandboxes in. */
  instances: SandboxInstanceStore
  /** The compound sandbox key (`RunRecord.sandboxKey`, written by `withSandbox` on a detach). */
  sandboxKey: string
  /** The run being closed out: its processes are stopped and its journal deleted first, and a sandbox whose latest run is another one is left alone. */
  runId?: string
  /** Absolute journal folder of the run, as given to `withSandbox`. Default: the sandbox's `handle.journalDir`, else `DEFAULT_JOURNAL_DIR`. */
  journalDir?: string
  /**
   * How many times the provider's `destroy` is tried before the reclaim fails
   * (a sandbox busy for a moment, a provider API that answered 5xx). Default
   * {@link DEFAULT_RECLAIM_DESTROY_ATTEMPTS}. The sweep itself does not retry a
   * `reclaim-failed` run (spec 000), so the retries happen here.
   */
  destroyAttempts?: number
  /** Delay before the second try, in ms; each later delay doubles it. Default {@link DEFAULT_RECLAIM_RETRY_DELAY_MS}. */
  retryDelayMs?: number
  /** Receives a `sandbox` line per step. */
  logger?: InternalLogger
}

/** Default tries of the provider's `destroy` in one reclaim. */
export const DEFAULT_RECLAIM_DESTROY_ATTEMPTS = 3
/** Default delay before the second `destroy` try, in ms (then 2x, 4x, …). */
export const DEFAULT_RECLAIM_RETRY_DELAY_MS = 500

/** Why a reclaim failed: the provider's `destroy` threw, or the instance store could not be read or written. */
export type SandboxReclaimFailedReason = 'destroy-failed' | 'store-failed'

/**
 * Reclaiming a sandbox failed: it may still be up (and billing). The record
 * is kept when `destroy` threw, so a retry can find it.
 *
 * @example
 * ```ts
 * if (SandboxReclaimFailedError.isInstance(error)) console.error(error.sandboxKey, error.reason)
 * ```
 */
export class SandboxReclaimFailedError extends SandboxError<SandboxReclaimFailedReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/SandboxReclaimFailedError'
  /** The sandbox key that was being reclaimed. */
  readonly sandboxKey: string
  /** The provider's sandbox id, when the record was read. */
  readonly providerSandboxId: string | undefined

  /**
   * @param reason - `'destroy-failed'` or `'store-failed'`.
   * @param sandboxKey - The key being reclaimed.
   * @param providerSandboxId - The provider's id, when known.
   */
  constructor(reason: SandboxReclaimFailedReason, sandboxKey: string, providerSandboxId: string | undefined, options: { cause?: unknown; attempts?: number } = {}) {
    const tries = options.attempts !== undefined && options.attempts > 1 ? ` on each of ${options.attempts} tries` : ''
    const what = reason === 'destroy-failed' ? `the provider's destroy of ${providerSandboxId ?? 'it'} threw${tries}, so the sandbox may still be running; its instance record is kept, so reclaimSandbox({ sandboxKey }) can be called again` : 'the instance store failed'
    super(reason, `Reclaiming sandbox ${JSON.stringify(sandboxKey)} failed: ${what}${options.cause instanceof Error ? ` (${options.cause.message})` : ''}.`, options.cause !== undefined ? { cause: options.cause } : {})
    this.sandboxKey = sandboxKey
    this.providerSandboxId = providerSandboxId
  }
}

const providerSchema = z.custom<SandboxProvider>(
  (v) => typeof v === 'object' && v !== null && typeof (v as SandboxProvider).name === 'string' && ['resume', 'destroy'].every((m) => typeof (v as unknown as Record<string, unknown>)[m] === 'function'),
  { message: 'expected the sandbox provider that made the sandbox (sandbox.provider), an object with name, resume and destroy' },
)

const reclaimerSchema = z
  .object({
    provider: providerSchema,
    instances: instanceStoreSchema,
    journalDir: z.string('expected an absolute folder inside the sandbox').startsWith('/', 'expected an absolute folder inside the sandbox, e.g. /tmp/tanstack-runs').optional(),
    destroyAttempts: z.number('expected a whole number of tries').int('expected a whole number of tries').min(1, 'expected at least 1 try').max(20, 'expected at most 20 tries').optional(),
    retryDelayMs: z.number('expected a delay in ms').int('expected whole ms').min(0, 'expected a delay >= 0 ms').max(60_000, 'expected at most 60 000 ms').optional(),
    logger: loggerSchema,
  })
  .strict()

const optionsSchema = reclaimerSchema.extend({
  sandboxKey: z.string('expected the compound sandbox key (RunRecord.sandboxKey)').min(1, 'expected a non-empty sandbox key'),
  runId: runIdSchema.optional(),
})

/**
 * Destroy the sandbox recorded for `sandboxKey` and delete its record. Steps:
 * read the record (none: `unknown-key`; another provider's: `other-provider`;
 * its `latestRunId` is not `runId`: `reused`, nothing destroyed); resume it and,
 * with `runId`, stop the run's processes and delete its journal; `destroy`
 * through the provider; delete the record. Safe to repeat.
 *
 * @param options - {@link ReclaimSandboxOptions}.
 * @returns A {@link ReclaimOutcome}.
 * @throws SandboxConfigError `reclaimSandbox.<field>` for a missing or mistyped option.
 * @throws SandboxReclaimFailedError `destroy-failed` when the provider's `destroy` throws (the record is kept), `store-failed` when the instance store throws.
 * @example
 * ```ts
 * const outcome = await reclaimSandbox({ provider: sandbox.provider, instances, sandboxKey: record.sandboxKey!, runId: record.runId })
 * if (!outcome.reclaimed) console.log(outcome.reason)
 * ```
 */
export async function reclaimSandbox(options: ReclaimSandboxOptions): Promise<ReclaimOutcome> {
  const { provider, instances, sandboxKey, runId, journalDir, destroyAttempts = DEFAULT_RECLAIM_DESTROY_ATTEMPTS, retryDelayMs = DEFAULT_RECLAIM_RETRY_DELAY_MS, logger } = parseOptions(optionsSchema, options, 'reclaimSandbox')
  const log = (message: string): void => logger?.sandbox(`reclaimSandbox: ${message}`)
  const record = await storeCall(sandboxKey, undefined, () => instances.get(sandboxKey))
  if (!record) return { reclaimed: false, reason: 'unknown-key', sandboxKey, message: `the instance store has no sandbox for ${sandboxKey}: it was destroyed already, or withSandbox recorded it in another store (pass the same instances)` }
  if (record.provider !== provider.name) return { reclaimed: false, reason: 'other-provider', sandboxKey, message: `the sandbox of ${sandboxKey} belongs to provider ${record.provider}, not ${provider.name}` }
  if (runId !== undefined && record.latestRunId !== undefined && record.latestRunId !== runId) {
    return { reclaimed: false, reason: 'reused', sandboxKey, message: `the sandbox of ${sandboxKey} now serves run ${record.latestRunId} of the thread, not ${runId}; it is left alone` }
  }
  const id = record.providerSandboxId
  let handle = null
  try {
    handle = await provider.resume({ id })
  } catch (error) {
    log(`resuming ${id} failed (${String(error)}); destroying it anyway`)
  }
  if (handle && runId !== undefined) await endJournaledRun(handle, { runId, dir: journalDir }, log)
  for (let attempt = 1; ; attempt++) {
    try {
      await provider.destroy({ id })
      break
    } catch (error) {
      if (attempt >= destroyAttempts) throw new SandboxReclaimFailedError('destroy-failed', sandboxKey, id, { cause: error, attempts: attempt })
      const delay = retryDelayMs * 2 ** (attempt - 1)
      log(`destroying ${id} failed (try ${attempt} of ${destroyAttempts}: ${String(error)}); trying again in ${delay} ms`)
      await new Promise((resolve) => setTimeout(resolve, delay))
    }
  }
  await storeCall(sandboxKey, id, () => instances.delete(sandboxKey))
  log(`destroyed ${id} (${sandboxKey})`)
  return { reclaimed: true, sandboxKey, providerSandboxId: id, wasRunning: handle !== null }
}

async function storeCall<T>(sandboxKey: string, id: string | undefined, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (error) {
    throw new SandboxReclaimFailedError('store-failed', sandboxKey, id, { cause: error })
  }
}

/**
 * `ReapOptions.reclaim` over {@link reclaimSandbox}: reclaims the sandbox of
 * `record.sandboxKey` for `record.runId`. A record without `sandboxKey`
 * resolves `{ reclaimed: false, reason: 'no-sandbox-key' }`.
 *
 * @param options - `provider`, `instances` (the same store `withSandbox` uses), optional `journalDir`, `destroyAttempts`, `retryDelayMs` and `logger` (see {@link ReclaimSandboxOptions}).
 * @returns `(record) => Promise<ReclaimOutcome>`; it rejects with `SandboxReclaimFailedError` when the provider's `destroy` throws, which is what makes the reaper's `reclaim-failed` reachable.
 * @throws SandboxConfigError `sandboxReclaimer.<field>` for a missing or mistyped option.
 * @example
 * ```ts
 * reapDetachedRuns({ ...options, reclaim: sandboxReclaimer({ provider: sandbox.provider, instances }) })
 * ```
 */
export function sandboxReclaimer(options: Omit<ReclaimSandboxOptions, 'sandboxKey' | 'runId'>): (record: RunRecord) => Promise<ReclaimOutcome> {
  const parsed = parseOptions(reclaimerSchema, options, 'sandboxReclaimer')
  return async (record) => {
    if (record.sandboxKey === undefined) return { reclaimed: false, reason: 'no-sandbox-key', message: `run ${record.runId} has no sandboxKey on its record, so there is no sandbox to reclaim` }
    return reclaimSandbox({ ...parsed, sandboxKey: record.sandboxKey, runId: record.runId })
  }
}
