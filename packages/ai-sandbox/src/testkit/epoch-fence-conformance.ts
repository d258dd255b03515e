/**
 * `runEpochFenceConformance`: the engine-enforced epoch fence
 * (`EpochFencedRunStore.updateAtEpoch`, `EpochFencedStreamDurability.atEpoch`)
 * as a vitest suite over a store author's run store and log, checking what
 * `durability/epoch-fence.ts` promises. A claim is simulated the portable way,
 * by `runs.update(runId, { driverEpoch })`. Each check is also a plain function.
 * Design notes: docs/design/testkit.md
 */
import type { RunStore, StreamChunk } from '@tanstack/ai'
import { EventType } from '@tanstack/ai'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { StaleEpochError, type EpochFencedRunStore, type EpochFencedStreamDurability } from '../durability/epoch-fence.js'

/** What {@link runEpochFenceConformance} checks: a run store and the run logs of one database. */
export interface EpochFenceStores {
  /** The run store, with `updateAtEpoch`. */
  runs: EpochFencedRunStore
  /** The log of one run, with `atEpoch`; the same log for one run every time. */
  log: (runId: string) => EpochFencedStreamDurability
  /** Called after each case. */
  close?: () => void | Promise<void>
}

/** Options of {@link runEpochFenceConformance}. */
export interface EpochFenceConformanceOptions {
  /** Build the stores under test; called before each case. */
  makeStores: () => EpochFenceStores | Promise<EpochFenceStores>
  /** Timeout of each case, in ms. Default 20 000. */
  timeoutMs?: number
}

/** One check of the kit. */
export type EpochFenceCheck = (stores: EpochFenceStores) => Promise<void>

const RUN = randomUUID().slice(0, 8)

function ids(name: string): { runId: string; threadId: string } {
  return { runId: `epoch-fence:${RUN}:${name}:${randomUUID()}`, threadId: `epoch-fence:${RUN}:thread:${randomUUID()}` }
}

function text(label: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta: label, timestamp: 0 } as StreamChunk
}

function labels(entries: ReadonlyArray<{ chunk: StreamChunk }>): string[] {
  return entries.map((entry) => (entry.chunk as { delta?: string }).delta ?? '?')
}

async function refusal(write: Promise<unknown>, rule: string): Promise<StaleEpochError> {
  const error = await write.then(
    () => undefined,
    (reason: unknown) => reason,
  )
  expect(error, `${rule}: the write must be refused`).toBeDefined()
  expect(StaleEpochError.isInstance(error), `${rule}: the refusal must be a StaleEpochError, got ${String(error)}`).toBe(true)
  return error as StaleEpochError
}

async function fresh(runs: RunStore, name: string, driverEpoch?: number): Promise<string> {
  const { runId, threadId } = ids(name)
  await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
  if (driverEpoch !== undefined) await runs.update(runId, { driverEpoch })
  return runId
}

/** `updateAtEpoch` applies at the stored epoch (key-presence rule intact), is refused at another, `undefined` only while unset, and an unknown run is `false`. */
export const checkUpdateAtEpoch: EpochFenceCheck = async ({ runs }) => {
  const unclaimed = await fresh(runs, 'update-unset')
  expect(await runs.updateAtEpoch(unclaimed, 1, { sandboxKey: 'k' }), 'updateAtEpoch(1) of a run no driver claimed is refused').toBe(false)
  expect(await runs.updateAtEpoch(unclaimed, undefined, { sandboxKey: 'k' }), 'updateAtEpoch(undefined) of a run no driver claimed applies').toBe(true)
  expect((await runs.get(unclaimed))?.sandboxKey).toBe('k')

  const runId = await fresh(runs, 'update-held', 3)
  await runs.update(runId, { detachedSince: 1234 })
  expect(await runs.updateAtEpoch(runId, undefined, { status: 'failed' }), 'updateAtEpoch(undefined) once a driver claimed is refused').toBe(false)
  expect(await runs.updateAtEpoch(runId, 2, { status: 'failed' }), 'updateAtEpoch at a superseded epoch is refused').toBe(false)
  expect((await runs.get(runId))?.status, 'a refused patch changes nothing').toBe('running')
  expect(await runs.updateAtEpoch(runId, 3, { status: 'completed', finishedAt: 99, detachedSince: undefined }), 'updateAtEpoch at the stored epoch applies').toBe(true)
  const after = await runs.get(runId)
  expect(after, 'the patch applied with the key-presence rule').toMatchObject({ status: 'completed', finishedAt: 99, driverEpoch: 3 })
  expect(after?.detachedSince, 'an explicit undefined clears the field').toBeUndefined()
  expect(await runs.updateAtEpoch(ids('update-unknown').runId, undefined, { status: 'failed' }), 'updateAtEpoch of an unknown run is false').toBe(false)
}

