/**
 * `runTakeoverConformance`: the single-writer rules of a takeover (spec 000
 * "Takeover: detached runs and single-writer safety") as a vitest suite over a
 * store author's stores, two drivers on one run via `sandboxRunDriver`. Each
 * check is also a plain function. One file: the cases share the two-driver
 * setup and read in order. Design notes: docs/design/testkit.md
 */
import { isTerminalRunStatus, requestRunCancel, type RunRecord, type RunStatus } from '@tanstack/ai'
import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { alignToStoredLog } from '../durability/align.js'
import { RunClaimLostError, RunClaimNotAcquiredError } from '../durability/claim.js'
import {
  DEFAULT_KIT_FENCE_QUIET_MS,
  epochFlickerView,
  fingerprints,
  gate,
  pausedStream,
  runChunks,
  SEEDED_EPOCH,
  seedDetachedRun,
  storedChunks,
  until,
  waitBudgetMs,
  withHosts,
  type Host,
  type RunEnding,
  type Settled,
  type TakeoverCheckSettings,
  type TakeoverStores,
} from './takeover/drivers.js'

export { DEFAULT_KIT_FENCE_QUIET_MS, type TakeoverCheckSettings, type TakeoverStores } from './takeover/drivers.js'

/** Options of {@link runTakeoverConformance}. */
export interface TakeoverConformanceOptions {
  /**
   * Build the stores under test; called before each case, and both drivers
   * of a case share what it returns. `log(runId)` must give the same log for
   * one run every time (`(runId) => memoryStream({ runId })` does).
   */
  makeStores: () => TakeoverStores | Promise<TakeoverStores>
  /** `sandboxRunDriver`'s quiescence window in the cases, in ms. Default 200 (keeps each case short; production keeps 5000). */
  fenceQuietMs?: number
  /** Timeout of each case and hook, in ms. Default 10 000 (a case takes about 1 s over in-memory stores). */
  timeoutMs?: number
}

const isFunction = (v: unknown): boolean => typeof v === 'function'
const hasMethods = (v: unknown, methods: ReadonlyArray<string>): boolean => typeof v === 'object' && v !== null && methods.every((m) => isFunction((v as Record<string, unknown>)[m]))

const optionsSchema = z
  .object({
    makeStores: z.custom<TakeoverConformanceOptions['makeStores']>(isFunction, { message: 'expected a function that returns { runs, locks, log }, the stores under test' }),
    fenceQuietMs: z.number('expected fenceQuietMs in ms as a number').int('expected a whole number of ms').min(0, 'expected 0 ms or more').optional(),
    timeoutMs: z.number('expected timeoutMs in ms as a number').int('expected a whole number of ms').min(1_000, 'expected at least 1000 ms').optional(),
  })
  .strict()

const storesSchema = z.object({
  runs: z.custom((v) => hasMethods(v, ['createOrResume', 'update', 'get', 'findActiveRun']), { message: 'expected a RunStore (createOrResume, update, get, findActiveRun)' }),
  locks: z.custom((v) => hasMethods(v, ['withLock']), { message: 'expected a LockStore (withLock(key, fn))' }),
  log: z.custom(isFunction, { message: 'expected a per-run factory (runId) => StreamDurability, e.g. (runId) => memoryStream({ runId })' }),
})

/** The record, failing naming the rule when it is gone. */
async function record(stores: TakeoverStores, runId: string): Promise<RunRecord> {
  const found = await stores.runs.get(runId)
  expect(found, 'the run record must still be there').not.toBeNull()
  return found!
}

/** The error a driver's claim rejected with, failing when it resolved. */
function rejection(settled: Settled, rule: string): unknown {
  expect(settled.ok, `${rule}: the claim resolved, but it must reject`).toBe(false)
  return (settled as { ok: false; error: unknown }).error
}

function expectNotAcquired(settled: Settled, reason: RunClaimNotAcquiredError['reason'] | ReadonlyArray<RunClaimNotAcquiredError['reason']>, rule: string): void {
  const error = rejection(settled, rule)
  expect(RunClaimNotAcquiredError.isInstance(error), `${rule}: expected RunClaimNotAcquiredError, got ${String(error)}`).toBe(true)
  expect(typeof reason === 'string' ? [reason] : reason, `${rule}: the reason`).toContain((error as RunClaimNotAcquiredError).reason)
}

