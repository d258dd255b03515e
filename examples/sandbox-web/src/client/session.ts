/**
 * What the tab keeps in localStorage so a refresh loses nothing: the thread
 * it shows, and per run the events received so far with the last event id.
 * Both are saved together, so the id always matches the events kept: a
 * reattach with that id gets exactly the events after them.
 */
import type { WireChunk } from './sse.js'

const THREAD_KEY = 'sandbox-web:thread'
const runKey = (runId: string) => `sandbox-web:run:${runId}`

/** The events of a run this tab has, in log order, and the id of the last one. */
export interface CachedRun {
  lastEventId: string | undefined
  events: { id: string; chunk: WireChunk }[]
}

/** The thread of this tab: a valid `?thread=` first, then the last one used here, else a new one. Written back to both. */
export function currentThread(): string {
  const url = new URL(window.location.href)
  // The server takes ids of letters, digits, _ and - (at most 100): anything else starts a new thread.
  const valid = (id: string | null): id is string => id !== null && /^[A-Za-z0-9_-]{1,100}$/.test(id)
  const asked = url.searchParams.get('thread')
  const stored = localStorage.getItem(THREAD_KEY)
  const threadId = valid(asked) ? asked : valid(stored) && asked === null ? stored : `thread-${crypto.randomUUID()}`
  rememberThread(threadId)
  return threadId
}

/** Make `threadId` this tab's thread (URL and storage), e.g. for "New thread". */
export function rememberThread(threadId: string): void {
  localStorage.setItem(THREAD_KEY, threadId)
  const url = new URL(window.location.href)
  url.searchParams.set('thread', threadId)
  window.history.replaceState(null, '', url)
}

export function loadRun(runId: string): CachedRun {
  try {
    const raw = localStorage.getItem(runKey(runId))
    if (raw) return JSON.parse(raw) as CachedRun
  } catch {
    // A corrupt or foreign entry: start from the log's beginning instead.
  }
  return { lastEventId: undefined, events: [] }
}

export function saveRun(runId: string, run: CachedRun): void {
  try {
    localStorage.setItem(runKey(runId), JSON.stringify(run))
  } catch {
    // Storage full: the next reattach replays from the last id saved, so nothing is lost, only re-fetched.
  }
}
