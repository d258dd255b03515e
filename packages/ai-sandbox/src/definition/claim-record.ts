/**
 * Recording a sandbox `ensure` just made when another process may have made
 * one for the same key at once: whoever finds another sandbox recorded uses
 * that one and destroys its own. Invariant: the handle returned is the one the
 * store records, except in the window a plain get/upsert store cannot close
 * (see docs/lifecycle.md). Design notes: docs/design/definition.md
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxProvider } from '../contracts/provider.js'
import type { SandboxInstanceRecord, SandboxInstanceStore } from './instance-store.js'

/** Inputs of {@link claimRecord}. */
export interface ClaimRecordInput {
  provider: SandboxProvider
  /** The sandbox this `ensure` created or restored (bootstrapped, not yet recorded). */
  made: SandboxHandle
  /** Its record, to write. */
  record: SandboxInstanceRecord
  instances: SandboxInstanceStore
  /** A sandbox id `ensure` already found gone (the stale record it started from): not worth a resume. */
  goneId?: string
  logger?: InternalLogger
}

/**
 * Write `record` unless another sandbox is recorded for its key, then read it
 * back. When the store names another sandbox that still resumes, destroy
 * `made` and return that one; otherwise return `made`, recorded.
 * @returns The raw handle the run should use.
 */
export async function claimRecord(input: ClaimRecordInput): Promise<SandboxHandle> {
  const { made, record, instances } = input
  const before = await instances.get(record.key)
  const earlier = await adoptable(input, before)
  if (earlier) return yieldTo(input, earlier)
  await instances.upsert(record)
  const after = await instances.get(record.key)
  const later = await adoptable(input, after)
  if (later) return yieldTo(input, later)
  // The other write named a sandbox that is gone already: ours stands, so record it again.
  if (after && after.providerSandboxId !== made.id) await instances.upsert(record)
  return made
}

/** The live sandbox another `ensure` recorded for the key, or `null`. */
async function adoptable(input: ClaimRecordInput, stored: SandboxInstanceRecord | null): Promise<SandboxHandle | null> {
  if (!stored || stored.providerSandboxId === input.made.id || stored.providerSandboxId === input.goneId) return null
  if (stored.provider !== input.provider.name) return null
  return input.provider.resume({ id: stored.providerSandboxId })
}

/** Use the other process's sandbox; destroy the one this `ensure` made. */
async function yieldTo(input: ClaimRecordInput, winner: SandboxHandle): Promise<SandboxHandle> {
  const { made, record, logger } = input
  logger?.warn(
    `sandbox ${record.key}: another process created a sandbox for this key at the same time (no lock shared between them); ` +
      `this run uses the recorded one (${winner.id}) and destroys its own (${made.id}), so setup ran twice. ` +
      'Across processes, share a distributed lock: withLocks(...) before withSandbox, or withSandbox(sandbox, { locks }).',
  )
  await made.destroy().catch((error: unknown) => logger?.errors(`destroying the sandbox ${made.id} that lost the race failed`, { error }))
  return winner
}
