/**
 * `withPersistence`: the small persistence seam portable snapshots need
 * (spec 000 composes `withPersistence(snapshots.persistence)` before
 * `withSandbox`). Upstream's `@tanstack/ai-persistence` is not published, so
 * this is ours, cut to what the sandbox side uses: at a successful terminal it
 * appends the finished turn to the thread's transcript, then tells
 * `withSandbox` (through `SandboxTranscriptCapability`) that the write is done
 * and how many messages it covers, so the checkpoint includes the turn. A run
 * that errs or is aborted saves nothing and says so.
 */
import { defineChatMiddleware, type ChatMiddlewareContext, type ModelMessage } from '@tanstack/ai'
import { provideSandboxTranscript, SandboxTranscriptCapability, type SandboxTranscriptOutcome } from '../capabilities/tokens.js'
import { parseOptions } from '../contracts/validate.js'
import { scrubDeep } from '../secrets/secret-scrubber.js'
import { snapshotPersistenceSchema, type SandboxSnapshotPersistence } from '../snapshots/stores.js'

/** Compare-and-set attempts of one transcript write (another writer of the thread may append between a read and a write). */
const APPEND_ATTEMPTS = 3

/**
 * Save each successful run's transcript to `persistence.stores.messages`
 * (append-only per thread) and report it to `withSandbox({ snapshots })`.
 * Place it BEFORE `withSandbox` in `middleware`, with the same persistence
 * value as `createSandboxSnapshots` (spec 000).
 *
 * What is appended: when the request's messages begin with the thread's
 * stored transcript (a client that sends the whole history), the rest of the
 * run's history (the request's messages plus the assistant's final reply);
 * otherwise (a client that sends only the new message, or trimmed or edited
 * its history) the last user message and what follows it. The stored
 * transcript is never rewritten.
 * Every string of what is stored passes the secret scrubber `withSandbox`
 * registers (its workspace secrets, raw and encoded, become `[redacted]`
 * markers as in its chunks). A run without `chat({ threadId })` is not saved.
 *
 * @param persistence - `{ stores: { messages, artifacts, blobs, checkpoints } }`, e.g. `snapshots.persistence`.
 * @returns chat() middleware (`name: 'persistence'`).
 * @throws SandboxConfigError when `persistence` is not a persistence value, naming the field.
 * @throws From its `onFinish`, whatever `messages.list` or `messages.append` throws (core reports it after the run's end).
 * @example
 * ```ts
 * import { withPersistence } from '@tanstack/ai-sandbox/persistence'
 * const snapshots = await memorySandboxSnapshots({ sandbox, instances })
 * chat({ adapter, messages, threadId, middleware: [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })] })
 * ```
 */
export function withPersistence(persistence: SandboxSnapshotPersistence) {
  parseOptions(snapshotPersistenceSchema, persistence, 'withPersistence.persistence')
  const outcomes = new WeakMap<object, (outcome: SandboxTranscriptOutcome) => void>()
  const scrubbers = new WeakMap<object, ((text: string) => string)[]>()
  const settle = (ctx: ChatMiddlewareContext, outcome: SandboxTranscriptOutcome) => {
    outcomes.get(ctx)?.(outcome)
    outcomes.delete(ctx)
  }
  return defineChatMiddleware({
    name: 'persistence',
    provides: [SandboxTranscriptCapability],
    setup(ctx) {
      const outcome = new Promise<SandboxTranscriptOutcome>((resolve) => outcomes.set(ctx, resolve))
      const scrubs: ((text: string) => string)[] = []
      scrubbers.set(ctx, scrubs)
      provideSandboxTranscript(ctx, { persistence, outcome, redactWith: (scrub) => void scrubs.push(scrub) })
    },
    async onFinish(ctx, info) {
      if (GENERATED_THREAD_ID.test(ctx.threadId)) return settle(ctx, { saved: false })
      try {
        const messageCount = await appendTurn(persistence, ctx.threadId, scrubbed(transcriptOf(ctx.messages, info.content), scrubbers.get(ctx) ?? []))
        settle(ctx, { saved: true, messageCount })
      } catch (error) {
        settle(ctx, { saved: false, error })
        throw error
      }
    },
    onError: (ctx) => settle(ctx, { saved: false }),
    onAbort: (ctx) => settle(ctx, { saved: false }),
  })
}

/** chat()'s own thread id when none was given (`thread-<ms>-<random>`): nothing could find such a thread again. */
const GENERATED_THREAD_ID = /^thread-\d{13}-[a-z0-9]{1,12}$/

/** The run's history with the assistant's final reply at its end (added when the messages do not end with it). */
function transcriptOf(messages: readonly ModelMessage[], reply: string): ModelMessage[] {
  const all = [...messages]
  const last = all.at(-1)
  if (!(last?.role === 'assistant' && last.content === reply)) all.push({ role: 'assistant', content: reply })
  return all
}

/** Every string of the messages (contents, parts, tool arguments and results) through each scrubber. */
function scrubbed(messages: ModelMessage[], scrubs: readonly ((text: string) => string)[]): ModelMessage[] {
  if (scrubs.length === 0) return messages
  return scrubDeep(messages, (text) => scrubs.reduce((out, scrub) => scrub(out), text))
}

/** Append what the thread lacks of `transcript`; the thread's message count afterwards. */
async function appendTurn(persistence: SandboxSnapshotPersistence, threadId: string, transcript: readonly ModelMessage[]): Promise<number> {
  const { messages } = persistence.stores
  for (let attempt = 1; ; attempt++) {
    const stored = await messages.list(threadId)
    const added = startsWith(transcript, stored) ? transcript.slice(stored.length) : lastTurn(transcript)
    if (added.length === 0 || (await messages.append(threadId, added, stored.length))) return stored.length + added.length
    if (attempt === APPEND_ATTEMPTS) throw new Error(`withPersistence: the transcript of thread ${JSON.stringify(threadId)} kept changing under this write (${APPEND_ATTEMPTS} attempts); another writer appends to it at the same time`)
  }
}

/** Whether `transcript` begins with `stored` (same roles and contents). */
function startsWith(transcript: readonly ModelMessage[], stored: readonly ModelMessage[]): boolean {
  if (stored.length > transcript.length) return false
  return stored.every((message, i) => message.role === transcript[i]!.role && JSON.stringify(message.content) === JSON.stringify(transcript[i]!.content))
}

/** The last user message and what follows it. */
function lastTurn(transcript: readonly ModelMessage[]): ModelMessage[] {
  const at = transcript.findLastIndex((m) => m.role === 'user')
  return transcript.slice(Math.max(0, at))
}
