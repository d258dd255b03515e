/**
 * The journaled-run side of the lifecycle suites: durable chat() runs of a
 * harness adapter through `withSandbox(sandbox, { runs, durability })`, a
 * look at a run's journal from inside the sandbox, and the
 * detach-then-attach sequence both the local-process and the Docker suites
 * check (an aborted request detaches: the sandbox and its agent stay, the
 * record gets `detachedSince` + `sandboxKey`; a second chat() with
 * `attach: true` finishes the run). It asserts nothing itself.
 */
import { createHash } from 'node:crypto'
import { chat, InMemoryRunStore, memoryStream, type ModelMessage, type RunRecord, type StreamChunk } from '@tanstack/ai'
import { chunkFingerprint, journalPaths, shellQuote, withSandbox, type SandboxDefinition, type SandboxHandle, type SandboxRunDurability } from '@tanstack/ai-sandbox'

/** The prompt of every journaled run. */
export const JOURNAL_MESSAGES: ModelMessage[] = [{ role: 'user', content: 'Work slowly and tell me each step' }]

/** A durable run's parts as `withSandbox({ runs, durability })` will resolve them: a fresh store, the run's `memoryStream` log. */
export function durabilityFor(runId: string, journalDir: string | undefined, extra: Partial<SandboxRunDurability> = {}): SandboxRunDurability {
  return { runs: new InMemoryRunStore(), log: memoryStream({ runId }), attach: false, ...(journalDir !== undefined ? { journalDir } : {}), ...extra }
}

/** `withSandbox` for a durable run of these parts: `runs` + `durability` (the one opt-in). */
export const durableSandbox = (sandbox: SandboxDefinition, durability: SandboxRunDurability) =>
  withSandbox(sandbox, {
    runs: durability.runs,
    durability: {
      adapter: durability.log,
      attach: durability.attach,
      ...(durability.attachWaitMs !== undefined ? { attachWaitMs: durability.attachWaitMs } : {}),
      ...(durability.journalDir !== undefined ? { journalDir: durability.journalDir } : {}),
    },
  })

/** Input of {@link drive}. */
export interface DriveInput {
  adapter: unknown
  middleware: unknown[]
  runId?: string
  threadId?: string
  abortController?: AbortController
  /** Sees each chunk before the next is read; `'stop'` leaves the stream (the host goes away). */
  onChunk?: (chunk: StreamChunk) => Promise<'stop' | void>
}

/** What one chat() run gave: its chunks, and what the stream threw (if it did). */
export interface Driven {
  chunks: StreamChunk[]
  thrown?: unknown
}

