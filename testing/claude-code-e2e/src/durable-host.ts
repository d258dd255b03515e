/**
 * What the journal takeover suite and its host process share: how a host
 * reaches the run's sandbox (the same provider configuration on both sides,
 * then `resume` by id), the middleware that makes a `chat()` run durable
 * (`withSandbox` does not provide durability yet, so this one provides the
 * sandbox handle and `provideSandboxDurability` itself), and one durable
 * `chat()` run that appends every chunk to the run's event log before it
 * counts as delivered. Used by `journal-host.ts` (host A, a separate process)
 * and by the test itself (host B).
 */
import { chat, defineChatMiddleware, InMemoryRunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { provideSandbox, provideSandboxDurability, SandboxCapability, SandboxDurabilityCapability, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { daytonaSandbox } from '@tanstack/ai-sandbox-daytona'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'

/** How to build the run's provider; identical in every host so `resume(id)` finds the sandbox. */
export type ProviderConfig =
  | { kind: 'local-process'; root: string }
  | { kind: 'docker'; image: string; labels: Record<string, string>; mounts: { source: string; target: string; readOnly: boolean }[] }
  | { kind: 'daytona'; apiUrl: string; apiKey: string }

/** The provider a {@link ProviderConfig} describes. */
export function providerFor(config: ProviderConfig): SandboxProvider {
  if (config.kind === 'local-process') return localProcessSandbox({ root: config.root })
  if (config.kind === 'daytona') return daytonaSandbox({ apiUrl: config.apiUrl, apiKey: config.apiKey, killGraceMs: 500 })
  return dockerSandbox({ image: config.image, labels: config.labels, killGraceMs: 500, mounts: config.mounts })
}

/** One durable run as a host starts it (host A) or attaches to it (host B). */
export interface DurableRunInput {
  handle: SandboxHandle
  /** The run's event log (the same file for every host). */
  log: StreamDurability
  runId: string
  threadId: string
  prompt: string
  claude: ClaudeCodeOptions
  attach: boolean
  /** Called with each chunk once the log holds it. */
  onChunk?: (chunk: StreamChunk) => void
}

/**
 * The middleware of a durable run over an existing sandbox: provides the
 * handle and the run's durability (a fresh in-memory run store: the journal
 * exists whenever this suite attaches, so the preflight never asks it).
 */
export function durableSandbox(handle: SandboxHandle, log: StreamDurability, attach: boolean): unknown {
  const runs = new InMemoryRunStore()
  return defineChatMiddleware({
    name: 'durable-sandbox-test',
    provides: [SandboxCapability, SandboxDurabilityCapability],
    setup(ctx) {
      provideSandbox(ctx, handle)
      provideSandboxDurability(ctx, { runs, log, attach })
    },
  })
}

/**
 * Run `chat()` durably and append every chunk to the log before it counts as
 * delivered (what a durable transport does).
 * @returns The chunks this host delivered, in order.
 */
export async function runDurably(input: DurableRunInput): Promise<StreamChunk[]> {
  const delivered: StreamChunk[] = []
  const stream = chat({
    adapter: claudeCodeText('sonnet', input.claude),
    runId: input.runId,
    threadId: input.threadId,
    messages: [{ role: 'user', content: input.prompt }],
    middleware: [durableSandbox(input.handle, input.log, input.attach)],
  } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  for await (const chunk of stream) {
    await input.log.append([chunk])
    delivered.push(chunk)
    input.onChunk?.(chunk)
  }
  return delivered
}