function expectClaimLost(settled: Settled, heldEpoch: number, rule: string): void {
  const error = rejection(settled, rule)
  expect(RunClaimLostError.isInstance(error), `${rule}: expected RunClaimLostError, got ${String(error)}`).toBe(true)
  expect((error as RunClaimLostError).heldEpoch, `${rule}: the epoch the lost driver held`).toBe(heldEpoch)
}

const terminalPatches = (host: Host): RunStatus[] => host.patches.flatMap((p) => (p.status !== undefined && isTerminalRunStatus(p.status) ? [p.status] : []))

/**
 * Exactly one writer: two drivers claim one detached run at once. One
 * drives; the other's claim rejects with `RunClaimNotAcquiredError`
 * `'superseded'` (or `'terminal'`, when its first read of the record came
 * only after the winner had finished the run: a slow store connection does
 * that) and its drive is never started. The log holds the winner's
 * chunks only, each once; `driverEpoch` was bumped once; the record is
 * `'completed'`.
 *
 * @param stores - The stores under test.
 * @param settings - `fenceQuietMs` (default 200).
 */
export async function checkTakeoverSingleWriter(stores: TakeoverStores, settings: TakeoverCheckSettings = {}): Promise<void> {
  const run = await seedDetachedRun(stores, 'single-writer')
  const chunks = { a: runChunks(run, 'driver-a'), b: runChunks(run, 'driver-b') }
  await withHosts(stores, run, settings, [], async (start) => {
    const hosts = [start('driver A', { drive: () => pausedStream(chunks.a) }), start('driver B', { drive: () => pausedStream(chunks.b) })]
    const results = await Promise.all(hosts.map((h) => h.settled))
    const drives = hosts.map((h) => h.drives())
    expect(drives[0]! + drives[1]!, `two drivers claimed one run at once: exactly one drive may start (the lease, and the epoch re-read under it); drives per driver: ${drives.join(', ')}`).toBe(1)
    const winner = drives[0] === 1 ? 0 : 1
    const loser = 1 - winner
    expect(results[winner]?.ok, 'the driver that claimed the run drives it to the end').toBe(true)
    expectNotAcquired(results[loser]!, ['superseded', 'terminal'], 'the driver that lost the race to claim')
    expect(hosts[loser]!.appended, 'the losing driver wrote nothing to the log').toEqual([])
    expect(fingerprints(await storedChunks(stores, run.runId)), "the log holds exactly one driver's chunks, each once").toEqual(fingerprints(winner === 0 ? chunks.a : chunks.b))
    expect(await record(stores, run.runId), 'driverEpoch was bumped once (by the one claim that won), and the run completed').toMatchObject({ status: 'completed', driverEpoch: SEEDED_EPOCH + 1 })
  })
}

/**
 * A superseded driver's append is refused: driver 1 claims and drives
 * slowly; a successor claims (`driverEpoch` bumped through `runs.update`, as
 * a claim on another host writes it) and driver 2 waits for the run. Driver
 * 1's next append is refused: its claim rejects with `RunClaimLostError`,
 * nothing of it lands after the bump (no chunk, no `RUN_ERROR`), and no
 * terminal status of its reaches the record. Driver 2 then claims and
 * finishes the run from where the log stopped (a replay aligned with
 * `alignToStoredLog`): every chunk once. Driver 1's `close()` reached the
 * log, so the log must take driver 2's appends after it.
 *
 * @param stores - The stores under test.
 * @param settings - `fenceQuietMs` (default 200).
 */
