/**
 * Collects the events a watcher delivers and waits (bounded, as a hang guard)
 * until one matches; folds the repeats a native watcher adds. Shared by the
 * file-event suites of the end-to-end tests and the providers.
 */
import type { SandboxFileEvent } from '@tanstack/ai'

/** A recording `onEvent` and a bounded wait for a matching event. */
export function eventLog() {
  const events: SandboxFileEvent[] = []
  return {
    events,
    onEvent: (event: SandboxFileEvent) => void events.push(event),
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

/**
 * Event types per path, in order, with repeated changes folded into the
 * event before them: a poll that lands while a command is still writing, or
 * a write that outlasts the native watcher's coalescing window, reports a
 * file's `create` (or `change`) and then `change` again, where a single look
 * afterwards sees one event. `name` maps the path used as key (default: unchanged).
 */
export function perPath(values: readonly { type: string; path: string }[], name: (path: string) => string = (p) => p): Record<string, string> {
  const out: Record<string, string[]> = {}
  for (const { type, path } of values) {
    const list = (out[name(path)] ??= [])
    if (!(type === 'change' && (list.at(-1) === 'create' || list.at(-1) === 'change'))) list.push(type)
  }
  return Object.fromEntries(Object.entries(out).map(([path, types]) => [path, types.join(',')]))
}
