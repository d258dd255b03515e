/**
 * Type tests (vitest `expectTypeOf`, run by `pnpm test:types`) pinning the
 * journal and durability exports spec 003 lists, under the names it gives:
 * journal byte framing (whose shapes 003 prints), the journal commands and
 * reader, the attach preflight and replay alignment (shapes printed in spec
 * 004), chunk identity, the durability seam, and the run driver and claim
 * errors. Where the spec prints only a name, the shape pinned is ours, so a
 * change to it is a deliberate API change that needs a changeset.
 */
import type { RunDriverOptions, RunStore, StreamChunk, StreamDurability } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { describe, expectTypeOf, it } from 'vitest'
import {
  DEFAULT_ATTACH_JOURNAL_WAIT_MS,
  DEFAULT_ATTACH_PROBE_INTERVAL_MS,
  DEFAULT_FENCE_QUIET_MS,
  DEFAULT_JOURNAL_DIR,
  DEFAULT_JOURNAL_POLL_MS,
  DEFAULT_MAX_OUT_OF_BAND_SKIP,
  DurableAttachNotSupportedError,
  DurableRunIdRequiredError,
  DurableThreadIdRequiredError,
  EXIT_SENTINEL_KEY,
  EXIT_SENTINEL_NONCE_KEY,
  JournalAttachUnavailableError,
  JournalReplayDivergedError,
  JournalReplayThreadIdMismatchError,
  RunClaimLostError,
  RunClaimNotAcquiredError,
  RunDriverPipeOutsideClaimError,
  SandboxDurabilityCapability,
  SandboxError,
  alignToStoredLog,
  alignedIfAttaching,
  awaitAttachableJournal,
  chunkFingerprint,
  chunkFingerprintIgnoringThreadId,
  chunkThreadId,
  createRunScopedIdGen,
  decodeBase64Stream,
  decodeJournalRunId,
  encodeRunId,
  encodeUtf8Stream,
  exitSentinelLine,
  getSandboxDurability,
  isBridgeCustomChunk,
  journalExistsCommand,
  journalExitProbeCommand,
  journalFollowCommand,
  journalListCommand,
  journalMtimeListCommand,
  journalOptionsFor,
  journalPaths,
  journalReadCommand,
  journalReadStrategy,
  journaledCommand,
  parseExitSentinel,
  parseJournalExit,
  parseJournalMtimeListing,
  provideSandboxDurability,
  readJournal,
  resolveDurableRunId,
  resolveDurableThreadId,
  sandboxRunDriver,
  toJournalLines,
  type AlignToStoredLogOptions,
  type AttachUnavailableReason,
  type AwaitAttachableJournalOptions,
  type DecodedJournalRunId,
  type JournalDirEntry,
  type JournalExitState,
  type JournalHeader,
  type JournalLine,
  type JournalMtimeListing,
  type JournalOptions,
  type JournalPaths,
  type JournalTrust,
  type JournaledCommandOptions,
  type ReadJournalOptions,
  type SandboxCapabilities,
  type SandboxDurabilityLog,
  type SandboxDurabilityOptions,
  type SandboxHandle,
  type SandboxRunDriverOptions,
  type SandboxRunDurability,
  type ToJournalLinesOptions,
} from '../../src/index.js'

declare const bytes: AsyncIterable<Uint8Array>
declare const text: AsyncIterable<string>

describe('journal-bytes (shapes printed in spec 003)', () => {
  it('JournalLine is exactly { line, endPosition }', () => {
    expectTypeOf<JournalLine>().toEqualTypeOf<{ line: string; endPosition: number }>()
  })

  it('decodeBase64Stream and encodeUtf8Stream turn text chunks into byte chunks', () => {
    expectTypeOf(decodeBase64Stream).toEqualTypeOf<(chunks: AsyncIterable<string>) => AsyncIterable<Uint8Array>>()
    expectTypeOf(encodeUtf8Stream).toEqualTypeOf<(chunks: AsyncIterable<string>) => AsyncIterable<Uint8Array>>()
  })

  it('toJournalLines(byteChunks, startPosition) as the spec writes it; our guard is an optional third argument', () => {
    expectTypeOf(toJournalLines).parameter(0).toEqualTypeOf<AsyncIterable<Uint8Array>>()
    expectTypeOf(toJournalLines).parameter(1).toEqualTypeOf<number>()
    expectTypeOf(toJournalLines).parameters.toEqualTypeOf<[byteChunks: AsyncIterable<Uint8Array>, startPosition: number, options?: ToJournalLinesOptions]>()
    expectTypeOf(toJournalLines).returns.toEqualTypeOf<AsyncIterable<JournalLine>>()
    expectTypeOf<ToJournalLinesOptions>().toEqualTypeOf<{ readonly maxLineBytes?: number }>()
    expectTypeOf(toJournalLines(bytes, 100)).toEqualTypeOf<AsyncIterable<JournalLine>>()
    expectTypeOf(toJournalLines(decodeBase64Stream(text), 0)).toEqualTypeOf<AsyncIterable<JournalLine>>()
    // @ts-expect-error startPosition is required
    toJournalLines(bytes)
    // @ts-expect-error the old options object is not a start position
    toJournalLines(bytes, { startByte: 100 })
    // @ts-expect-error text must be encoded first (encodeUtf8Stream)
    toJournalLines(text, 0)
  })
})

