/**
 * A minimal harness-style text adapter: it requires a sandbox and runs the
 * latest user message as a shell command inside it, streaming stdout back as
 * the assistant's text. It shows the adapter side of the contract that the
 * real harness adapters (Claude Code, Codex, ...) follow.
 */
import { EventType, type AdapterYieldChunk, type StreamChunk, type TextAdapter, type TextOptions } from '@tanstack/ai'
import { createHarnessSecretRedactor, getSandbox, SandboxCapability } from '@tanstack/ai-sandbox'

type ShellAdapter = TextAdapter<'sh', Record<string, never>, readonly ['text'], any>

/** Text of the latest user message. */
function latestUserText(options: TextOptions<Record<string, never>>): string {
  const last = [...options.messages].reverse().find((message) => message.role === 'user')
  if (!last) return ''
  if (typeof last.content === 'string') return last.content
  return (last.content ?? []).map((part) => (part.type === 'text' ? part.content : '')).join('')
}

/**
 * Create the shell adapter. Each run executes one command in the sandbox's
 * workspace; a non-zero exit becomes `RUN_ERROR` with the tail of stderr,
 * with the workspace's secret values replaced by `[secret NAME]`.
 */
export function shellText(): ShellAdapter {
  return {
    kind: 'text',
    name: 'shell',
    model: 'sh',
    requires: [SandboxCapability],
    '~types': undefined as unknown as ShellAdapter['~types'],
    async *chatStream(options): AsyncIterable<AdapterYieldChunk> {
      const handle = getSandbox(options.capabilities!)
      const runId = options.runId ?? `shell-${Date.now()}`
      const threadId = options.threadId ?? runId
      const messageId = `${runId}-msg`
      yield { type: EventType.RUN_STARTED, runId, threadId, timestamp: Date.now() } as StreamChunk
      const signal = (options.request as RequestInit | undefined)?.signal ?? undefined
      const child = await handle.process.spawn(latestUserText(options), signal ? { signal } : {})
      const stderr: string[] = []
      const drainErr = (async () => {
        for await (const chunk of child.stderr) stderr.push(chunk)
      })()
      yield { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant', timestamp: Date.now() } as StreamChunk
      for await (const delta of child.stdout) {
        yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta, timestamp: Date.now() } as StreamChunk
      }
      yield { type: EventType.TEXT_MESSAGE_END, messageId, timestamp: Date.now() } as StreamChunk
      await drainErr
      const exit = await child.wait()
      if (exit.exitCode !== 0) {
        // stderr can echo a secret the command was given; errors travel to the client, so redact them.
        const redact = createHarnessSecretRedactor({ capabilities: options.capabilities })
        const message = redact(`command exited with code ${exit.exitCode}: ${stderr.join('').slice(-2000)}`)
        yield { type: EventType.RUN_ERROR, runId, threadId, message, error: { message }, timestamp: Date.now() } as AdapterYieldChunk
        return
      }
      yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: Date.now() } as AdapterYieldChunk
    },
    async structuredOutput() {
      throw new TypeError('The shell adapter has no structured output; call chat() without outputSchema.')
    },
  }
}
