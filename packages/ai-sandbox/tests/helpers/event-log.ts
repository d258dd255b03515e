/**
 * Collects the events a watcher delivers and waits (bounded, as a hang guard)
 * until one matches. Shared by the watch tests.
 */
import type { SandboxFileEvent } from '@tanstack/ai'

/** A recording `onEvent` and a bounded wait for a matching event. */
export function eventLog() {
  const events: SandboxFileEvent[] = []
  return {
    events,
    onEvent: (event: SandboxFileEvent) => void events.push(event),
    /** Type and path of every event so far, e.g. `create /w/a.txt`. */
    lines: () => events.map((e) => `${e.type} ${e.path}`),
    /** Resolve with the first event matching `predicate`; reject after `timeoutMs`. */
    async until(predicate: (event: SandboxFileEvent) => boolean, timeoutMs = 15_000): Promise<SandboxFileEvent> {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = events.find(predicate)
        if (found) return found
        if (Date.now() > deadline) throw new Error(`no matching event within ${timeoutMs} ms; saw: ${events.map((e) => `${e.type} ${e.path}`).join(', ') || 'nothing'}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
  }
}