export async function checkTakeoverSupersededAppendRefused(stores: TakeoverStores, settings: TakeoverCheckSettings = {}): Promise<void> {
  const run = await seedDetachedRun(stores, 'superseded-append')
  const chunks = runChunks(run, 'run', { words: 6 })
  const landed = 3
  const paused = gate()
  const held = SEEDED_EPOCH + 1
  const successor = held + 1
  await withHosts(stores, run, settings, [paused], async (start) => {
    const first = start('driver 1', { drive: () => pausedStream(chunks, { at: landed, wait: paused.promise }) })
    await until(`driver 1 stored its first ${landed} chunks`, async () => (await storedChunks(stores, run.runId)).length >= landed, waitBudgetMs(settings))
    await stores.runs.update(run.runId, { driverEpoch: successor })
    const second = start('driver 2', { drive: () => alignToStoredLog(pausedStream(chunks), { durability: stores.log(run.runId) }) })
    paused.open()
    expectClaimLost(await first.settled, held, 'driver 1, superseded mid-drive')
    expect(fingerprints(first.appended.flat()), 'driver 1: every append after the successor bumped driverEpoch is refused (no chunk, no RUN_ERROR)').toEqual(fingerprints(chunks.slice(0, landed)))
    expect(terminalPatches(first), 'driver 1 lost its claim: none of its terminal statuses may reach the record').toEqual([])
    expect(first.closes(), "driver 1's close() is outside the fences and reaches the log once").toBe(1)
    const finished = await second.settled
    expect(finished.ok, `driver 2 claims after driver 1 and finishes the run${finished.ok ? '' : `; it rejected with ${String(finished.error)}`}`).toBe(true)
    expect(fingerprints(await storedChunks(stores, run.runId)), "the log holds driver 1's chunks from before the takeover, then driver 2's remainder: every chunk once").toEqual(fingerprints(chunks))
    expect(await record(stores, run.runId), 'the run completed under driver 2, whose claim bumped driverEpoch again').toMatchObject({ status: 'completed', driverEpoch: successor + 1 })
  })
}

/**
 * The first refusal latches: once driver 1's append was refused (a
 * successor's `driverEpoch` seen once), its later writes stay refused even
 * when the stored epoch reads as driver 1's again. A cancel recorded on the
 * run makes driver 1 try a terminal `RUN_ERROR` append and an `'aborted'`
 * update after the refusal; only the latch stops them: neither reaches the
 * stores, and the record stays `'running'`.
 *
 * @param stores - The stores under test.
 * @param settings - `fenceQuietMs` (default 200).
 */
export async function checkTakeoverRefusalLatches(stores: TakeoverStores, settings: TakeoverCheckSettings = {}): Promise<void> {
  const run = await seedDetachedRun(stores, 'refusal-latches')
  const chunks = runChunks(run, 'run')
  const landed = 2
  const paused = gate()
  const held = SEEDED_EPOCH + 1
  const view = epochFlickerView(stores.runs, held)
  await withHosts(stores, run, settings, [paused], async (start) => {
    const first = start('driver 1', { runs: view.runs, drive: () => pausedStream(chunks, { at: landed, wait: paused.promise }) })
    await until(`driver 1 stored its first ${landed} chunks`, async () => (await storedChunks(stores, run.runId)).length >= landed, waitBudgetMs(settings))
    await requestRunCancel(stores.runs, run.runId)
    await stores.runs.update(run.runId, { driverEpoch: held + 1 })
    view.arm()
    paused.open()
    expectClaimLost(await first.settled, held, 'driver 1, superseded mid-drive')
    expect(view.foreignReads(), "driver 1 saw the successor's epoch (and the stored epoch read as its own afterwards)").toBeGreaterThan(0)
    expect(fingerprints(first.appended.flat()), 'after the first refusal nothing of driver 1 reaches the log, not even the RUN_ERROR a cancel makes it write').toEqual(fingerprints(chunks.slice(0, landed)))
    expect(terminalPatches(first), "the cancelled, superseded driver's 'aborted' is suppressed").toEqual([])
    expect(await record(stores, run.runId), "the record stays running: the lost driver may not finish the run (its current driver does)").toMatchObject({ status: 'running', cancelRequested: true, driverEpoch: held + 1 })
  })
}

