/**
 * An in-process ACP agent behind a `SpawnedProcess` look-alike: the adapter's
 * transport writes to its "stdin" and reads its "stdout" as it would a real
 * CLI's, while the SDK's agent side answers. For session-driving tests that
 * need no process at all.
 */
import { ndJsonStream, type AgentApp } from '@agentclientprotocol/sdk'
import type { SpawnedProcess } from '@tanstack/ai-sandbox'

/** Connect `app` and return the process-shaped end the adapter talks to. */
export function inMemoryAgentProcess(app: AgentApp): SpawnedProcess & { closed: Promise<void> } {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>()
  const fromAgent = new TransformStream<Uint8Array, Uint8Array>()
  const connection = app.connect(ndJsonStream(fromAgent.writable, toAgent.readable))
  const writer = toAgent.writable.getWriter()
  const decoder = new TextDecoder()
  const stdout = (async function* () {
    for await (const bytes of fromAgent.readable as unknown as AsyncIterable<Uint8Array>) yield decoder.decode(bytes, { stream: true })
  })()
  return {
    stdout,
    stderr: (async function* () {})(),
    stdin: {
      write: (data) => writer.write(typeof data === 'string' ? new TextEncoder().encode(data) : data),
      end: () => writer.close().catch(() => undefined),
    },
    wait: async () => {
      await connection.closed
      return { exitCode: 0 }
    },
    kill: async () => connection.close(),
    closed: connection.closed,
  }
}
