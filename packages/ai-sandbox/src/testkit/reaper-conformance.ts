/**
 * `runReaperConformance`: the reaper's contract (spec 000 "The reaper ships as
 * a function, not a scheduler", "Cleanup") as a vitest suite over a real
 * provider and real detached durable runs. Every sandbox and journal a case
 * makes is removed, even on failure. One file: the sweeps build on each
 * other's results and read in order. Design notes: docs/design/testkit.md
 */
import { EventType, isTerminalRunStatus, type RunRecord, type StreamChunk } from '@tanstack/ai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { SandboxProvider } from '../contracts/provider.js'
import { parseOptions } from '../contracts/validate.js'
import { journalDirOf, journalPaths } from '../journal/commands.js'
import { decodeJournalRunId } from '../journal/run-id.js'
import { probeRunExit } from '../reaper/probe.js'
import { pruneJournals } from '../journal/prune.js'
import { durableRunFiles } from '../journal/run-files.js'
import { reapDetachedRuns, type ReapResult, type ReapRunEntry, type ReapRunOutcome } from '../reaper/reap.js'
import { reclaimSandbox, SandboxReclaimFailedError } from '../reaper/reclaim.js'
import { shellQuote } from '../shell/quote.js'
import { skippedCase } from './provider/context.js'
import { reaperAgentText } from './reaper/agent.js'
import { createReaperConformanceContext, until, type ReaperConformanceContext, type ReaperStores } from './reaper/context.js'

export { createReaperConformanceContext, inMemoryReaperStores, type DetachedRun, type ReaperConformanceContext, type ReaperStores } from './reaper/context.js'
export { reaperAgentAdapter, reaperAgentText, reaperMarker, type ReaperAgentScript } from './reaper/agent.js'

/** Options of {@link runReaperConformance}. */
export interface ReaperConformanceOptions {
  /** Build the provider under test. Called once, while vitest collects the suite. */
  makeProvider: () => SandboxProvider | Promise<SandboxProvider>
  /** Build the stores (`{ runs, locks, log }`) before each case. Default: core's `InMemoryRunStore`, `InMemoryLockStore` and `memoryStream({ runId })`. The run store needs `listReclaimable`. */
  makeStores?: () => ReaperStores | Promise<ReaperStores>
  /** Absolute journal folder inside the sandbox. Default: the sandbox's `handle.journalDir`, else `DEFAULT_JOURNAL_DIR`. */
  journalDir?: string
  /** Timeout of each case and hook, in ms. Default 90 000 (the sweep case waits out three quiescence windows of 5 s). */
  timeoutMs?: number
}

const optionsSchema = z
  .object({
    makeProvider: z.custom<ReaperConformanceOptions['makeProvider']>((v) => typeof v === 'function', { message: 'expected a function that returns the SandboxProvider under test' }),
    makeStores: z.custom<NonNullable<ReaperConformanceOptions['makeStores']>>((v) => typeof v === 'function', { message: 'expected a function that returns { runs, locks, log }, the stores under test' }).optional(),
    journalDir: z.string().startsWith('/', 'expected an absolute folder inside the sandbox, e.g. /tmp/tanstack-runs').optional(),
    timeoutMs: z.number().int('expected whole ms').min(10_000, 'expected at least 10000 ms').optional(),
  })
  .strict()

const dirOf = (context: ReaperConformanceContext): { journalDir?: string } => (context.journalDir ? { journalDir: context.journalDir } : {})

/** The record, failing naming the run when it is gone. */
async function record(context: ReaperConformanceContext, runId: string): Promise<RunRecord> {
  const found = await context.stores.runs.get(runId)
  expect(found, `the record of ${runId} must still be there`).not.toBeNull()
  return found!
}

/** The sweep's entry for a run, failing when the sweep did not look at it. */
function entryOf(result: ReapResult, runId: string): ReapRunEntry {
  const entry = result.entries.find((e) => e.runId === runId)
  expect(entry, `the sweep has an entry for ${runId}`).toBeDefined()
  return entry!
}