/**
 * A lost claim's terminal `update` is suppressed; non-terminal patches and
 * `close()` pass. Four runs, each driven to its last chunk; the stream then
 * holds its end while a successor bumps `driverEpoch`, so the driver learns
 * of the loss at the record write: `'completed'` (a `RUN_FINISHED`),
 * `'failed'` (a `RUN_ERROR`) and `'aborted'` (a `RUN_ERROR` with a cancel
 * recorded) are suppressed, the claim rejects with `RunClaimLostError` and
 * the record stays `'running'`; `'interrupted'` (a `RUN_FINISHED` with an
 * interrupt outcome, not terminal) reaches the record. Every driver's
 * `close()` reaches the log, and nothing is appended after the loss.
 *
 * @param stores - The stores under test.
 * @param settings - `fenceQuietMs` (default 200).
 */
export async function checkTakeoverLostTerminalSuppressed(stores: TakeoverStores, settings: TakeoverCheckSettings = {}): Promise<void> {
  const variants: Array<{ status: RunStatus; ending: RunEnding; cancel?: true }> = [
    { status: 'completed', ending: 'finished' },
    { status: 'failed', ending: 'error' },
    { status: 'aborted', ending: 'error', cancel: true },
    { status: 'interrupted', ending: 'interrupted' },
  ]
  const held = SEEDED_EPOCH + 1
  for (const variant of variants) {
    const run = await seedDetachedRun(stores, `lost-terminal-${variant.status}`)
    const chunks = runChunks(run, 'run', { ending: variant.ending })
    const ending = gate()
    await withHosts(stores, run, settings, [ending], async (start) => {
      const host = start(`driver (${variant.status})`, { drive: () => pausedStream(chunks, { at: chunks.length, wait: ending.promise }) })
      await until(`the driver stored all ${chunks.length} chunks`, async () => (await storedChunks(stores, run.runId)).length >= chunks.length, waitBudgetMs(settings))
      if (variant.cancel) await requestRunCancel(stores.runs, run.runId)
      await stores.runs.update(run.runId, { driverEpoch: held + 1 })
      ending.open()
      const settled = await host.settled
      const stored = await record(stores, run.runId)
      if (isTerminalRunStatus(variant.status)) {
        expectClaimLost(settled, held, `a driver whose claim was lost before it wrote '${variant.status}'`)
        expect(terminalPatches(host), `the lost claim's '${variant.status}' is suppressed: it never reaches the store`).toEqual([])
        expect(stored, `the record stays running, so a status poller or a reaper never believes a live run ended on the word of a host that lost it`).toMatchObject({ status: 'running', driverEpoch: held + 1 })
        expect(stored.finishedAt, 'nor does the suppressed write leave a finishedAt').toBeUndefined()
      } else {
        expect(settled.ok, `a non-terminal status is not fenced: the drive ends normally${settled.ok ? '' : `, but it rejected with ${String(settled.error)}`}`).toBe(true)
        expect(stored, "a lost claim's non-terminal patch ('interrupted') passes through to the record").toMatchObject({ status: 'interrupted', driverEpoch: held + 1 })
      }
      expect(host.closes(), "close() is outside both fences: the lost driver's close() reaches the log once").toBe(1)
      expect(fingerprints(await storedChunks(stores, run.runId)), 'nothing is appended after the loss (no RUN_ERROR on top of the run)').toEqual(fingerprints(chunks))
    })
  }
}

/**
 * A terminal or unknown run is not claimed: a run the store has no record of
 * rejects with `RunClaimNotAcquiredError` `'unknown'` (and no record is
 * created), a `'completed'`, `'failed'` or `'aborted'` one with `'terminal'`;
 * no drive starts, `driverEpoch` is untouched and nothing reaches the log.
 *
 * @param stores - The stores under test.
 * @param settings - `fenceQuietMs` (default 200).
 */
