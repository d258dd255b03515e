/**
 * The run driver's append path: chunks go to the log in order, one `append`
 * in flight at a time, coalescing what arrives meanwhile. It must never
 * retry: a failed batch may be partly stored, so a retry could store a chunk
 * twice. Invariant: the first failure latches and nothing is appended after it.
 */
import type { StreamChunk, StreamDurability } from '@tanstack/ai'
import type { Reporter } from './run-report.js'

/** Most chunks in one `append` (32, core's default durability batch). Chunks that arrive while an append is in flight are coalesced up to this. */
export const MAX_APPEND_BATCH = 32

/**
 * Appends chunks in order, one `append` in flight at a time, coalescing what
 * arrives meanwhile. The first failure latches: nothing is appended after it
 * (the failed batch may be partly stored, so neither retrying nor skipping
 * ahead keeps exactly-once).
 */
export class LogWriter {
  private queue: StreamChunk[] = []
  private inflight: Promise<void> | undefined
  /** The first failed `append`, once one failed. */
  failure: { error: unknown } | undefined

  constructor(
    private readonly log: Pick<StreamDurability<string>, 'append'>,
    private readonly report: Reporter,
  ) {}

  /** Chunks queued and not yet handed to `append`. */
  get backlog(): number {
    return this.queue.length
  }

  push(chunk: StreamChunk): void {
    if (this.failure) return
    this.queue.push(chunk)
    this.inflight ??= this.flush()
  }

  /** Resolves once every queued chunk was appended (or dropped after a failure). Never rejects. */
  async settled(): Promise<void> {
    while (this.inflight) await this.inflight
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0 && !this.failure) {
        const batch = this.queue.splice(0, MAX_APPEND_BATCH)
        try {
          const offsets = await this.log.append(batch)
          if (!Array.isArray(offsets) || offsets.length !== batch.length) {
            this.report.error(`the run log returned ${Array.isArray(offsets) ? offsets.length : 'no'} offsets for ${batch.length} appended chunks`)
          }
        } catch (error) {
          this.failure = { error }
          this.report.error(`appending ${batch.length} chunk(s) to the run log failed; the run ends here (${this.queue.length} queued chunk(s) dropped)`, error)
          this.queue = []
        }
      }
    } finally {
      this.inflight = undefined
    }
  }
}