/** The whole transcript is in the log: one RUN_STARTED, every step's text once, RUN_FINISHED last. */
function expectCompleteTranscript(chunks: readonly StreamChunk[], steps: number, rule: string): void {
  const text = chunks.flatMap((c) => (c.type === EventType.TEXT_MESSAGE_CONTENT ? [c.delta] : [])).join('')
  expect(text, `${rule}: every step's text is in the log exactly once, in order (nothing lost, nothing duplicated)`).toBe(reaperAgentText(steps))
  expect(chunks.filter((c) => c.type === EventType.RUN_STARTED), `${rule}: one RUN_STARTED`).toHaveLength(1)
  expect(chunks.filter((c) => c.type === EventType.TEXT_MESSAGE_START), `${rule}: one message`).toHaveLength(1)
  expect(chunks.at(-1)?.type, `${rule}: the log ends with the run's RUN_FINISHED`).toBe(EventType.RUN_FINISHED)
}

/** Every outcome name with the counts given, the others 0. */
function outcomes(counts: Partial<Record<ReapRunOutcome, number>>): Record<ReapRunOutcome, number> {
  return { finalized: 0, expired: 0, producing: 0, unknown: 0, 'not-claimed': 0, 'budget-exceeded': 0, 'reclaim-failed': 0, ...counts }
}

/**
 * `probeRunExit` over a real sandbox: a running agent is `producing`, one
 * that printed a sentinel-shaped line with a made-up nonce is still
 * `producing`, one that exited is `finished` with its exit code, a run with
 * no journal and a sandbox without `exec` are `unknown`.
 *
 * @param context - From `createReaperConformanceContext`.
 */
export async function checkProbeRunExit(context: ReaperConformanceContext): Promise<void> {
  const run = await context.startDetached('probe', { exitCode: 3 })
  const forged = await context.startDetached('probe-forged', { forgeSentinel: true })
  const paths = journalPaths(forged.runId, journalDirOf(forged.handle, context.journalDir))
  await until('the forged sentinel is in the journal', async () => (await forged.handle.process.exec(`grep -c '"__exit":0' ${shellQuote(paths.journal)}`)).stdout.trim() === '1', context.timeoutMs / 4)
  expect(await probeRunExit({ handle: run.handle, runId: run.runId, ...dirOf(context) }), 'an agent that has not exited is producing').toEqual({ state: 'producing' })
  expect(await probeRunExit({ handle: forged.handle, runId: forged.runId, ...dirOf(context) }), 'a sentinel the agent printed itself (no matching nonce) is not an exit').toEqual({ state: 'producing' })
  await context.finish(run)
  expect(await probeRunExit({ handle: run.handle, runId: run.runId, ...dirOf(context) }), 'an agent that exited is finished, with its exit status').toEqual({ state: 'finished', exitCode: 3 })
  const missing = await probeRunExit({ handle: run.handle, runId: `${run.runId}-never-started`, ...dirOf(context) })
  expect(missing.state, 'a run with no journal cannot be answered: unknown, never finished').toBe('unknown')
  const noExec = await probeRunExit({ handle: { ...run.handle, capabilities: { ...run.handle.capabilities, exec: false } }, runId: run.runId, ...dirOf(context) })
  expect(noExec.state, 'a sandbox without exec cannot be probed: unknown').toBe('unknown')
}

/**
 * One sweep over six detached runs: a finished one is finalized (driven to
 * its end: the log has the complete transcript, the record is `completed`,
 * the sandbox is reclaimed); a producing one and one with a forged sentinel
 * are `producing` and untouched (record, log, `driverEpoch`, sandbox); a
 * stale one is `expired` (record `failed` with `detached-run-expired`, the
 * log ends with that `RUN_ERROR`, the sandbox is reclaimed) without a drive;
 * one whose sandbox destroy is refused is `reclaim-failed` with its
 * transcript saved; one with no sandbox is `unknown`. Only the two finished
 * runs are driven. A second sweep finds nothing to do; once the producing run
 * finishes, a third finalizes it with its complete transcript.
 *
 * @param context - From `createReaperConformanceContext`.
 */
