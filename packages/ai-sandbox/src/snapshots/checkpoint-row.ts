/**
 * A checkpoint as one flat database row, for the SQL checkpoint stores
 * (SQLite and PostgreSQL share it through the internal entry): optional
 * fields are NULL when absent and absent again when read, the manifest and
 * the artifacts are JSON text read back exactly as written.
 */
import type { SandboxArtifact, SandboxCheckpoint, SandboxCheckpointKind } from './stores.js'

/** The row's columns, snake_case, in the order the stores create them. */
export interface CheckpointRow {
  thread_id: string
  sequence: number
  checkpoint_id: string
  parent_checkpoint_id: string | null
  kind: string
  run_id: string | null
  label: string | null
  manifest: string
  manifest_sha256: string
  message_count: number
  artifacts: string
  forked_from_thread_id: string | null
  forked_from_checkpoint_id: string | null
  created_at: number
}

const KINDS: ReadonlySet<string> = new Set<SandboxCheckpointKind>(['run', 'save', 'fork'])

/** A checkpoint as its row. */
export function checkpointToRow(c: SandboxCheckpoint): CheckpointRow {
  return {
    thread_id: c.threadId,
    sequence: c.sequence,
    checkpoint_id: c.checkpointId,
    parent_checkpoint_id: c.parentCheckpointId,
    kind: c.kind,
    run_id: c.runId ?? null,
    label: c.label ?? null,
    manifest: JSON.stringify(c.manifest),
    manifest_sha256: c.manifestSha256,
    message_count: c.messageCount,
    artifacts: JSON.stringify(c.artifacts),
    forked_from_thread_id: c.forkedFrom?.threadId ?? null,
    forked_from_checkpoint_id: c.forkedFrom?.checkpointId ?? null,
    created_at: c.createdAt,
  }
}

/**
 * A stored row as the contract's record.
 * @param corrupt - Builds the store's own error for a row holding a kind no version writes (its message is given).
 * @throws What `corrupt` returns, for an unknown kind.
 */
export function checkpointFromRow(row: CheckpointRow, corrupt: (message: string) => Error): SandboxCheckpoint {
  if (!KINDS.has(row.kind)) throw corrupt(`Checkpoint ${row.checkpoint_id} of thread ${JSON.stringify(row.thread_id)} has kind ${JSON.stringify(row.kind)}, which no version of this store writes.`)
  const checkpoint: { -readonly [K in keyof SandboxCheckpoint]: SandboxCheckpoint[K] } = {
    threadId: row.thread_id,
    checkpointId: row.checkpoint_id,
    sequence: row.sequence,
    parentCheckpointId: row.parent_checkpoint_id,
    kind: row.kind as SandboxCheckpointKind,
    manifest: JSON.parse(row.manifest) as SandboxCheckpoint['manifest'],
    manifestSha256: row.manifest_sha256,
    messageCount: row.message_count,
    artifacts: JSON.parse(row.artifacts) as SandboxArtifact[],
    createdAt: row.created_at,
  }
  if (row.run_id !== null) checkpoint.runId = row.run_id
  if (row.label !== null) checkpoint.label = row.label
  if (row.forked_from_thread_id !== null && row.forked_from_checkpoint_id !== null) checkpoint.forkedFrom = { threadId: row.forked_from_thread_id, checkpointId: row.forked_from_checkpoint_id }
  return checkpoint
}
