/**
 * The run's view model, folded from its chunks in log order: streamed text
 * and reasoning, one card per tool call with its result, the workspace's file
 * events, the final diff per file, and how the run ended. Pure: the same
 * chunks always give the same view, so a tab that replays the log from its
 * cache and one that reads it live show the same transcript. It never hides
 * a repeated chunk; de-duplication is by log offset, in the caller.
 */
import type { WireChunk } from './sse.js'

export interface ToolCard {
  id: string
  name: string
  args: string
  input: unknown
  result: string | undefined
}

export type TranscriptItem = { kind: 'text' | 'reasoning'; id: string; text: string } | { kind: 'tool'; id: string }

export type FileState = 'created' | 'changed' | 'deleted'

export interface Transcript {
  items: TranscriptItem[]
  tools: Record<string, ToolCard>
  /** Workspace-relative path to what the run did to it, from `sandbox.file` events. */
  files: Record<string, FileState>
  /** The `file.changed` events: this run's diff per file. */
  diffs: { path: string; diff: string }[]
  /** How the stream ended, once it did: `finished`, or `error` with the chunk's message and code. */
  end: { kind: 'finished' } | { kind: 'error'; message: string; code: string | undefined } | undefined
  /** The tokens the run used, summed over its `RUN_FINISHED` / `RUN_ERROR` chunks that carry usage; `undefined` when none did. */
  usage: Usage | undefined
  events: number
}

/** Token counts, and the cost in USD when the adapter reported one. */
export interface Usage {
  input: number
  output: number
  total: number
  cost: number | undefined
}

export const EMPTY: Transcript = { items: [], tools: {}, files: {}, diffs: [], end: undefined, usage: undefined, events: 0 }

/** A sandbox path relative to its workspace (`…/workspace/math.js` → `math.js`), on local-process and Docker alike. */
export function relativePath(path: string): string {
  const at = path.lastIndexOf('/workspace/')
  return at >= 0 ? path.slice(at + '/workspace/'.length) : path
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '')

function appendText(state: Transcript, kind: 'text' | 'reasoning', id: string, delta: string): Transcript {
  const index = state.items.findIndex((item) => item.kind === kind && item.id === id)
  if (index < 0) return { ...state, items: [...state.items, { kind, id, text: delta }] }
  const items = state.items.slice()
  const item = items[index] as { kind: 'text' | 'reasoning'; id: string; text: string }
  items[index] = { ...item, text: item.text + delta }
  return { ...state, items }
}

function updateTool(state: Transcript, id: string, patch: (card: ToolCard) => ToolCard): Transcript {
  const card = state.tools[id] ?? { id, name: 'tool', args: '', input: undefined, result: undefined }
  const items = state.items.some((item) => item.kind === 'tool' && item.id === id) ? state.items : [...state.items, { kind: 'tool' as const, id }]
  return { ...state, items, tools: { ...state.tools, [id]: patch(card) } }
}

function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args)
  } catch {
    return args
  }
}

/** Fold one chunk into the view. */
export function reduce(previous: Transcript, chunk: WireChunk): Transcript {
  const state = { ...previous, events: previous.events + 1 }
  switch (chunk.type) {
    case 'TEXT_MESSAGE_START':
      return appendText(state, 'text', str(chunk.messageId), '')
    case 'TEXT_MESSAGE_CONTENT':
      return appendText(state, 'text', str(chunk.messageId), str(chunk.delta))
    case 'REASONING_MESSAGE_START':
      return appendText(state, 'reasoning', str(chunk.messageId), '')
    case 'REASONING_MESSAGE_CONTENT':
      return appendText(state, 'reasoning', str(chunk.messageId), str(chunk.delta))
    case 'TOOL_CALL_START':
      return updateTool(state, str(chunk.toolCallId), (card) => ({ ...card, name: str(chunk.toolCallName) || card.name }))
    case 'TOOL_CALL_ARGS':
      return updateTool(state, str(chunk.toolCallId), (card) => ({ ...card, args: card.args + str(chunk.delta) }))
    case 'TOOL_CALL_END':
      return updateTool(state, str(chunk.toolCallId), (card) => ({ ...card, input: chunk.input ?? parseArgs(card.args) }))
    case 'TOOL_CALL_RESULT':
      return updateTool(state, str(chunk.toolCallId), (card) => ({ ...card, result: (card.result ?? '') + str(chunk.content) }))
    case 'RUN_FINISHED': {
      const usage = addUsage(state.usage, chunk)
      return chunk.finishReason === 'tool_calls' ? { ...state, usage } : { ...state, usage, end: { kind: 'finished' } }
    }
    case 'RUN_ERROR': {
      const code = str(chunk.code) || str((chunk.error as { code?: unknown } | undefined)?.code) || undefined
      return { ...state, usage: addUsage(state.usage, chunk), end: { kind: 'error', message: str(chunk.message), code } }
    }
    case 'CUSTOM': {
      const value = (chunk.value ?? {}) as { type?: unknown; path?: unknown; diff?: unknown }
      if (chunk.name === 'sandbox.file' && typeof value.path === 'string') {
        const path = relativePath(value.path)
        if (path.startsWith('.git/') || path === '.git') return state
        const next: FileState = value.type === 'delete' ? 'deleted' : value.type === 'create' || state.files[path] === 'created' ? 'created' : 'changed'
        return { ...state, files: { ...state.files, [path]: next } }
      }
      if (chunk.name === 'file.changed' && typeof value.path === 'string') return { ...state, diffs: [...state.diffs, { path: relativePath(value.path), diff: str(value.diff) }] }
      return state
    }
    default:
      return state
  }
}

const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0)

/**
 * Add a terminal chunk's usage. On the wire it is AG-UI's `usage[]` (`inputTokens`, `outputTokens`, `totalTokens`
 * per provider/model) with the cost in `metadata.tanstack.usage.cost`, or core's `TokenUsage` (`promptTokens`,
 * `completionTokens`, `totalTokens`, `cost`) from an adapter that emits it directly.
 */
function addUsage(previous: Usage | undefined, chunk: WireChunk): Usage | undefined {
  const raw = chunk.usage
  const entries = Array.isArray(raw) ? (raw as Record<string, unknown>[]) : raw && typeof raw === 'object' ? [raw as Record<string, unknown>] : []
  if (entries.length === 0) return previous
  const leftover = (chunk.metadata as { tanstack?: { usage?: { cost?: unknown } } } | undefined)?.tanstack?.usage
  let input = 0
  let output = 0
  let total = 0
  let cost: number | undefined
  for (const entry of entries) {
    const entryInput = num(entry.inputTokens) || num(entry.promptTokens)
    const entryOutput = num(entry.outputTokens) || num(entry.completionTokens)
    input += entryInput
    output += entryOutput
    total += num(entry.totalTokens) || entryInput + entryOutput
    if (typeof entry.cost === 'number') cost = (cost ?? 0) + entry.cost
  }
  if (typeof leftover?.cost === 'number') cost = (cost ?? 0) + leftover.cost
  const sum = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0))
  return { input: (previous?.input ?? 0) + input, output: (previous?.output ?? 0) + output, total: (previous?.total ?? 0) + total, cost: sum(previous?.cost, cost) }
}

/** The command a tool card shows: Bash's command, else the input as JSON. */
export function describeInput(card: ToolCard): string {
  const input = card.input ?? parseArgs(card.args)
  if (input && typeof input === 'object' && typeof (input as { command?: unknown }).command === 'string') return (input as { command: string }).command
  return typeof input === 'string' ? input : JSON.stringify(input)
}