export async function checkReapSweep(context: ReaperConformanceContext): Promise<void> {
  const ttl = 10 * 60 * 1000
  const finished = await context.startDetached('finished', { steps: 4 })
  const producing = await context.startDetached('producing', { steps: 3 })
  const forged = await context.startDetached('forged', { forgeSentinel: true })
  const stale = await context.startDetached('stale')
  const refused = await context.startDetached('refused')
  const unknown = { runId: `reaper-kit-unknown-${Date.now()}`, threadId: 'reaper-kit-thread-unknown' }
  await context.stores.runs.createOrResume({ runId: unknown.runId, threadId: unknown.threadId, startedAt: Date.now() })
  await context.stores.runs.update(unknown.runId, { detachedSince: Date.now(), sandboxKey: 'reaper-kit:no-such-sandbox' })
  await context.stores.runs.update(stale.runId, { detachedSince: Date.now() - 2 * ttl })
  await context.finish(finished)
  await context.finish(refused)
  const refusedInstance = await context.instances.get(refused.sandboxKey)
  context.refuseDestroy.add(refusedInstance!.providerSandboxId)
  const untouched = [producing, forged]
  const before = new Map(await Promise.all(untouched.map(async (run) => [run.runId, { record: await record(context, run.runId), length: (await context.storedChunks(run.runId)).length }] as const)))

  const sweep = (now: number) => reapDetachedRuns({ runs: context.stores.runs, locks: context.stores.locks, durability: context.stores.log, hasFinished: context.hasFinished, drive: context.drive, now, detachedRunTtlMs: ttl, reclaim: context.reclaim })
  const first = await sweep(Date.now())
  expect(first.outcomes, 'first sweep: one finalized, one expired, two producing, one reclaim-failed, one unknown').toEqual(outcomes({ finalized: 1, expired: 1, producing: 2, 'reclaim-failed': 1, unknown: 1 }))
  expect(context.drives(), 'only the two runs whose probe said finished were driven (a sweep never drives a run to learn whether it finished)').toBe(2)

  expect(entryOf(first, finished.runId)).toMatchObject({ outcome: 'finalized', probe: { state: 'finished', exitCode: 0 }, status: 'completed', reclaim: { reclaimed: true } })
  expect(await record(context, finished.runId), 'the finalized run is completed').toMatchObject({ status: 'completed' })
  expectCompleteTranscript(await context.storedChunks(finished.runId), finished.steps, 'the finalized run')
  expect(await context.sandboxUp(finished.handle), "the finalized run's sandbox is reclaimed").toBe(false)
  expect(await context.instances.get(finished.sandboxKey), 'and its instance record deleted').toBeNull()

  for (const run of untouched) {
    const was = before.get(run.runId)!
    expect(entryOf(first, run.runId), `${run.runId} is producing`).toMatchObject({ outcome: 'producing', probe: { state: 'producing' } })
    expect(await record(context, run.runId), 'a producing run is left exactly as it was: running, same detachedSince, never claimed').toEqual(was.record)
    expect((await context.storedChunks(run.runId)).length, 'nothing was written to its log').toBe(was.length)
    expect(await context.sandboxUp(run.handle), 'its sandbox is still up').toBe(true)
  }

  expect(entryOf(first, stale.runId)).toMatchObject({ outcome: 'expired', expired: true, status: 'failed', reclaim: { reclaimed: true } })
  expect(await record(context, stale.runId), 'the expired run is failed with the expiry code').toMatchObject({ status: 'failed', error: { code: 'detached-run-expired' } })
  expect((await context.storedChunks(stale.runId)).at(-1), 'its log ends with the expiry RUN_ERROR').toMatchObject({ type: EventType.RUN_ERROR, code: 'detached-run-expired' })
  expect(await context.sandboxUp(stale.handle), "the expired run's sandbox is reclaimed (its agent with it)").toBe(false)

  const failed = entryOf(first, refused.runId)
  expect(failed).toMatchObject({ outcome: 'reclaim-failed', status: 'completed' })
  expect(failed.terminalizedAnyway, 'terminalizedAnyway is only for a replay over budget').toBeUndefined()
  expect(SandboxReclaimFailedError.isInstance(failed.error) && (failed.error as SandboxReclaimFailedError).reason, 'sandboxReclaimer rejected with SandboxReclaimFailedError destroy-failed').toBe('destroy-failed')
  expectCompleteTranscript(await context.storedChunks(refused.runId), refused.steps, 'a run whose reclaim failed still has its transcript')
  expect(await context.sandboxUp(refused.handle), 'its sandbox is still up (that is what reclaim-failed says)').toBe(true)

  expect(entryOf(first, unknown.runId)).toMatchObject({ outcome: 'unknown', probe: { state: 'unknown' } })
  expect(await record(context, unknown.runId), 'an unknown run is untouched').toMatchObject({ status: 'running', detachedSince: expect.any(Number) })

  const second = await sweep(Date.now())
  expect(second.outcomes, 'second sweep: nothing to do, the producing and unknown runs are left alone again').toEqual(outcomes({ producing: 2, unknown: 1 }))
  expect(context.drives(), 'the second sweep drove nothing').toBe(2)

  await context.finish(producing)
  const third = await sweep(Date.now())
  expect(entryOf(third, producing.runId), 'once its agent exited, the producing run is finalized').toMatchObject({ outcome: 'finalized', status: 'completed' })
  expectCompleteTranscript(await context.storedChunks(producing.runId), producing.steps, 'the run that finished between sweeps')
  expect(third.outcomes).toEqual(outcomes({ finalized: 1, producing: 1, unknown: 1 }))
  for (const run of [finished, stale, refused, producing]) expect(isTerminalRunStatus((await record(context, run.runId)).status)).toBe(true)
}