/** `atEpoch(stale).append` stores nothing and rejects with `StaleEpochError` naming both epochs; the held epoch appends; reads and close are not fenced. */
export const checkStaleAppendRefused: EpochFenceCheck = async ({ runs, log }) => {
  const runId = await fresh(runs, 'append-stale', 5)
  const stream = log(runId)
  await stream.atEpoch(5).append([text('held-1'), text('held-2')])
  const error = await refusal(stream.atEpoch(4).append([text('stale')]), 'an append at a superseded epoch')
  expect({ runId: error.runId, epoch: error.epoch, storedEpoch: error.storedEpoch }, 'the StaleEpochError names the run and both epochs').toEqual({ runId, epoch: 4, storedEpoch: 5 })
  await refusal(stream.atEpoch(6).append([text('future')]), 'an append at an epoch no claim wrote')
  const stale = stream.atEpoch(4)
  expect(labels(await stale.snapshot()), 'a stale view still reads, and nothing refused was stored').toEqual(['held-1', 'held-2'])
  await stale.close()
}

/** The plain log writes at epoch `undefined`: it appends until a driver claims, then it is refused; a run with no record appends freely. */
export const checkFirstHostFenced: EpochFenceCheck = async ({ runs, log }) => {
  const runId = await fresh(runs, 'first-host')
  const stream = log(runId)
  await stream.append([text('first')])
  await runs.update(runId, { driverEpoch: 1 })
  const error = await refusal(stream.append([text('late')]), "the first host's append after a driver claimed")
  expect(error.epoch, 'the first host writes at epoch undefined').toBeUndefined()
  await stream.atEpoch(1).append([text('driver')])
  expect(labels(await stream.snapshot())).toEqual(['first', 'driver'])

  const unrecorded = log(ids('no-record').runId)
  await unrecorded.append([text('free')])
  await unrecorded.atEpoch(7).append([text('free-too')])
  expect(labels(await unrecorded.snapshot()), 'a log whose run has no record appends freely').toEqual(['free', 'free-too'])
}

/** A stale writer appending in a loop while a claim bumps the epoch: every resolved append is stored once, no refused one is, and none lands after the successor's first. */
export const checkClaimRace: EpochFenceCheck = async ({ runs, log }) => {
  const runId = await fresh(runs, 'race', 1)
  const stream = log(runId)
  const stored: string[] = []
  let refused: unknown
  const deadline = Date.now() + 5000
  const stale = (async () => {
    for (let i = 0; refused === undefined && Date.now() < deadline; i++) {
      // Yield to timers between appends, as a writer in another process would, so the claim below can land mid-loop.
      await new Promise((resolve) => setImmediate(resolve))
      try {
        await stream.atEpoch(1).append([text(`a${i}`)])
        stored.push(`a${i}`)
      } catch (error) {
        refused = error
      }
    }
  })()
  while (stored.length < 5 && refused === undefined) await new Promise((resolve) => setTimeout(resolve, 1))
  await runs.update(runId, { driverEpoch: 2 })
  await stream.atEpoch(2).append([text('b0')])
  await stale
  expect(StaleEpochError.isInstance(refused), `the stale writer must end refused with a StaleEpochError, got ${String(refused)}`).toBe(true)
  await stream.atEpoch(2).append([text('b1')])
  const all = labels(await stream.snapshot())
  expect(all, 'the log holds exactly the resolved appends, in order, then the successor').toEqual([...stored, 'b0', 'b1'])
}

