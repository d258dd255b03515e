/**
 * What one `withSandbox` run holds between its setup and its terminal hook
 * (`RunState`), what every phase of one middleware instance shares
 * (`WithSandboxScope`), and the teardown all phases use: ending the run's
 * liveness and destroying its sandbox (`destroyRun`), with the uses of a
 * sandbox key that runs detached in this process still hold.
 */
import type { StreamChunk } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { LockStore } from '@tanstack/ai/locks'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import type { SandboxInstanceStore } from '../definition/instance-store.js'
import { endJournaledRun } from '../journal/run-end.js'
import type { DurableRunFiles } from '../journal/run-files.js'
import type { ChunkStreamScrubber, SecretScrubber } from '../secrets/secret-scrubber.js'
import type { RunFileEvents } from '../watch/run-file-events.js'
import type { ResolvedDurability, RunOwner } from './durability.js'
import type { SandboxSnapshots } from '../snapshots/sandbox-snapshots.js'
import type { RunChunks } from './run-chunks.js'
import type { StartedRunLease } from './run-lease.js'
import type { RunSnapshots } from './run-snapshots.js'
import type { ToolHistory } from './tool-history.js'

/** What every phase of one `withSandbox(sandbox, options)` shares. */
export interface WithSandboxScope {
  readonly sandbox: SandboxDefinition
  /** The parsed options' stores (`durability` is resolved into {@link WithSandboxScope.durable}). */
  readonly parsed: { readonly instances?: SandboxInstanceStore | undefined; readonly locks?: LockStore | undefined; readonly snapshots?: SandboxSnapshots | undefined }
  readonly durable: ResolvedDurability | undefined
  /** Each live run's state, by its middleware context. */
  readonly runs: WeakMap<object, RunState>
  /** A run's detach write from the disconnect notification, which a terminal hook awaits before clearing it. */
  readonly noticed: WeakMap<object, Promise<void>>
  /** The in-memory-lock warning went out (once per middleware instance). */
  warnedLocks: boolean
}

/** What one run holds between setup and its terminal hook. */
/** What one run holds between setup and its terminal hook. */
export interface RunState {
  readonly key: string
  readonly handle: SandboxHandle
  readonly instances: SandboxInstanceStore
  readonly logger: InternalLogger | undefined
  /** A sweep can find this run as an orphan if its detach is never recorded: the run store lists undetached runs and the lock store answers isHeld. */
  readonly orphansFindable: boolean
  /** Destroy after the run whatever the lifecycle says (no threadId was given). */
  readonly destroyAfterRun: boolean
  /** The harness's tool calls seen in the model stream. */
  readonly history: ToolHistory
  /** The workspace's secrets, read at setup: every chunk, diff and log line of the run passes it. */
  readonly scrubber: SecretScrubber
  /** The run's chunks as one stream for the scrubber (deltas are scrubbed across chunk boundaries). */
  readonly chunkScrub: ChunkStreamScrubber
  /** Lets the next run of this sandbox key start (runs of one thread are serialized). Idempotent. */
  readonly releaseTurn: () => void
  /** The run's id (`ctx.runId`), the key of its record. */
  readonly runId: string
  /** Set on a durable run. */
  readonly durable: ResolvedDurability | undefined
  /** A durable run's journal, baseline and process tag (`runFilesOf`), derived once at setup. */
  readonly journalFiles: DurableRunFiles | undefined
  /** A durable run's owner (this host, as starter or as claimed driver): its teardown touches the run only while it still owns it. */
  readonly owner: RunOwner | undefined
  /** A durable run's abort verdict, decided once (the signal listener and `onAbort` share it): true for a cancel. */
  verdict?: Promise<boolean>
  /** The run's file events (absent with `fileEvents: false` or when they failed to start). */
  files?: RunFileEvents
  /** `file.changed` values queued as `sandbox.file.diff` chunks, renamed as they pass. */
  readonly fileDiffs: Set<object>
  /** The run's `sandbox.flush` ticks (`SandboxRunChunksCapability`). */
  readonly chunks: RunChunks
  /** Set by the first terminal hook: from then on an abort destroys nothing. */
  ended?: boolean
  /** The adapter's final RUN_FINISHED passed (not a tool-calling turn's): the agent is done, so an abort from now on (the client may abort the moment it sees the end) is a late one. */
  agentFinished?: boolean
  /** Removes the setup's abort listener. */
  forgetAbort?: () => void
  /** Stops a durable run's poll of its record for a remote cancel. */
  forgetCancel?: () => void
  /** The driver lease of a durable run this host started (not an attach), released after its terminal hook. */
  readonly lease: StartedRunLease | undefined
  /** The last RUN_FINISHED / RUN_ERROR of the model stream: how a started durable run's record is settled. */
  lastTerminal?: StreamChunk
  destroying?: Promise<void>
  /** The run's part in portable snapshots (`withSandbox({ snapshots })`, a run with a thread id). */
  readonly snapshots: RunSnapshots | undefined
  /** A failed checkpoint of a finished run, thrown by its terminal hook after the lifecycle ran. */
  snapshotError?: unknown
}