/**
 * `reclaimSandbox` over the provider: a key with no record is `unknown-key`;
 * a record of another provider is `other-provider`; a sandbox whose latest
 * run is another is `reused` and stays up; otherwise the sandbox is
 * destroyed and its record deleted (`reclaimed: true`), and repeating it is
 * `unknown-key`; a refused destroy rejects with `SandboxReclaimFailedError`
 * `destroy-failed` and keeps the record. `sandboxReclaimer` answers
 * `no-sandbox-key` for a record without one.
 *
 * @param context - From `createReaperConformanceContext`.
 */
export async function checkReclaimSandbox(context: ReaperConformanceContext): Promise<void> {
  const { provider, instances } = context
  const base = { provider, instances, ...dirOf(context) }
  expect(await reclaimSandbox({ ...base, sandboxKey: 'reaper-kit:missing' })).toMatchObject({ reclaimed: false, reason: 'unknown-key' })
  const handle = await provider.create({ key: 'reaper-kit:reclaim', labels: { purpose: 'reaper-conformance' } })
  const key = `reaper-kit:reclaim:${handle.id}`
  const recordFor = (extra: object) => ({ key, provider: provider.name, providerSandboxId: handle.id, threadId: 'reaper-kit-thread-reclaim', updatedAt: Date.now(), ...extra })
  await instances.upsert(recordFor({ provider: 'someone-else' }))
  expect(await reclaimSandbox({ ...base, sandboxKey: key })).toMatchObject({ reclaimed: false, reason: 'other-provider' })
  await instances.upsert(recordFor({ latestRunId: 'a-later-run' }))
  expect(await reclaimSandbox({ ...base, sandboxKey: key, runId: 'the-detached-run' }), 'a sandbox a later run of the thread uses is left alone').toMatchObject({ reclaimed: false, reason: 'reused' })
  expect(await context.sandboxUp(handle)).toBe(true)
  await instances.upsert(recordFor({ latestRunId: 'the-detached-run' }))
  context.refuseDestroy.add(handle.id)
  const refused = await reclaimSandbox({ ...base, sandboxKey: key, runId: 'the-detached-run' }).then(
    () => undefined,
    (error: unknown) => error,
  )
  expect(SandboxReclaimFailedError.isInstance(refused), `a destroy that throws rejects with SandboxReclaimFailedError, got ${String(refused)}`).toBe(true)
  expect((refused as SandboxReclaimFailedError).reason).toBe('destroy-failed')
  expect(await instances.get(key), 'the record is kept for a retry').not.toBeNull()
  context.refuseDestroy.delete(handle.id)
  expect(await reclaimSandbox({ ...base, sandboxKey: key, runId: 'the-detached-run' })).toMatchObject({ reclaimed: true, providerSandboxId: handle.id, wasRunning: true })
  expect(await context.sandboxUp(handle), 'the sandbox is destroyed').toBe(false)
  expect(await instances.get(key), 'its record deleted').toBeNull()
  expect(await reclaimSandbox({ ...base, sandboxKey: key }), 'repeating it is harmless').toMatchObject({ reclaimed: false, reason: 'unknown-key' })
  expect(await context.reclaim({ runId: 'r', threadId: 't', status: 'completed', startedAt: 1 })).toMatchObject({ reclaimed: false, reason: 'no-sandbox-key' })
}