describe('journal commands (names in spec 003)', () => {
  it('paths, run ids and the sentinel', () => {
    expectTypeOf<typeof DEFAULT_JOURNAL_DIR>().toEqualTypeOf<'/tmp/tanstack-runs'>()
    expectTypeOf<typeof EXIT_SENTINEL_KEY>().toEqualTypeOf<'__exit'>()
    expectTypeOf<typeof EXIT_SENTINEL_NONCE_KEY>().toEqualTypeOf<'__nonce'>()
    expectTypeOf<JournalPaths>().toEqualTypeOf<{ readonly dir: string; readonly journal: string; readonly stderr: string }>()
    expectTypeOf(journalPaths).toEqualTypeOf<(runId: string, dir?: string) => JournalPaths>()
    expectTypeOf(encodeRunId).toEqualTypeOf<(runId: string) => string>()
    expectTypeOf(decodeJournalRunId).toEqualTypeOf<(name: string) => DecodedJournalRunId>()
    expectTypeOf<DecodedJournalRunId>().toEqualTypeOf<{ readonly ok: true; readonly runId: string } | { readonly ok: false; readonly reason: string }>()
    expectTypeOf(exitSentinelLine).toEqualTypeOf<(exitCode: number, nonce: string) => string>()
    expectTypeOf(parseExitSentinel).toEqualTypeOf<(line: string, header?: JournalHeader) => { readonly exitCode: number } | undefined>()
  })

  it('the shell commands are pure string builders', () => {
    expectTypeOf(journaledCommand).toEqualTypeOf<(paths: JournalPaths, command: string, options?: JournaledCommandOptions) => string>()
    expectTypeOf(journalFollowCommand).toEqualTypeOf<(paths: JournalPaths, fromByte?: number) => string>()
    expectTypeOf(journalReadCommand).toEqualTypeOf<(paths: JournalPaths, fromByte?: number, maxBytes?: number) => string>()
    expectTypeOf(journalExistsCommand).toEqualTypeOf<(paths: JournalPaths) => string>()
    expectTypeOf(journalListCommand).toEqualTypeOf<(dir?: string) => string>()
    expectTypeOf(journalMtimeListCommand).toEqualTypeOf<(dir?: string) => string>()
    expectTypeOf(journalExitProbeCommand).toEqualTypeOf<(paths: JournalPaths, bytes?: number) => string>()
  })

  it('the parsers and what they return', () => {
    expectTypeOf(parseJournalMtimeListing).toEqualTypeOf<(stdout: string, dir?: string) => JournalMtimeListing>()
    expectTypeOf<JournalMtimeListing>().toEqualTypeOf<{ readonly nowMs: number; readonly entries: readonly JournalDirEntry[] }>()
    expectTypeOf<JournalDirEntry>().toEqualTypeOf<{ readonly path: string; readonly name: string; readonly runId: string | undefined; readonly mtimeMs?: number }>()
    expectTypeOf(parseJournalExit).toEqualTypeOf<(stdout: string, trust?: JournalTrust) => JournalExitState>()
    expectTypeOf<JournalExitState>().toEqualTypeOf<{ readonly state: 'missing' } | { readonly state: 'running' } | { readonly state: 'exited'; readonly exitCode: number }>()
  })
})

describe('journal reader (names in spec 003)', () => {
  it('readJournal yields JournalLine; the strategy comes from two capability flags', () => {
    expectTypeOf<typeof DEFAULT_JOURNAL_POLL_MS>().toEqualTypeOf<250>()
    expectTypeOf(readJournal).toEqualTypeOf<(handle: SandboxHandle, options: ReadJournalOptions) => AsyncIterable<JournalLine>>()
    expectTypeOf(journalReadStrategy).toEqualTypeOf<(capabilities: Pick<SandboxCapabilities, 'backgroundProcesses' | 'killableProcesses'>) => 'follow' | 'poll'>()
    expectTypeOf<ReadJournalOptions['fromByte']>().toEqualTypeOf<number | undefined>()
  })
})

