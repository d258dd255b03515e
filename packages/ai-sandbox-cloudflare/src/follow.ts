/**
 * Following a spawned job: its wrapper prints framed lines (`P`, `R`, `O`,
 * `E`, `X`) on stdout, which reach the Worker as SSE `stdout` events of
 * `streamProcessLogs`. The stream replays everything from the start when
 * reopened, so the characters already handled are skipped; it may end early,
 * and it never ends when the container is destroyed under it, so a watchdog
 * polls the process record. Invariant: `onLine` sees every framed line once,
 * in order, and `follow` settles (exit line, restarted container, or lost).
 */
import { destroyedError, operationError, restartedError } from './errors.js'
import type { SandboxState } from './state.js'

/** How often the watchdog looks at the process record while following, ms. */
const WATCH_EVERY_MS = 2000

/** How long a follow may go without the exit line once the record says the process is gone or done, ms. */
const LOST_AFTER_MS = 10_000

/** One event of the SDK's process log stream, as far as it is read. */
interface LogEvent {
  readonly type?: string
  readonly data?: string
}

/** Split SSE text into JSON events; returns the events and the unfinished rest. */
function parseSse(buffer: string): { events: LogEvent[]; rest: string } {
  const events: LogEvent[] = []
  const frames = buffer.replace(/\r\n/g, '\n').split('\n\n')
  const rest = frames.pop() ?? ''
  for (const frame of frames) {
    const data = frame
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n')
    if (data === '' || data === '[DONE]') continue
    try {
      events.push(JSON.parse(data) as LogEvent)
    } catch {
      // Not JSON: the SDK's own parser skips such frames too.
    }
  }
  return { events, rest }
}

/**
 * Follow the wrapper of background process `processId` until its `X` line.
 * @param onLine - Called with each framed line (without its newline); return `true` on the exit line.
 * @throws SandboxOperationError `not-found` when the container restarted empty, `unreachable` when the output was lost.
 */
export async function follow(state: SandboxState, processId: string, onLine: (line: string) => boolean): Promise<void> {
  const decoder = new TextDecoder()
  /** Characters of the wrapper's stdout handled so far, across every open of the stream. */
  let handled = 0
  let pending = ''
  let finished = false
  let failure: Error | undefined
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  let goneSince: number | undefined

  const take = (text: string) => {
    pending += text
    let newline = pending.indexOf('\n')
    while (newline !== -1 && !finished) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      if (line === 'TSB-GONE') {
        failure = restartedError(state.id, 'process.spawn')
        finished = true
      } else if (onLine(line)) finished = true
      newline = pending.indexOf('\n')
    }
  }

  // Any SDK call starts the container again, so nothing is called once the sandbox was destroyed.
  const stopIfDestroyed = () => {
    if (!state.destroyed || finished) return finished
    failure = destroyedError(state.id, "the spawned process's wait")
    finished = true
    void reader?.cancel().catch(() => undefined)
    return true
  }

  const watchdog = setInterval(() => {
    void (async () => {
      if (finished || stopIfDestroyed()) return
      const record = await state.toolbox.process(processId, 'process.spawn (watch)').catch(() => undefined)
      if (finished) return
      if (record === undefined || (record !== null && (record.status === 'running' || record.status === 'starting'))) {
        goneSince = undefined
        return
      }
      goneSince ??= Date.now()
      if (Date.now() - goneSince < LOST_AFTER_MS) return
      const marker = await state.toolbox.run(`[ -f ${JSON.stringify(state.paths.marker)} ] && echo ok || echo gone`, 'process.spawn (watch)').catch(() => undefined)
      failure =
        marker && marker.stdout.includes('gone')
          ? restartedError(state.id, 'process.spawn')
          : operationError('unreachable', `Lost the output of process ${processId} in sandbox ${state.id}: it ended (status ${record?.status ?? 'unknown'}) but its log stream never delivered the end. The process's effects remain; its remaining output and exit code are unknown.`)
      finished = true
      await reader?.cancel().catch(() => undefined)
    })()
  }, WATCH_EVERY_MS)

  try {
    while (!finished) {
      let seen = 0
      let sse = ''
      if (stopIfDestroyed()) break
      try {
        reader = (await state.toolbox.logs(processId, 'process.spawn')).getReader()
        for (;;) {
          const { done, value } = await reader.read()
          if (done || finished) break
          const parsed = parseSse(sse + decoder.decode(value, { stream: true }))
          sse = parsed.rest
          for (const event of parsed.events) {
            if (event.type !== 'stdout' || typeof event.data !== 'string') continue
            const start = seen
            seen += event.data.length
            if (seen > handled) {
              take(event.data.slice(Math.max(0, handled - start)))
              handled = seen
            }
            if (finished) break
          }
          if (finished) break
        }
      } catch (error) {
        if (finished) break
        // The stream failed (the record may be gone): the watchdog decides; try again shortly.
        failure = undefined
        void error
      } finally {
        await reader?.cancel().catch(() => undefined)
        reader = undefined
      }
      // A server that drops the last newline: the final line is still whole at the end of the stream.
      if (!finished && pending !== '' && /^X -?\d+$/.test(pending)) take('\n')
      if (!finished) await new Promise((resolve) => setTimeout(resolve, 250))
    }
  } finally {
    clearInterval(watchdog)
  }
  if (failure) throw failure
}