/**
 * `pruneJournals`' keep/delete table over a real journal folder: journals of
 * terminal runs are deleted whatever their age (journal, `.err` and the
 * run's file baseline folder) up to `maxDeletes` (`max-deletes` for the
 * rest); a running run's is `non-terminal`; one without a record is
 * `too-young` until it is older than `orphanTtlMs`, then deleted as an
 * orphan (listed in `orphans`); a file name `encodeRunId` never writes is
 * `undecodable`; kept files stay on disk.
 *
 * @param context - From `createReaperConformanceContext`.
 */
export async function checkPruneJournals(context: ReaperConformanceContext): Promise<void> {
  const { runs } = context.stores
  const handle = await context.provider.create({ key: 'reaper-kit:prune', labels: { purpose: 'reaper-conformance' } })
  const dir = journalDirOf(handle, context.journalDir)
  const id = (what: string) => `reaper-kit-prune-${what}-${handle.id}`
  const ids = { doneA: id('done-a'), doneB: id('done-b'), live: id('live'), ghost: id('ghost') }
  const undecodable = `${dir}/Not_zzzz.ndjson`
  expect(decodeJournalRunId('Not_zzzz.ndjson').ok, 'the kit needs a name encodeRunId never writes').toBe(false)
  const files = [...Object.values(ids).flatMap((runId) => [journalPaths(runId, dir).journal, journalPaths(runId, dir).stderr]), undecodable]
  // A durable run's file baseline lives beside its journal (withSandbox keeps it for a takeover).
  const baselines = Object.values(ids).map((runId) => durableRunFiles(runId, dir).baseline)
  try {
    const made = await handle.process.exec(`mkdir -p ${shellQuote(dir)} && for f in ${files.map(shellQuote).join(' ')}; do echo '{}' > "$f"; done && for d in ${baselines.map(shellQuote).join(' ')}; do mkdir -p "$d" && echo tree=0 > "$d/fields"; done`)
    expect(made.exitCode, `writing journals into ${dir}: ${made.stderr}`).toBe(0)
    for (const [runId, status] of [[ids.doneA, 'completed'], [ids.doneB, 'failed'], [ids.live, 'running']] as const) {
      await runs.createOrResume({ runId, threadId: 'reaper-kit-thread-prune', startedAt: Date.now() })
      if (status !== 'running') await runs.update(runId, { status, finishedAt: Date.now() })
    }
    const exists = async (path: string) => (await handle.process.exec(`test -f ${shellQuote(path)}`)).exitCode === 0
    const reasons = (kept: readonly { runId?: string; path: string; reason: string }[]) => Object.fromEntries(kept.filter((k) => k.path.startsWith(dir)).map((k) => [k.runId ?? k.path, k.reason]))

    const hour = 60 * 60 * 1000
    const capped = await pruneJournals({ handle, runs, journalDir: dir, orphanTtlMs: hour, maxDeletes: 1 })
    expect(capped.failures).toEqual([])
    expect(capped.deleted, 'one journal of a terminal run is deleted, young as it is (maxDeletes 1)').toHaveLength(1)
    const [gone] = capped.deleted
    const other = gone === ids.doneA ? ids.doneB : ids.doneA
    expect([ids.doneA, ids.doneB]).toContain(gone)
    expect(reasons(capped.kept)).toMatchObject({ [other]: 'max-deletes', [ids.live]: 'non-terminal', [ids.ghost]: 'too-young', [undecodable]: 'undecodable' })
    expect(await exists(journalPaths(gone!, dir).journal), 'the deleted journal is gone').toBe(false)
    expect(await exists(journalPaths(gone!, dir).stderr), 'and its .err sidecar').toBe(false)
    expect(await exists(`${durableRunFiles(gone!, dir).baseline}/fields`), 'and its file baseline').toBe(false)
    expect(await exists(`${durableRunFiles(other, dir).baseline}/fields`), "a kept journal's baseline stays").toBe(true)

    const rest = await pruneJournals({ handle, runs, journalDir: dir, orphanTtlMs: hour })
    expect(rest.deleted, 'the next sweep deletes the other terminal run').toEqual([other])
    expect(rest.orphans, 'a journal with no record younger than orphanTtlMs is no orphan yet').toEqual([])
    expect(await exists(journalPaths(ids.ghost, dir).journal)).toBe(true)

    const aged = await pruneJournals({ handle, runs, journalDir: dir, orphanTtlMs: 0 })
    expect(aged.deleted, 'past orphanTtlMs the journal with no record is an orphan, deleted').toEqual([ids.ghost])
    expect(aged.orphans).toEqual([ids.ghost])
    expect(await exists(journalPaths(ids.ghost, dir).journal)).toBe(false)
    expect(reasons(aged.kept)).toMatchObject({ [ids.live]: 'non-terminal', [undecodable]: 'undecodable' })
    expect(await exists(journalPaths(ids.live, dir).journal), 'a running run keeps its journal').toBe(true)
    expect(await exists(undecodable)).toBe(true)
  } finally {
    await handle.process.exec(`rm -f ${files.map(shellQuote).join(' ')}; rm -rf ${baselines.map(shellQuote).join(' ')}`).catch(() => undefined)
  }
}

