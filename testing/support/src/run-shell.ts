/**
 * One chat() run with the example's shell adapter (the latest user message
 * runs as a shell command in the sandbox), collecting what a user would see:
 * the chunks, the assistant's text and a RUN_ERROR's message. It starts no
 * sandbox itself; the caller's middleware (withSandbox) owns that.
 */
import { chat, type AnyChatMiddleware, type StreamChunk } from '@tanstack/ai'
import { shellText } from '@example/local-process-basic/shell-adapter'

/** What one run produced. */
export interface ChatOutcome {
  text: string
  chunks: StreamChunk[]
  error?: string
}

/** Run `command` through chat() with the given middleware. */
export async function runShell(input: {
  command: string
  threadId: string
  middleware: AnyChatMiddleware[]
  abortController?: AbortController
  context?: unknown
  debug?: Parameters<typeof chat>[0]['debug']
  onChunk?: (chunk: StreamChunk) => void
}): Promise<ChatOutcome> {
  const outcome: ChatOutcome = { text: '', chunks: [] }
  const stream = chat({
    adapter: shellText(),
    threadId: input.threadId,
    messages: [{ role: 'user', content: input.command }],
    middleware: input.middleware,
    ...(input.abortController ? { abortController: input.abortController } : {}),
    ...(input.context !== undefined ? { context: input.context } : {}),
    ...(input.debug !== undefined ? { debug: input.debug } : {}),
  } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  for await (const chunk of stream) {
    outcome.chunks.push(chunk)
    input.onChunk?.(chunk)
    if (chunk.type === 'TEXT_MESSAGE_CONTENT') outcome.text += chunk.delta
    if (chunk.type === 'RUN_ERROR') outcome.error = chunk.message
  }
  return outcome
}