export async function checkTakeoverRefusesTerminalAndUnknown(stores: TakeoverStores, settings: TakeoverCheckSettings = {}): Promise<void> {
  const ghost = { runId: `takeover-conformance:unknown:${randomUUID()}`, threadId: 'takeover-conformance:unknown-thread' }
  await withHosts(stores, ghost, settings, [], async (start) => {
    const host = start('driver (unknown run)', { drive: () => pausedStream(runChunks(ghost, 'ghost')) })
    expectNotAcquired(await host.settled, 'unknown', 'a run the store has no record of')
    expect(host.drives(), 'an unknown run is not driven').toBe(0)
    expect(await stores.runs.get(ghost.runId), 'claiming an unknown run creates no record').toBeNull()
    expect(await storedChunks(stores, ghost.runId), 'nothing is written to the log of an unknown run').toEqual([])
  })
  for (const status of ['completed', 'failed', 'aborted'] as const) {
    const run = await seedDetachedRun(stores, `refuses-${status}`)
    await stores.runs.update(run.runId, { status, finishedAt: Date.now(), detachedSince: undefined })
    await withHosts(stores, run, settings, [], async (start) => {
      const host = start(`driver (${status} run)`, { drive: () => pausedStream(runChunks(run, 'late')) })
      expectNotAcquired(await host.settled, 'terminal', `a ${status} run`)
      expect(host.drives(), `a ${status} run is not driven`).toBe(0)
      expect(await record(stores, run.runId), `claiming a ${status} run changes nothing: status and driverEpoch as they were`).toMatchObject({ status, driverEpoch: SEEDED_EPOCH })
      expect(await storedChunks(stores, run.runId), `nothing is written to the log of a ${status} run`).toEqual([])
    })
  }
}

/** One entry of {@link TAKEOVER_CHECKS}: a title and the check. */
export type TakeoverCheck = readonly [title: string, check: (stores: TakeoverStores, settings?: TakeoverCheckSettings) => Promise<void>]

/** Every takeover check, in the order the suite runs them. */
export const TAKEOVER_CHECKS: ReadonlyArray<TakeoverCheck> = [
  ['exactly one writer when two drivers claim one detached run at once', checkTakeoverSingleWriter],
  ["a superseded driver's append is refused and the successor finishes the run", checkTakeoverSupersededAppendRefused],
  ['the first refusal latches: later writes stay refused when the epoch reads right again', checkTakeoverRefusalLatches],
  ["a lost claim's terminal update is suppressed; non-terminal patches and close() pass", checkTakeoverLostTerminalSuppressed],
  ['a terminal or unknown run is not claimed', checkTakeoverRefusesTerminalAndUnknown],
]

/**
 * Register the takeover conformance suite in the current vitest file: one
 * `describe` named after the stores, one test per entry of
 * {@link TAKEOVER_CHECKS}. `makeStores` runs before each test and both
 * drivers of a test share what it returns; a database-backed set may return
 * the same database every time (each case uses run ids unique to it). The
 * records and logs the cases write are left behind (neither store has a
 * delete): point the suite at a test database. Each case takes about
 * `fenceQuietMs` × 2 plus the stores' latency.
 *
 * @param name - Shown in the suite title, e.g. `sqlite`.
 * @param options - {@link TakeoverConformanceOptions}.
 * @throws SandboxConfigError naming the field for invalid options, and (in the test) for a `makeStores()` result that is not `{ runs, locks, log }`.
 * @example
 * ```ts
 * import { InMemoryRunStore, memoryStream } from '@tanstack/ai'
 * import { InMemoryLockStore } from '@tanstack/ai/locks'
 * import { runTakeoverConformance } from '@tanstack/ai-sandbox/testkit'
 *
 * const runs = new InMemoryRunStore()
 * const locks = new InMemoryLockStore()
 * runTakeoverConformance('in-memory', { makeStores: () => ({ runs, locks, log: (runId) => memoryStream({ runId }) }) })
 * ```
 */
export function runTakeoverConformance(name: string, options: TakeoverConformanceOptions): void {
  const { makeStores, fenceQuietMs = DEFAULT_KIT_FENCE_QUIET_MS, timeoutMs = 10_000 } = parseOptions(optionsSchema, options, 'runTakeoverConformance')
  describe(`takeover conformance: ${name}`, () => {
    let stores: TakeoverStores
    beforeEach(async () => {
      stores = parseOptions(storesSchema, await makeStores(), 'runTakeoverConformance.makeStores()') as TakeoverStores
    }, timeoutMs)
    for (const [title, check] of TAKEOVER_CHECKS) it(title, () => check(stores, { fenceQuietMs }), timeoutMs)
  })
}