/** One case of the suite: its title and its check. */
export type ReaperCheck = readonly [title: string, check: (context: ReaperConformanceContext) => Promise<void>]

/** Every reaper check, in the order the suite runs them. */
export const REAPER_CHECKS: ReadonlyArray<ReaperCheck> = [
  ['probeRunExit: producing, not fooled by a forged sentinel, finished with the exit code, unknown without a journal or exec', checkProbeRunExit],
  ['one sweep finalizes, expires, leaves producing and unknown runs alone, reclaims, reports reclaim-failed; a second finds nothing to do', checkReapSweep],
  ['reclaimSandbox: unknown-key, other-provider, reused, reclaimed, and a refused destroy rejects with SandboxReclaimFailedError', checkReclaimSandbox],
  ["pruneJournals' keep/delete table over a real journal folder", checkPruneJournals],
]

/**
 * Register the reaper conformance suite in the current vitest file: one
 * `describe` named after the provider, one test per entry of
 * {@link REAPER_CHECKS}. Needs capability `exec` (every case is skipped,
 * naming it, without) and a sandbox with POSIX `sh`, `printf`, `sleep`,
 * `grep`, `od`, `tr`, `sha256sum`, `base64`, `head`, `tail`, `find` and
 * `date` (GNU coreutils or BusyBox). A case takes up to about 20 s (three
 * sweeps, each waiting out the reaper's 5 s quiescence window).
 *
 * @param name - Shown in the suite title, e.g. `docker debian`.
 * @param options - {@link ReaperConformanceOptions}.
 * @throws SandboxConfigError naming the field for invalid options.
 * @example
 * ```ts
 * import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
 * import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
 *
 * runReaperConformance('docker', { makeProvider: () => dockerSandbox({ image: 'sandbox-base:latest' }) })
 * ```
 */
export function runReaperConformance(name: string, options: ReaperConformanceOptions): void {
  const { makeProvider, makeStores, journalDir, timeoutMs = 90_000 } = parseOptions(optionsSchema, options, 'runReaperConformance')
  describe(`reaper conformance: ${name}`, async () => {
    const provider = await makeProvider()
    if (!provider.capabilities().exec) {
      for (const [title] of REAPER_CHECKS) skippedCase(title, 'needs capability exec (journals are started, probed and pruned through handle.process.exec)')
      return
    }
    let context: ReaperConformanceContext
    beforeEach(async () => {
      const stores = makeStores ? await makeStores() : undefined
      context = createReaperConformanceContext(provider, { ...(stores ? { stores } : {}), ...(journalDir ? { journalDir } : {}), timeoutMs })
    }, timeoutMs)
    afterEach(() => context.cleanup(), timeoutMs)
    for (const [title, check] of REAPER_CHECKS) it(title, () => check(context), timeoutMs)
  })
}