/** What setup found before the sandbox is ensured. */
/** What setup found before the sandbox is ensured. */
export interface RunSetup {
  readonly key: string
  readonly logger: InternalLogger | undefined
  readonly instances: SandboxInstanceStore
  readonly locks: LockStore | undefined
  readonly ensureCtx: { threadId: string; runId: string; tenant?: string }
  readonly scrubber: SecretScrubber
  readonly releaseTurn: () => void
  readonly durable: ResolvedDurability | undefined
  readonly owner: RunOwner | undefined
  readonly lease: StartedRunLease | undefined
  readonly snapshots: RunSnapshots | undefined
}

/** The run reached a terminal hook: it is no longer live, so a later abort must not destroy the sandbox. */
export function endRun(state: RunState): void {
  state.ended = true
  state.forgetAbort?.()
  state.forgetCancel?.()
  state.chunks.close()
}

export function destroyRun(sandbox: SandboxDefinition, state: RunState, why: string): Promise<void> {
  state.destroying ??= (async () => {
    state.forgetCancel?.()
    // A host that lost the run to a successor destroys nothing of it: the successor's agent runs in that sandbox, and
    // diffs against the run's file baseline.
    if (state.owner && !(await state.owner.stillOwned())) {
      await state.files?.stop({ flush: false, keepBaseline: true })
      return void state.logger?.sandbox(`withSandbox: run ${state.runId} is driven by another host now; leaving sandbox ${state.handle.id} to it (${why})`)
    }
    await state.files?.stop({ flush: false })
    // A durable run's agent may have been started by another host, and its journal may live outside the sandbox (local-process).
    if (state.durable) await endJournaledRun(state.handle, state.journalFiles ?? { runId: state.runId, dir: state.durable.run.journalDir }, (message) => state.logger?.sandbox(`withSandbox: ${message}`))
    state.logger?.sandbox(`destroying sandbox ${state.handle.id} (${why})`)
    takeDetachedUses(sandbox, state.key) // destroy forgets every use of the key
    try {
      await sandbox.destroy({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
    } finally {
      // The record may already be gone (another run destroyed it); make sure the handle is too.
      await state.handle.destroy()
    }
  })()
  return state.destroying
}

/**
 * Uses of a sandbox key held by runs that detached in this process, per
 * definition: a detached agent still uses its sandbox, so its use is not
 * released (no `keepAlive` timer runs under it) until an attaching run of the
 * key ends here, or the sandbox is destroyed.
 */
const detachedUses = new WeakMap<SandboxDefinition, Map<string, number>>()

export function holdDetachedUse(sandbox: SandboxDefinition, key: string): void {
  let uses = detachedUses.get(sandbox)
  if (!uses) detachedUses.set(sandbox, (uses = new Map()))
  uses.set(key, (uses.get(key) ?? 0) + 1)
}

/** The detached uses of `key`, forgotten. */
export function takeDetachedUses(sandbox: SandboxDefinition, key: string): number {
  const uses = detachedUses.get(sandbox)
  const n = uses?.get(key) ?? 0
  uses?.delete(key)
  return n
}
