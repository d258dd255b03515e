/**
 * A stand-in sandbox for the harness adapters' unit suites: a capability bus
 * holding a handle whose `spawn` records the command line and its env, then
 * fails (no CLI runs), so a test sees what the adapter would have started.
 * With `exec` it also records and answers `exec` and `fs.remove` (an adapter
 * that writes run files first). And one adapter `chatStream` call, drained.
 */
import type { StreamChunk } from '@tanstack/ai'
import { provideSandbox, type SandboxHandle } from '@tanstack/ai-sandbox'

/** Options of {@link standInSandbox}. */
export interface StandInOptions {
  /** Capability flags of the handle besides `writableStdin: true` (e.g. `{ isolated: true }`). */
  flags?: { isolated?: boolean }
  /** Give the handle `process.exec` (recorded, answers exit 0 with no output) and `fs.remove` (does nothing). */
  exec?: boolean
}

/** The bus to pass as `capabilities`, and what the adapter asked of the handle. */
export interface StandIn {
  capabilities: object
  /** Each `spawn` command line, in order. */
  spawned: string[]
  /** Each `spawn`'s env (`{}` when none was given). */
  envs: Record<string, string>[]
  /** Each `exec` command line (only with `exec`). */
  execs: string[]
}

/** A capability bus holding a stand-in sandbox whose `spawn` records and fails. */
export function standInSandbox(options: StandInOptions = {}): StandIn {
  const spawned: string[] = []
  const envs: Record<string, string>[] = []
  const execs: string[] = []
  const spawn = (command: string, spawnOptions?: { env?: Record<string, string> }) => {
    spawned.push(command)
    envs.push(spawnOptions?.env ?? {})
    throw new Error('stand-in sandbox: no process runs here')
  }
  const exec = async (command: string) => {
    execs.push(command)
    return { exitCode: 0, stdout: '', stderr: '' }
  }
  const handle = {
    id: 'stand-in',
    workspaceRoot: '/workspace',
    capabilities: { writableStdin: true, ...options.flags },
    ...(options.exec ? { fs: { remove: async () => undefined }, process: { exec, spawn } } : { process: { spawn } }),
  } as unknown as SandboxHandle
  const capabilities = { capabilities: { markProvided: () => undefined } }
  provideSandbox(capabilities as never, handle)
  return { capabilities, spawned, envs, execs }
}

/** A logger that drops everything (chat() hands adapters one; the stand-in runs need none). */
export const silentLogger: object = new Proxy({}, { get: () => () => undefined })

/**
 * Call `adapter.chatStream(request)` with the silent logger and read the stream to its end.
 * @param request - The chat options the adapter reads (`model`, `runId`, `threadId`, `messages`, `capabilities`, …).
 * @returns The chunks it yielded.
 */
export async function drainChatStream(adapter: { chatStream: (options: never) => AsyncIterable<unknown> }, request: Record<string, unknown>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = []
  for await (const chunk of adapter.chatStream({ ...request, logger: silentLogger } as never)) chunks.push(chunk as StreamChunk)
  return chunks
}