/** One chat() run of {@link JOURNAL_MESSAGES}. Never throws: a rejected stream is `thrown`. */
export async function drive(input: DriveInput): Promise<Driven> {
  const chunks: StreamChunk[] = []
  try {
    const stream = chat({
      adapter: input.adapter,
      messages: JOURNAL_MESSAGES,
      middleware: input.middleware,
      ...(input.runId ? { runId: input.runId } : {}),
      ...(input.threadId ? { threadId: input.threadId } : {}),
      ...(input.abortController ? { abortController: input.abortController } : {}),
    } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
    for await (const chunk of stream) {
      chunks.push(chunk)
      if ((await input.onChunk?.(chunk)) === 'stop') break
    }
    return { chunks }
  } catch (thrown) {
    return { chunks, thrown }
  }
}

/** Alignment's view of chunks: one fingerprint each. */
export const fingerprints = (chunks: readonly StreamChunk[]): string[] => chunks.map((chunk) => chunkFingerprint(chunk))
/** The streamed text of a run. */
export const textOf = (chunks: readonly StreamChunk[]): string => chunks.map((c) => (c.type === 'TEXT_MESSAGE_CONTENT' ? c.delta : '')).join('')
/** The last chunk, with a RUN_ERROR's fields readable. */
export const lastChunk = (chunks: readonly StreamChunk[]) => chunks.at(-1) as (StreamChunk & { code?: string; message?: string }) | undefined

/** A run's journal as the sandbox's shell sees it: the size of the `.ndjson` in bytes (`undefined`: absent) and whether the `.err` sidecar exists. */
export async function journalState(handle: SandboxHandle, runId: string, dir?: string): Promise<{ bytes?: number; sidecar: boolean }> {
  const paths = journalPaths(runId, dir)
  const probe = await handle.process.exec(`if [ -e ${shellQuote(paths.journal)} ]; then wc -c < ${shellQuote(paths.journal)}; else echo none; fi; if [ -e ${shellQuote(paths.stderr)} ]; then echo sidecar; fi`)
  const [size, sidecar] = probe.stdout.trim().split('\n')
  return { ...(size !== 'none' ? { bytes: Number(size!.trim()) } : {}), sidecar: sidecar === 'sidecar' }
}

/** True when neither journal file of the run is left. */
export async function journalGone(handle: SandboxHandle, runId: string, dir?: string): Promise<boolean> {
  const state = await journalState(handle, runId, dir)
  return state.bytes === undefined && !state.sidecar
}

/** Input of {@link detachAndAttach}. */
export interface DetachAttachInput {
  sandbox: SandboxDefinition
  threadId: string
  runId: string
  journalDir?: string
  /**
   * A fresh adapter for the fake CLI playing a slow turn, with the tag of its processes; `env` goes to the CLI
   * (the gate: `FAKE_GATE`, `FAKE_GATE_STEP`).
   */
  fake: (env?: Record<string, string>) => { tag: string; adapter: unknown }
  /** Live processes of a tag. */
  processesOf: (tag: string) => number[]
  /** Poll until true or a hang bound passes. */
  waitFor: (check: () => boolean | Promise<boolean>) => Promise<boolean>
  /** The host leaves after this many `TEXT_MESSAGE_END`s. Default 2. */
  leaveAfterMessages?: number
}

/** What {@link detachAndAttach} saw, for the test to check. */
export interface DetachAttachResult {
  /** The same run, uninterrupted (journaled, through withSandbox). */
  reference: Driven
  referenceJournalGone: boolean
  /** Host 1 (aborted mid-run); its chunks are the log's first K entries. */
  first: Driven
  /** The CLI's live processes right after host 1 left. */
  aliveAfterAbort: number
  /** The run record right after host 1 left (the detach wrote `detachedSince` + `sandboxKey`). */
  detachedRecord: RunRecord | null
  /** The key of the run's sandbox, as the detach should have recorded it. */
  sandboxKey: string
  /** The journal grew after host 1 left (the CLI kept writing). */
  journalGrew: boolean
  /** Host 2 (attach through withSandbox, same runId, the record's threadId, same log). */
  second: Driven
  /** Every chunk the log holds at the end. */
  stored: StreamChunk[]
  /** Both journal files are gone after the attach read the sentinel. */
  journalGoneAfter: boolean
  /** No process of the run is left after the attach. */
  processesGoneAfter: boolean
  /** The run record after the attach finished the run. */
  finalRecord: RunRecord | null
}

/**
 * Run a slow turn three times with one runId: once uninterrupted (the
 * reference), once by a durable host whose request is aborted mid-run after K
 * chunks went to the run's `memoryStream` log (it detaches), and once by a
 * host that attaches (`attach: true`, the record's threadId) and appends what
 * it yields to the same log, as the transport would.
 */
export async function detachAndAttach(input: DetachAttachInput): Promise<DetachAttachResult> {
  const { sandbox, threadId, runId, journalDir, processesOf, waitFor } = input
  const reference = await drive({ adapter: input.fake().adapter, middleware: [durableSandbox(sandbox, durabilityFor(runId, journalDir))], runId, threadId })
  const handle = await sandbox.ensure({ threadId, runId })
  const referenceJournalGone = await waitFor(() => journalGone(handle, runId, journalDir))

  const runs = new InMemoryRunStore()
  await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
  const log = memoryStream({ runId })
  const leaveAfter = input.leaveAfterMessages ?? 2
  // Host 1's CLI waits at a gate (a file in the sandbox's /tmp) after the step host 1 leaves at, until host 1 is
  // gone: however slowly a loaded machine delivers its events, the CLI is still running when its host leaves, and
  // writes on after it.
  const gate = `/tmp/journal-gate-${createHash('sha256').update(runId).digest('hex').slice(0, 16)}`
  const { tag, adapter } = input.fake({ FAKE_GATE: gate, FAKE_GATE_STEP: String(leaveAfter + 1) })
  const controller = new AbortController()
  let ends = 0
  const first = await drive({
    adapter,
    middleware: [durableSandbox(sandbox, { runs, log, attach: false, ...(journalDir !== undefined ? { journalDir } : {}) })],
    runId,
    threadId,
    abortController: controller,
    onChunk: async (chunk) => {
      await log.append([chunk])
      if (chunk.type === 'TEXT_MESSAGE_END' && ++ends === leaveAfter) {
        controller.abort()
        return 'stop'
      }
    },
  })
  const aliveAfterAbort = processesOf(tag).length
  const detachedRecord = await runs.get(runId)
  const sizeAtAbort = (await journalState(handle, runId, journalDir)).bytes ?? 0
  await handle.process.exec(`touch ${gate}`)
  const journalGrew = await waitFor(async () => ((await journalState(handle, runId, journalDir)).bytes ?? 0) > sizeAtAbort)

  const record = await runs.get(runId)
  const second = await drive({
    adapter,
    middleware: [durableSandbox(sandbox, { runs, log, attach: true, ...(journalDir !== undefined ? { journalDir } : {}) })],
    runId,
    threadId: record!.threadId,
    onChunk: async (chunk) => void (await log.append([chunk])),
  })
  const stored = (await log.snapshot()).map((entry) => entry.chunk)
  const journalGoneAfter = await waitFor(() => journalGone(handle, runId, journalDir))
  const processesGoneAfter = await waitFor(() => processesOf(tag).length === 0)
  const finalRecord = await runs.get(runId)
  await handle.process.exec(`rm -f ${gate}`)
  return { reference, referenceJournalGone, first, aliveAfterAbort, detachedRecord, sandboxKey: sandbox.key({ threadId, runId }), journalGrew, second, stored, journalGoneAfter, processesGoneAfter, finalRecord }
}
