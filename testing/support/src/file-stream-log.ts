/**
 * A file-backed `StreamDurability` for tests that kill the process writing a
 * run's event log: one JSON line per chunk, fsynced before `append` returns,
 * so whatever a host delivered is still there after a SIGKILL, and any
 * process can read it. Offsets are 0-based line numbers as strings. `close`
 * appends a marker line that ends `read`; `snapshot` never shows it. A torn
 * last line (a writer killed inside `write`) is invisible to readers and cut
 * off by the next writer. Single writer at a time, like a run's producer.
 */
import { open, readFile, truncate } from 'node:fs/promises'
import type { StreamChunk, StreamDurability } from '@tanstack/ai'

/** The line `close()` appends; no chunk has this key. */
const CLOSED_LINE = '{"__closed":true}'

/** Options of {@link fileStreamLog}. */
export interface FileStreamLogOptions {
  /** Pause between two looks at the file while `read` waits for more, in ms. Default 25. */
  pollMs?: number
}

/** What {@link readLogFile} finds in a log file. */
export interface LogFileContents {
  /** The stored chunks, in append order (offset = index). */
  chunks: StreamChunk[]
  /** Whether `close()` was called. */
  closed: boolean
  /** Bytes of complete lines; anything past it is a torn line. */
  completeBytes: number
}

/**
 * Parse a log file; a missing file is an empty, open log.
 * @param file - The log's path.
 */
export async function readLogFile(file: string): Promise<LogFileContents> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { chunks: [], closed: false, completeBytes: 0 }
    throw error
  }
  const complete = text.slice(0, text.lastIndexOf('\n') + 1)
  const chunks: StreamChunk[] = []
  let closed = false
  for (const line of complete.split('\n')) {
    if (line === '') continue
    if (line === CLOSED_LINE) closed = true
    else chunks.push(JSON.parse(line) as StreamChunk)
  }
  return { chunks, closed, completeBytes: Buffer.byteLength(complete) }
}

/**
 * A `StreamDurability` over `file` (created on the first append).
 *
 * @param file - Absolute path of the log; the caller removes it.
 * @param options - {@link FileStreamLogOptions}.
 * @returns The log; `resumeFrom()` is always `null` (a producer, or a from-start reader).
 * @example
 * ```ts
 * const log = fileStreamLog(join(dir, 'run.log'))
 * for await (const chunk of chat({ ... })) await log.append([chunk])
 * ```
 */
export function fileStreamLog(file: string, options: FileStreamLogOptions = {}): StreamDurability {
  const pollMs = options.pollMs ?? 25
  /** Lines stored so far, read from the file by this process's first append. */
  let count: number | undefined
  let queue: Promise<unknown> = Promise.resolve()

  const write = async (text: string): Promise<void> => {
    const handle = await open(file, 'a')
    try {
      await handle.write(text)
      await handle.sync()
    } finally {
      await handle.close()
    }
  }

  const append = async (chunks: StreamChunk[]): Promise<string[]> => {
    if (count === undefined) {
      const contents = await readLogFile(file)
      if (contents.closed) throw new Error(`fileStreamLog: ${file} was closed; a closed log takes no more chunks`)
      await truncate(file, contents.completeBytes).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error
      })
      count = contents.chunks.length
    }
    const first = count
    await write(chunks.map((chunk) => `${JSON.stringify(chunk)}\n`).join(''))
    count += chunks.length
    return chunks.map((_, i) => String(first + i))
  }

  return {
    resumeFrom: () => null,
    // Appends run one after another, so offsets follow the file's line order.
    append: (chunks) => {
      const next = queue.then(() => append(chunks))
      queue = next.catch(() => undefined)
      return next
    },
    async *read(offset, signal) {
      if (!/^-?\d+$/.test(offset)) throw new TypeError(`fileStreamLog.read: offset ${JSON.stringify(offset)} is not one this log minted (a line number, or "-1" for the start)`)
      let next = Number(offset) + 1
      for (;;) {
        if (signal?.aborted) return
        const contents = await readLogFile(file)
        for (; next < contents.chunks.length; next++) yield { offset: String(next), chunk: contents.chunks[next]! }
        if (contents.closed) return
        await new Promise((resolve) => setTimeout(resolve, pollMs))
      }
    },
    close: async () => {
      await queue
      await write(`${CLOSED_LINE}\n`)
    },
    snapshot: async () => (await readLogFile(file)).chunks.map((chunk, i) => ({ offset: String(i), chunk })),
  }
}
