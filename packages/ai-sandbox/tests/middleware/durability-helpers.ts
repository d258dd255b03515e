/**
 * What the withSandbox durability tests share: sandboxes over the naive host
 * provider (real temp directories, real `sh` processes), a scripted adapter
 * whose first turn starts a real long-lived "agent" process in the sandbox and
 * which can hold a turn open until the test lets it go (or the run aborts), a
 * probe middleware that reads what withSandbox provided, and a drive helper.
 * It asserts nothing itself.
 */
import { existsSync } from 'node:fs'
import {
  chat,
  defineChatMiddleware,
  getDetachableRun,
  getRunDetached,
  type ModelMessage,
  type StreamChunk,
  type TextAdapter,
} from '@tanstack/ai'
import type { Logger } from '@tanstack/ai/adapter-internals'
import { defineSandbox, getSandbox, getSandboxDurability, SandboxCapability, SandboxDurabilityCapability, type SandboxDefinitionInput, type SandboxHandle, type SandboxProvider, type SandboxRunDurability } from '../../src/index.js'
import { naiveHostProvider } from '../testkit/naive-host-provider.js'

/** One turn of the scripted agent: a host tool call (the loop runs another turn) or text. */
export type Turn = 'tool' | 'text'

/** Input of {@link agentAdapter}. */
export interface AgentScript {
  turns: Turn[]
  /** The text turn (1-based) that holds after its first delta until `release()` or the run's abort. */
  holdTurn?: number
  /** A held turn also ends when the agent process dies, with the RUN_ERROR a harness yields for a killed CLI. */
  endsWithAgent?: boolean
}

/** The scripted agent and what it did. */
export interface Agent {
  adapter: TextAdapter<any, any, any, any>
  /** Pids (process groups) of the agent processes it started in the sandbox. */
  pids: number[]
  /** How many times chat() called the adapter. */
  calls: () => number
  /** Lets a held turn finish. */
  release: () => void
}

const c = (value: Record<string, unknown>) => ({ timestamp: Date.now(), ...value }) as unknown as StreamChunk

/** Resolves when `signal` aborts (at once if it already did). */
const aborted = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (!signal) return
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), { once: true })
  })

/** A scripted adapter: turn 1 starts `sleep 60` in the sandbox (the agent the sandbox keeps or loses). */
export function agentAdapter(script: AgentScript): Agent {
  const pids: number[] = []
  let calls = 0
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const adapter = {
    kind: 'text',
    name: 'scripted-agent',
    model: 'scripted',
    requires: [SandboxCapability],
    '~types': undefined as never,
    async *chatStream(options: any) {
      const turn = ++calls
      const handle: SandboxHandle = getSandbox(options.capabilities)
      const signal: AbortSignal | undefined = options.request?.signal
      if (turn === 1) {
        const { pid } = await handle.process.spawn('exec sleep 60')
        if (pid !== undefined) pids.push(pid)
      }
      const runId = options.runId ?? 'run'
      const threadId = options.threadId
      yield c({ type: 'RUN_STARTED', runId, threadId })
      if (script.turns[turn - 1] === 'tool') {
        yield c({ type: 'TOOL_CALL_START', toolCallId: `call-${turn}`, toolCallName: 'get_weather', toolName: 'get_weather' })
        yield c({ type: 'TOOL_CALL_ARGS', toolCallId: `call-${turn}`, delta: '{"city":"Paris"}' })
        yield c({ type: 'TOOL_CALL_END', toolCallId: `call-${turn}`, toolName: 'get_weather', input: { city: 'Paris' } })
        yield c({ type: 'RUN_FINISHED', runId, threadId, finishReason: 'tool_calls' })
        return
      }
      const messageId = `text-${turn}`
      yield c({ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' })
      yield c({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta: 'working' })
      if (script.holdTurn === turn) {
        const agentDied = script.endsWithAgent ? died(pids[0]) : new Promise<void>(() => {})
        await Promise.race([released, aborted(signal), agentDied])
        if (signal?.aborted) return
        if (pids[0] !== undefined && !alive(pids[0])) {
          yield c({ type: 'RUN_ERROR', message: 'the agent was killed', code: 'agent-exit' })
          return
        }
      }
      yield c({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta: ' done' })
      yield c({ type: 'TEXT_MESSAGE_END', messageId })
      yield c({ type: 'RUN_FINISHED', runId, threadId, finishReason: 'stop' })
    },
    async structuredOutput() {
      throw new TypeError('not used')
    },
  } as unknown as TextAdapter<any, any, any, any>
  return { adapter, pids, calls: () => calls, release }
}

/** What the probe saw of one run. */
export interface Probed {
  handle?: SandboxHandle
  durability?: SandboxRunDurability
  detachable?: true
  /** Read in onAbort, after withSandbox's. */
  detached?: true
}

/** A middleware placed after withSandbox that records what it provided. */
export function probe(seen: Probed) {
  return defineChatMiddleware({
    name: 'probe',
    optionalRequires: [SandboxCapability, SandboxDurabilityCapability],
    setup(ctx) {
      seen.handle = getSandbox(ctx, { optional: true })
      const durability = getSandboxDurability(ctx, { optional: true })
      if (durability) seen.durability = durability
      const detachable = getDetachableRun(ctx, { optional: true })
      if (detachable) seen.detachable = detachable
    },
    onAbort(ctx) {
      const detached = getRunDetached(ctx, { optional: true })
      if (detached) seen.detached = detached
    },
  })
}

/** Input of {@link drive}. */
export interface DriveInput {
  adapter: unknown
  middleware: unknown[]
  runId: string
  threadId: string
  abortController?: AbortController
  tools?: unknown[]
  logger?: Logger
  /** Sees each chunk. */
  onChunk?: (chunk: StreamChunk) => void | Promise<void>
}

export const MESSAGES: ModelMessage[] = [{ role: 'user', content: 'Do the work' }]

/** The chat() options of a run. */
export function chatOptions(input: DriveInput) {
  return {
    adapter: input.adapter,
    messages: MESSAGES,
    middleware: input.middleware,
    runId: input.runId,
    threadId: input.threadId,
    ...(input.tools ? { tools: input.tools } : {}),
    ...(input.abortController ? { abortController: input.abortController } : {}),
    ...(input.logger ? { debug: { logger: input.logger } } : {}),
  } as unknown as Parameters<typeof chat>[0]
}

/** One chat() run to its end. Never throws: a rejected stream is `thrown`. */
export async function drive(input: DriveInput): Promise<{ chunks: StreamChunk[]; thrown?: unknown }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of chat(chatOptions(input)) as AsyncIterable<StreamChunk>) {
      chunks.push(chunk)
      await input.onChunk?.(chunk)
    }
    return { chunks }
  } catch (thrown) {
    return { chunks, thrown }
  }
}

