/**
 * Test helpers: drive one chat() run with the shell adapter and collect what a
 * user would see, and make and clean a private local-process root per file.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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

/** A private provider root for one test file. */
export function makeRoot(label: string): { root: string; entries: () => string[]; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), `tsbx-e2e-${label}-`))
  return {
    root,
    entries: () => readdirSync(root),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  }
}

/** PIDs of live processes whose command line contains `marker` (via `ps`). */
export function processesMatching(marker: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
  return out
    .split('\n')
    .filter((line) => line.includes(marker) && !line.includes('ps -eo'))
    .map((line) => Number(line.trim().split(/\s+/)[0]))
}

/** Poll `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}
