/**
 * The durability seam between `withSandbox` and the harness adapters: what a
 * durable run looks like once resolved (`SandboxRunDurability`), the
 * capability that carries it per run, and the two helpers an adapter drives
 * with (`journalOptionsFor`, `alignedIfAttaching`). It decides nothing about
 * detaching or claiming a run; those live with `withSandbox` and the run
 * driver. Source: spec 000 "Durability is ONE opt-in", spec 003.
 */
import { EventType, normalizeStreamChunk, type AdapterYieldChunk, type RunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { restoreInboundChunk } from '@tanstack/ai/client'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { JournalOptions } from '../journal/journal-options.js'
import { alignToStoredLog, isBridgeCustomChunk } from './align.js'
import { SANDBOX_TOOL_CALL_KEY } from '../contracts/tool-call-marker.js'

/**
 * A run's event log as the sandbox layer sees it: core's `StreamDurability`
 * without `read` (which tails until `close` and is the transport's business).
 * Alignment uses only `snapshot`.
 */
export type SandboxDurabilityLog<TOffset extends string = string> = Omit<StreamDurability<TOffset>, 'read'>

/**
 * `withSandbox(sandbox, { runs, durability })`'s `durability` option. A run
 * is durable only when BOTH `runs` and `durability` are given.
 */
export interface SandboxDurabilityOptions<TOffset extends string = string> {
  /** The run's event log: the SAME instance the transport (`toServerSentEventsResponse({ durability })`) writes. */
  adapter: SandboxDurabilityLog<TOffset> | StreamDurability<TOffset>
  /**
   * Tail the run's EXISTING journal instead of starting a second agent, and
   * suppress what the log already holds. Set only by an attach route (a
   * takeover), never by the request that starts the run. Default `false`.
   */
  attach?: boolean
  /** Bound of the attach preflight, in ms. Default `DEFAULT_ATTACH_JOURNAL_WAIT_MS` (10 s). */
  attachWaitMs?: number
  /** Absolute journal folder inside the sandbox. Default `DEFAULT_JOURNAL_DIR`. */
  journalDir?: string
  /**
   * How often, in ms, a live durable run re-reads its record for a cancel
   * recorded by another host (`requestRunCancel`). Once seen, the run is
   * aborted with `RUN_CANCEL_REASON` and its sandbox destroyed, so a cancel
   * reaches a run driven anywhere within one interval. Default
   * `DEFAULT_CANCEL_POLL_MS` (1000). Each poll is one `runs.get`.
   */
  cancelPollMs?: number
}

/** What a harness adapter reads off the capability bus for a durable run. */
export interface SandboxRunDurability<TOffset extends string = string> {
  /** The run record store (the same one chat persistence uses). */
  readonly runs: RunStore
  /** The run's event log. */
  readonly log: SandboxDurabilityLog<TOffset>
  /** See {@link SandboxDurabilityOptions.attach}. */
  readonly attach: boolean
  readonly attachWaitMs?: number
  readonly journalDir?: string
  /**
   * Whether this host still owns the run: `false` once another host took it
   * over (a claim moved `driverEpoch` past this host's; for a driver that
   * claimed the run, also once its lease was lost). A
   * host that lost the run stops, deletes and writes nothing of it: not the
   * agent (the successor tails the same one), not the journal, not the
   * record. Set per run by `withSandbox`; absent means owned. Never rejects
   * (a failed read answers `false`).
   */
  readonly stillOwned?: () => Promise<boolean>
  /**
   * Leave the journal when the run ends: the host deletes it once the run's
   * end is stored in the log (a successor needs it until then). Set by
   * `withSandbox`, which does that; absent, the harness deletes the journal
   * once it read the sentinel.
   */
  readonly keepJournal?: boolean
}


/**
 * The `journal` option a journaling adapter passes to `spawnNdjson` for a
 * run, or `undefined` when the run is not durable (no journal).
 *
 * @param durability - The run's durability, from `getSandboxDurability(..., { optional: true })`.
 * @param runId - The run's id (already resolved with `resolveDurableRunId`).
 */
export function journalOptionsFor(durability: SandboxRunDurability | undefined, runId: string): JournalOptions | undefined {
  if (!durability) return undefined
  return { runId, ...(durability.journalDir !== undefined ? { dir: durability.journalDir } : {}), ...(durability.keepJournal ? { keep: true } : {}) }
}

/**
 * On an attaching run, the chunks past what the run's log already holds
 * (`alignToStoredLog` with the bridge-event tolerance); otherwise `chunks`
 * unchanged. The log holds what `chat()` delivered, which is not what the
 * adapter yielded: `chat()` moves every field outside the AG-UI spec into
 * `metadata.tanstack` and puts a few back (`TOOL_CALL_END.input`, TanStack
 * usage). So both sides are compared in that delivered shape
 * ({@link deliveredShape}), and the adapter's own chunks are forwarded.
 *
 * @param chunks - The adapter's replayed (or live) chunks.
 * @param durability - The run's durability, or `undefined`.
 * @param logger - Receives the alignment summary.
 * @throws JournalReplayDivergedError (from iteration) when the replay does not reproduce the log.
 */
export function alignedIfAttaching<T extends StreamChunk>(chunks: AsyncIterable<T>, durability: SandboxRunDurability | undefined, logger?: InternalLogger): AsyncIterable<T> {
  if (!durability?.attach) return chunks
  const log = durability.log
  /** Each delivered-shape view, back to the adapter's chunk it was made from. */
  const own = new WeakMap<StreamChunk, T>()
  const views = (async function* () {
    for await (const chunk of chunks) {
      const view = deliveredShape(chunk)
      own.set(view, chunk)
      yield view
    }
  })()
  const stored = { snapshot: async () => (await log.snapshot()).map(({ offset, chunk }) => ({ offset, chunk: deliveredShape(chunk) })) }
  const aligned = alignToStoredLog(views, { durability: stored, isOutOfBand: isBridgeCustomChunk, ...(logger ? { logger } : {}) })
  return (async function* () {
    for await (const view of aligned) yield own.get(view)!
  })()
}

/**
 * A chunk in the shape `chat()` delivers it (and a durable transport stores
 * it): core's spec normalization, then its inbound restore of the TanStack
 * fields. The same for an adapter's raw chunk and for that chunk as
 * delivered, so a log written from `chat()`'s output and one written from the
 * adapter's output align alike. A fresh object; `chunk` is not changed. Only
 * the main chunk counts: the extra chunks `chat()` derives from a
 * `TOOL_CALL_END` with a `result` or a reasoning `signature` are not expected
 * from a harness translator (none produces them).
 */
function deliveredShape(chunk: StreamChunk): StreamChunk {
  const [main] = normalizeStreamChunk(chunk as AdapterYieldChunk)
  return withoutSandboxMarker(main ? (restoreInboundChunk(main) as StreamChunk) : { ...chunk })
}

/**
 * `chunk` without the `{ sandboxObserved: true }` marker `withSandbox` adds to
 * a harness's `TOOL_CALL_START` on its way to the log (spec 002's stored
 * literal): the log holds it, the adapter's replay never does, and it says
 * nothing about which tool call it is.
 */
function withoutSandboxMarker(chunk: StreamChunk): StreamChunk {
  if (chunk.type !== EventType.TOOL_CALL_START) return chunk
  const metadata = (chunk as { metadata?: unknown }).metadata
  if (typeof metadata !== 'object' || metadata === null || !(SANDBOX_TOOL_CALL_KEY in metadata)) return chunk
  const { [SANDBOX_TOOL_CALL_KEY]: _marker, ...rest } = metadata as Record<string, unknown>
  return { ...chunk, metadata: rest } as StreamChunk
}
