/**
 * A run log's chunks as the JSON text the SQL stores keep (SQLite,
 * PostgreSQL): each chunk encoded before anything of its batch is written, so
 * a chunk JSON cannot hold (a BigInt, a cycle, a `toJSON` that throws) refuses
 * the whole batch with the store's own typed error, naming the chunk, instead
 * of failing mid-write with a bare `TypeError` that reads like a database fault.
 */
import type { StreamChunk } from '@tanstack/ai'

/**
 * `JSON.stringify` of each chunk, or `refuse`'s error for the first one that
 * cannot be encoded as a JSON object.
 *
 * @param chunks - The batch, in order.
 * @param refuse - Builds the store's error from a message that names the chunk's index and type, and the encoder's error as `cause`.
 * @returns One JSON text per chunk.
 * @throws What `refuse` returns, for the first chunk that is not encodable.
 * @example
 * ```ts
 * const texts = encodeStreamChunks(chunks, (message, cause) => new SqliteStreamError('unserializable-chunk', runId, message, { cause }))
 * ```
 */
export function encodeStreamChunks(chunks: readonly StreamChunk[], refuse: (message: string, cause: unknown) => Error): string[] {
  return chunks.map((chunk, index) => {
    let text: string | undefined
    let cause: unknown
    try {
      text = JSON.stringify(chunk)
    } catch (error) {
      cause = error
    }
    if (text === undefined || !text.startsWith('{')) {
      const type = typeof (chunk as { type?: unknown } | null)?.type === 'string' ? ` (${(chunk as { type: string }).type})` : ''
      const why = cause instanceof Error ? (cause.message.split('\n')[0] ?? '').trim() : 'it is not an object'
      throw refuse(`Chunk ${index} of the batch${type} cannot be stored as JSON: ${why}. A run log keeps what JSON can hold; turn BigInt values into strings or numbers and drop cycles before the chunk is emitted. Nothing of the batch was stored.`, cause)
    }
    return text
  })
}