/** A logger that keeps the warnings. */
export function warnings(): { logger: Logger; warned: string[] } {
  const warned: string[] = []
  const noop = () => undefined
  return { warned, logger: { debug: noop, info: noop, error: noop, warn: (message) => void warned.push(message) } }
}

/** Resolves once the process group `pid` is gone (polls every 20 ms). */
function died(pid: number | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (pid === undefined) return
    const timer = setInterval(() => {
      if (alive(pid)) return
      clearInterval(timer)
      resolve()
    }, 20)
  })
}

/** Whether a process group is still alive. */
export function alive(pid: number): boolean {
  try {
    process.kill(-pid, 0)
    return true
  } catch {
    return false
  }
}

/** Poll until `check` holds or 5 s passed. */
export async function waitFor(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return check()
}

/** Sandboxes of one test file over the naive host provider, each cleaned up by {@link SandboxLab.cleanup}. */
export interface SandboxLab {
  provider: SandboxProvider
  sandbox: (id: string, extra?: Partial<SandboxDefinitionInput>) => ReturnType<typeof defineSandbox>
  /** Whether the provider still has the sandbox and its directory exists. */
  exists: (handle: SandboxHandle | undefined) => Promise<boolean>
  /** Destroy every sandbox the lab's provider made that is still there (kept ones included); returns the directories still on disk afterwards. */
  cleanup: () => Promise<string[]>
}

/** A lab over `naiveHostProvider(tag)`; `wrap` may decorate the provider (e.g. to slow a step). */
export function sandboxLab(tag: string, wrap: (provider: SandboxProvider) => SandboxProvider = (p) => p): SandboxLab {
  const base = naiveHostProvider(tag)
  const provider = wrap(base)
  const handles: SandboxHandle[] = []
  const tracking: SandboxProvider = {
    ...provider,
    create: async (input) => {
      const handle = await provider.create(input)
      handles.push(handle)
      return handle
    },
  }
  return {
    provider: tracking,
    sandbox: (id, extra = {}) => defineSandbox({ id, provider: tracking, fileEvents: false, ...extra }),
    exists: async (handle) => handle !== undefined && (await base.resume({ id: handle.id })) !== null && existsSync(handle.workspaceRoot),
    cleanup: async () => {
      const made = handles.splice(0)
      for (const handle of made) await base.destroy({ id: handle.id })
      return made.map((handle) => handle.workspaceRoot).filter((dir) => existsSync(dir))
    },
  }
}
