/**
 * Helpers shared by the harness end-to-end suites (Claude Code, Codex,
 * OpenCode, Grok Build): drive one chat() run through withSandbox and collect
 * what a user would see, spy on (and reshape) a provider's handles, and find
 * processes a run may have left behind. They never start a CLI or a model
 * themselves; the test owns those. Each suite's `tests/helpers/run-<cli>.ts`
 * binds `runHarness` to its adapter's session-id event.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { chat, type AnyChatMiddleware, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'

/** What one run produced. */
export interface Outcome {
  chunks: StreamChunk[]
  text: string
  error?: { message: string; code?: string }
  /** From the adapter's `<harness>.session-id` CUSTOM event. */
  sessionId?: string
}

/** Input of one run; `adapter` is the harness adapter under test. */
export interface HarnessRunInput<TAdapter> {
  adapter: TAdapter
  sandbox: SandboxDefinition
  threadId: string
  messages: ModelMessage[]
  modelOptions?: Record<string, unknown>
  abortController?: AbortController
  onChunk?: (chunk: StreamChunk) => void
  debug?: unknown
  tools?: unknown[]
  systemPrompts?: string[]
  /** The run's middleware; default `[withSandbox(sandbox)]`. */
  middleware?: AnyChatMiddleware[]
}

/** One chat() run; `sessionEvent` names the CUSTOM chunk that carries the session id. */
export async function runHarness<TAdapter>(input: HarnessRunInput<TAdapter> & { sessionEvent: string }): Promise<Outcome> {
  const outcome: Outcome = { chunks: [], text: '' }
  const stream = chat({
    adapter: input.adapter,
    threadId: input.threadId,
    messages: input.messages,
    middleware: input.middleware ?? [withSandbox(input.sandbox)],
    ...(input.modelOptions ? { modelOptions: input.modelOptions } : {}),
    ...(input.abortController ? { abortController: input.abortController } : {}),
    ...(input.debug !== undefined ? { debug: input.debug } : {}),
    ...(input.tools ? { tools: input.tools } : {}),
    ...(input.systemPrompts ? { systemPrompts: input.systemPrompts } : {}),
  } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  for await (const chunk of stream) {
    outcome.chunks.push(chunk)
    input.onChunk?.(chunk)
    if (chunk.type === 'TEXT_MESSAGE_CONTENT') outcome.text += chunk.delta
    if (chunk.type === 'RUN_ERROR') outcome.error = { message: chunk.message, ...(chunk.code ? { code: chunk.code } : {}) }
    if (chunk.type === 'CUSTOM' && chunk.name === input.sessionEvent) outcome.sessionId = (chunk.value as { sessionId: string }).sessionId
  }
  return outcome
}

/** A chunk with its fields readable by name (the chunk union mixes enum members and string literals). */
export type AnyChunk = { type: string } & Record<string, any>
/** The chunks of one type. */
export const ofType = (chunks: StreamChunk[], type: string) => (chunks as AnyChunk[]).filter((c) => c.type === type)
/** The CUSTOM chunks of one name. */
export const custom = (chunks: StreamChunk[], name: string) => ofType(chunks, 'CUSTOM').filter((c) => c.name === name)

export { recording } from './recording-provider.js'

/** PIDs of live processes whose environment holds `NAME=value` (the CLI and every tool it started). */
export function processesWithEnv(entry: string): number[] {
  const needle = Buffer.from(`\0${entry}\0`)
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let environ: Buffer
    try {
      environ = readFileSync(`/proc/${name}/environ`)
    } catch {
      continue // already gone, or not ours to read
    }
    if (Buffer.concat([Buffer.from([0]), environ]).includes(needle)) pids.push(Number(name))
  }
  return pids
}

/** PIDs of live processes whose environment has HOME=`home`. */
export const processesWithHome = (home: string): number[] => processesWithEnv(`HOME=${home}`)

/** PIDs of live processes whose command line contains `marker`. */
export function processesMatching(marker: string): number[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(marker) && !line.includes('ps -eo'))
    .map((line) => Number(line.trim().split(/\s+/)[0]))
}

/** Poll `check` every 50 ms until it holds or `timeoutMs` passes (a hang guard, not a timing claim). */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}