/** A stale writer's `close()` resolves without closing: a reader of the run the successor drives keeps receiving its chunks until the successor closes. */
export const checkStaleCloseIgnored: EpochFenceCheck = async ({ runs, log }) => {
  const runId = await fresh(runs, 'stale-close')
  const stream = log(runId)
  await stream.append([text('first')])
  const received: string[] = []
  const reader = (async () => {
    for await (const entry of log(runId).read('-1')) received.push(labels([entry])[0]!)
  })()
  await runs.update(runId, { driverEpoch: 1 })
  await stream.atEpoch(1).append([text('successor-1')])
  await stream.close()
  await stream.atEpoch(0).close()
  await stream.atEpoch(1).append([text('successor-2')])
  await stream.atEpoch(1).close()
  await Promise.race([reader, new Promise((_, reject) => setTimeout(() => reject(new Error('the reader did not end after the successor closed the log')), 10_000))])
  expect(received, "a stale close does not end the successor's readers; the successor's close does").toEqual(['first', 'successor-1', 'successor-2'])
}

/** Every check of the kit, by title. */
export const EPOCH_FENCE_CHECKS: ReadonlyArray<readonly [string, EpochFenceCheck]> = [
  ['updateAtEpoch applies only at the stored epoch, with the key-presence rule', checkUpdateAtEpoch],
  ['an append at a stale epoch stores nothing and is refused with StaleEpochError', checkStaleAppendRefused],
  ["the first host's plain log is fenced once a driver claims; a log with no record is not", checkFirstHostFenced],
  ["a stale writer racing a claim: nothing refused is stored, nothing lands after the successor's first", checkClaimRace],
  ["a stale writer's close does not end the successor's readers", checkStaleCloseIgnored],
]

const optionsSchema = z
  .object({
    makeStores: z.custom<EpochFenceConformanceOptions['makeStores']>((v) => typeof v === 'function', { message: 'expected makeStores() returning { runs, log(runId), close? }' }),
    timeoutMs: z.number().int().positive('expected a timeout in ms above 0').optional(),
  })
  .strict()

/**
 * Register the epoch-fence kit as a vitest `describe` block: run it in the
 * test suite of a store that implements `EpochFencedRunStore` and
 * `EpochFencedStreamDurability` (`@tanstack/ai-sandbox`). Run ids are unique
 * per case, so a shared database is fine.
 *
 * @param name - Shown in the block title.
 * @param options - `makeStores` (required), `timeoutMs` (default 20 000).
 * @throws SandboxConfigError naming the option when one is invalid.
 * @example
 * ```ts
 * runEpochFenceConformance('sqlite', { makeStores: () => { const s = createSqliteStores({ path }); return { runs: s.runs, log: (runId) => s.stream({ runId }), close: s.close } } })
 * ```
 */
export function runEpochFenceConformance(name: string, options: EpochFenceConformanceOptions): void {
  const parsed = parseOptions(optionsSchema, options, 'runEpochFenceConformance')
  const timeoutMs = parsed.timeoutMs ?? 20_000
  describe(`epoch-fence conformance: ${name}`, () => {
    for (const [title, check] of EPOCH_FENCE_CHECKS) {
      it(
        title,
        async () => {
          const stores = await options.makeStores()
          try {
            await check(stores)
          } finally {
            await stores.close?.()
          }
        },
        timeoutMs,
      )
    }
  })
}