describe('attach preflight (shapes printed in spec 004)', () => {
  it('the defaults, the reasons and the options', () => {
    expectTypeOf<typeof DEFAULT_ATTACH_JOURNAL_WAIT_MS>().toEqualTypeOf<10_000>()
    expectTypeOf<typeof DEFAULT_ATTACH_PROBE_INTERVAL_MS>().toEqualTypeOf<100>()
    expectTypeOf<AttachUnavailableReason>().toEqualTypeOf<'unknown-run' | 'terminal-run' | 'journal-timeout' | 'journal-stalled'>()
    expectTypeOf<AwaitAttachableJournalOptions>().toEqualTypeOf<{
      paths: JournalPaths
      runId: string
      runs?: RunStore
      waitMs?: number
      probeIntervalMs?: number
      signal?: AbortSignal
      logger?: InternalLogger
    }>()
    expectTypeOf(awaitAttachableJournal).toEqualTypeOf<(handle: SandboxHandle, options: AwaitAttachableJournalOptions) => Promise<void>>()
  })

  it('JournalAttachUnavailableError(runId, reason, detail) carries runId and reason', () => {
    expectTypeOf(JournalAttachUnavailableError).constructorParameters.toExtend<[string, AttachUnavailableReason, string, ...unknown[]]>()
    expectTypeOf<[string, AttachUnavailableReason, string]>().toExtend<ConstructorParameters<typeof JournalAttachUnavailableError>>()
    expectTypeOf<JournalAttachUnavailableError['runId']>().toEqualTypeOf<string>()
    expectTypeOf<JournalAttachUnavailableError['reason']>().toEqualTypeOf<AttachUnavailableReason>()
    expectTypeOf<JournalAttachUnavailableError>().toExtend<Error>()
  })
})

describe('replay alignment and chunk identity (shapes printed in spec 004)', () => {
  it('alignToStoredLog(chunks, options) and its options', () => {
    expectTypeOf<typeof DEFAULT_MAX_OUT_OF_BAND_SKIP>().toEqualTypeOf<64>()
    expectTypeOf(isBridgeCustomChunk).toEqualTypeOf<(chunk: StreamChunk) => boolean>()
    expectTypeOf<AlignToStoredLogOptions>().toEqualTypeOf<{
      durability: Pick<StreamDurability<string>, 'snapshot'>
      logger?: InternalLogger
      isOutOfBand?: (chunk: StreamChunk) => boolean
      maxOutOfBandSkip?: number
    }>()
    expectTypeOf(alignToStoredLog<string>).toEqualTypeOf<(chunks: AsyncIterable<StreamChunk>, options: AlignToStoredLogOptions<string>) => AsyncIterable<StreamChunk>>()
  })

  it('JournalReplayDivergedError(index, stored, replayed) and its thread-id subclass', () => {
    expectTypeOf(JournalReplayDivergedError).constructorParameters.toExtend<[number, string, string, ...unknown[]]>()
    expectTypeOf<[number, string, string]>().toExtend<ConstructorParameters<typeof JournalReplayDivergedError>>()
    expectTypeOf<Pick<JournalReplayDivergedError, 'index' | 'stored' | 'replayed'>>().toEqualTypeOf<{ readonly index: number; readonly stored: string; readonly replayed: string }>()
    expectTypeOf(JournalReplayThreadIdMismatchError).constructorParameters.toEqualTypeOf<[index: number, stored: string, replayed: string, storedThreadId: string | undefined, replayedThreadId: string | undefined]>()
    expectTypeOf<JournalReplayThreadIdMismatchError>().toExtend<JournalReplayDivergedError>()
    expectTypeOf<Pick<JournalReplayThreadIdMismatchError, 'storedThreadId' | 'replayedThreadId'>>().toEqualTypeOf<{ readonly storedThreadId: string | undefined; readonly replayedThreadId: string | undefined }>()
  })

  it('chunk identity and run-scoped ids', () => {
    expectTypeOf(chunkFingerprint).toEqualTypeOf<(chunk: StreamChunk) => string>()
    expectTypeOf(chunkFingerprintIgnoringThreadId).toEqualTypeOf<(chunk: StreamChunk) => string>()
    expectTypeOf(chunkThreadId).toEqualTypeOf<(chunk: StreamChunk) => string | undefined>()
    expectTypeOf(createRunScopedIdGen).toEqualTypeOf<(runId: string) => () => string>()
  })
})

