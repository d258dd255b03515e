/**
 * The turn: each chunk of the run passes here on its way to the client. It
 * leaves without a workspace secret (raw or encoded), the harness's tool calls
 * are recorded into the transcript, and at the adapter's final `RUN_FINISHED`
 * the run's file changes go out.
 */
import type { ChatMiddlewareContext, StreamChunk } from '@tanstack/ai'
import { FILE_CHANGED_EVENT } from '../watch/run-file-events.js'
import { SANDBOX_FLUSH_EVENT } from './run-chunks.js'
import { FILE_DIFF_EVENT, reportFileChanges } from './run-file-changes.js'
import { isTerminalChunk } from './run-lease.js'
import type { RunState } from './run-state.js'

/**
 * The turn, one chunk at a time: drop the flush ticks, rename queued diffs to
 * `file.changed`, scrub every chunk of the workspace's secrets, record the
 * harness's tool calls, and at the adapter's `RUN_FINISHED` emit the run's
 * file changes. Returns what `onChunk` returns.
 */
export async function passRunChunk(runs: WeakMap<object, RunState>, ctx: ChatMiddlewareContext, chunk: StreamChunk): Promise<StreamChunk | StreamChunk[] | null | undefined> {
  // The tick has done its job by arriving: core drains its queued sandbox.file chunks right after this chunk.
  if (chunk.type === 'CUSTOM' && chunk.name === SANDBOX_FLUSH_EVENT) return null
  const state = runs.get(ctx)
  if (!state) return
  if (chunk.type === 'CUSTOM' && chunk.name === FILE_DIFF_EVENT && state.fileDiffs.delete(chunk.value as object)) return { ...chunk, name: FILE_CHANGED_EVENT }
  // Every chunk of every phase (a host tool's result too) leaves without a workspace secret, raw or encoded.
  const scrubbed = state.chunkScrub.push(chunk)
  if (ctx.phase !== 'modelStream') return passOn(chunk, scrubbed)
  const out = scrubbed.map((c) => state.history.observe(c))
  if (isTerminalChunk(chunk)) state.lastTerminal = chunk
  if (chunk.type === 'RUN_FINISHED' || chunk.type === 'RUN_ERROR') {
    const recorded = state.history.take((prefix) => ctx.createId(prefix))
    if (recorded.length > 0) ctx.messages = [...ctx.messages, ...recorded]
  }
  if (chunk.type === 'RUN_FINISHED') {
    // A tool-calling turn's RUN_FINISHED is not the end: the agent loop runs another turn, and an abort then is live.
    if (chunk.finishReason !== 'tool_calls') {
      state.agentFinished = true
      state.forgetAbort?.()
    }
    await reportFileChanges(ctx, state)
  }
  return passOn(chunk, out)
}

/** What `onChunk` returns for `chunk` when `out` is what should pass: nothing (unchanged), `null` (held back), one chunk or several. */
function passOn(chunk: StreamChunk, out: StreamChunk[]): StreamChunk | StreamChunk[] | null | undefined {
  if (out.length === 0) return null
  if (out.length === 1) return out[0] === chunk ? undefined : out[0]
  return out
}
