/**
 * The ACP transport over a sandbox process: the CLI's stdout/stdin become the
 * SDK's `ndJsonStream`, and every JSON-RPC message, either way, goes to
 * `onMessage` in wire order. It owns no process lifecycle. Invariant: memory is
 * bounded; a stdout line over `maxLineBytes` (32 MiB) errors the stream.
 * Design notes: docs/design/harness-adapters.md
 */
import { ndJsonStream, type AnyMessage, type Stream } from '@agentclientprotocol/sdk'
import { DEFAULT_MAX_LINE_BYTES, LineTooLongError, toLines, type SpawnedProcess } from '@tanstack/ai-sandbox'
import type { AcpMessage, GrokAcpTranscriptEntry } from './cli-events.js'

/** Options of {@link acpStreamOverProcess}. */
export interface AcpProcessStreamOptions {
  /** Called with each message on the wire, in order: `agent` for what the CLI wrote, `client` for what the SDK sends. */
  onMessage: (entry: GrokAcpTranscriptEntry) => void
  /** Called with each non-empty stdout line that is not a JSON object. */
  onNonJsonLine?: (line: string) => void
  /** The longest stdout line read, in UTF-8 bytes. Default `DEFAULT_MAX_LINE_BYTES` (32 MiB). */
  maxLineBytes?: number
  /** Called once when a stdout line passed `maxLineBytes` (the stream then errors with it); stop the process here. */
  onLineTooLong?: (error: LineTooLongError) => void
}

/**
 * Connect the SDK to a spawned `grok agent … stdio` process.
 * @param child - A process whose stdin is writable (capability `writableStdin`).
 * @returns An ACP `Stream` for `client().connectWith(stream, …)`.
 * @example
 * ```ts
 * const stream = acpStreamOverProcess(child, { onMessage: (e) => translator.push(e) })
 * await client().connectWith(stream, async (ctx) => { await ctx.request(methods.agent.initialize, init) })
 * ```
 */
export function acpStreamOverProcess(child: SpawnedProcess, options: AcpProcessStreamOptions): Stream {
  const wire = ndJsonStream(stdinWritable(child), jsonLinesReadable(child.stdout, options.onNonJsonLine, options))
  const tap = (from: GrokAcpTranscriptEntry['from']) =>
    new TransformStream<AnyMessage, AnyMessage>({
      transform(message, controller) {
        options.onMessage({ from, message: message as AcpMessage })
        controller.enqueue(message)
      },
    })
  const outgoing = tap('client')
  // The SDK's own write errors surface on its requests; this pipe only forwards.
  void outgoing.readable.pipeTo(wire.writable).catch(() => undefined)
  return { readable: wire.readable.pipeThrough(tap('agent')), writable: outgoing.writable }
}

/**
 * The process's stdout as bytes, one JSON object per line; other lines go to `onNonJsonLine`.
 * A line longer than `limits.maxLineBytes` (default `DEFAULT_MAX_LINE_BYTES`) errors the stream with `LineTooLongError`.
 */
export function jsonLinesReadable(
  stdout: AsyncIterable<string | Uint8Array>,
  onNonJsonLine?: (line: string) => void,
  limits: Pick<AcpProcessStreamOptions, 'maxLineBytes' | 'onLineTooLong'> = {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let lines: AsyncIterator<string> | undefined
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      lines ??= toLines(stdout, { maxLineBytes: limits.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES })[Symbol.asyncIterator]()
      for (;;) {
        let next: IteratorResult<string>
        try {
          next = await lines.next()
        } catch (error) {
          if (LineTooLongError.isInstance(error)) limits.onLineTooLong?.(error)
          throw error
        }
        if (next.done) {
          controller.close()
          return
        }
        const line = next.value.trim()
        if (line === '') continue
        if (isJsonObject(line)) {
          controller.enqueue(encoder.encode(`${line}\n`))
          return
        }
        onNonJsonLine?.(line)
      }
    },
    async cancel() {
      await lines?.return?.()
    },
  })
}

/** The process's stdin as a byte sink; closing it sends EOF. */
function stdinWritable(child: SpawnedProcess): WritableStream<Uint8Array> {
  let ended = false
  const end = async () => {
    if (ended) return
    ended = true
    await child.stdin.end().catch(() => undefined) // already gone: the process closed its stdin or exited
  }
  return new WritableStream<Uint8Array>({
    write: (bytes) => child.stdin.write(bytes),
    close: end,
    abort: end,
  })
}

function isJsonObject(line: string): boolean {
  if (!line.startsWith('{')) return false
  try {
    const value: unknown = JSON.parse(line)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
  } catch {
    return false
  }
}