describe('durability seam (names in spec 003)', () => {
  it('the capability, its accessors and the two helpers', () => {
    expectTypeOf(getSandboxDurability).toEqualTypeOf<(typeof SandboxDurabilityCapability)[0]>()
    expectTypeOf(provideSandboxDurability).toEqualTypeOf<(typeof SandboxDurabilityCapability)[1]>()
    expectTypeOf(journalOptionsFor).toEqualTypeOf<(durability: SandboxRunDurability | undefined, runId: string) => JournalOptions | undefined>()
    expectTypeOf(alignedIfAttaching<StreamChunk>).toEqualTypeOf<(chunks: AsyncIterable<StreamChunk>, durability: SandboxRunDurability | undefined, logger?: InternalLogger) => AsyncIterable<StreamChunk>>()
    expectTypeOf<SandboxDurabilityLog>().toEqualTypeOf<Omit<StreamDurability<string>, 'read'>>()
    expectTypeOf<SandboxDurabilityOptions['adapter']>().toEqualTypeOf<SandboxDurabilityLog | StreamDurability<string>>()
    expectTypeOf<SandboxDurabilityOptions['attach']>().toEqualTypeOf<boolean | undefined>()
    expectTypeOf<Pick<SandboxRunDurability, 'runs' | 'log' | 'attach'>>().toEqualTypeOf<{ readonly runs: RunStore; readonly log: SandboxDurabilityLog; readonly attach: boolean }>()
  })

  it('resolveDurableRunId(runId, { durable, adapter, fallback }) and resolveDurableThreadId', () => {
    expectTypeOf(resolveDurableRunId).parameters.toEqualTypeOf<[runId: string | undefined, options: { durable: boolean; adapter: string; fallback: () => string }]>()
    expectTypeOf(resolveDurableRunId).returns.toEqualTypeOf<string>()
    expectTypeOf(resolveDurableThreadId).parameters.toEqualTypeOf<[threadId: string | undefined, options: { durable: boolean; adapter: string; fallback: () => string; attaching: boolean }]>()
    expectTypeOf(resolveDurableThreadId).returns.toEqualTypeOf<string>()
    expectTypeOf(DurableRunIdRequiredError).constructorParameters.toExtend<[string, ...unknown[]]>()
    expectTypeOf(DurableThreadIdRequiredError).constructorParameters.toExtend<[string, ...unknown[]]>()
    expectTypeOf(DurableAttachNotSupportedError).constructorParameters.toExtend<[string, ...unknown[]]>()
    expectTypeOf(DurableRunIdRequiredError).instance.toExtend<SandboxError>()
    expectTypeOf(DurableThreadIdRequiredError).instance.toExtend<SandboxError>()
    expectTypeOf(DurableAttachNotSupportedError).instance.toExtend<SandboxError>()
  })
})

describe('run driver and claim (names in spec 003)', () => {
  it("sandboxRunDriver fills core's claim and pipe seams", () => {
    expectTypeOf(sandboxRunDriver<string>).toEqualTypeOf<(options: SandboxRunDriverOptions<string>) => RunDriverOptions>()
    expectTypeOf<SandboxRunDriverOptions>().toExtend<Omit<RunDriverOptions, 'claim' | 'pipe'>>()
    expectTypeOf<SandboxRunDriverOptions['durability']>().toEqualTypeOf<(runId: string) => StreamDurability<string>>()
    expectTypeOf<SandboxRunDriverOptions['fenceQuietMs']>().toEqualTypeOf<number | undefined>()
    expectTypeOf<SandboxRunDriverOptions['drive']>().toEqualTypeOf<(input: { runId: string; threadId: string; signal: AbortSignal }) => AsyncIterable<StreamChunk>>()
  })

  it('the errors a driver can surface, and the quiet window', () => {
    expectTypeOf<typeof DEFAULT_FENCE_QUIET_MS>().toEqualTypeOf<5000>()
    expectTypeOf(RunDriverPipeOutsideClaimError).constructorParameters.toEqualTypeOf<[runId: string]>()
    expectTypeOf<RunDriverPipeOutsideClaimError['runId']>().toEqualTypeOf<string>()
    expectTypeOf(RunClaimNotAcquiredError).instance.toExtend<SandboxError>()
    expectTypeOf(RunClaimLostError).instance.toExtend<SandboxError>()
    expectTypeOf(RunClaimNotAcquiredError).constructorParameters.toExtend<[string, ...unknown[]]>()
    expectTypeOf(RunClaimLostError).constructorParameters.toExtend<[string, ...unknown[]]>()
  })
})
