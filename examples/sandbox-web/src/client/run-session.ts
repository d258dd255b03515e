/**
 * One tab's view of a thread's latest run, and the client half of the
 * durable routes: start (POST), follow and rejoin (GET with `Last-Event-ID`),
 * and Stop, which calls the cancel route (closing our own connection alone is
 * only a detach: the agent would go on). Events are de-duplicated by log
 * offset and cached with the last id, so a refresh repaints from the cache
 * and reattaches after the last event it has.
 */
import { attachRun, readEvents, startRun, type WireChunk } from './sse.js'
import { loadRun, saveRun } from './session.js'
import { EMPTY, reduce, type Transcript } from './transcript.js'

/** A run of the thread as `GET /api/threads/:threadId` lists it. */
export interface RunSummary {
  runId: string
  status: string
  prompt: string | null
  detached: boolean
}

/** What the page renders. */
export interface RunViewState {
  threadId: string
  runId: string | undefined
  prompt: string | null
  /** `idle`, `loading`, `starting`, `streaming` (live), `replaying` (a finished run's log), `stopping`, then the record's final status (`completed`, `failed`, `aborted`). */
  phase: string
  transcript: Transcript
  lastEventId: string | undefined
  error: string | undefined
}

const TERMINAL = new Set(['completed', 'failed', 'aborted'])
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export class RunSession {
  state: RunViewState
  private seen = new Set<string>()
  private events: { id: string; chunk: WireChunk }[] = []
  private readonly controller = new AbortController()
  private saveTimer: ReturnType<typeof setTimeout> | undefined
  /** Bumped by every adopt, so a loop of an earlier run stops. */
  private generation = 0

  constructor(threadId: string, private readonly onChange: (state: RunViewState) => void) {
    this.state = { threadId, runId: undefined, prompt: null, phase: 'idle', transcript: EMPTY, lastEventId: undefined, error: undefined }
    window.addEventListener('pagehide', () => this.flush())
  }

  /** Show the thread's latest run: from the cache, then the log after it, live while it runs. */
  async load(): Promise<void> {
    const runs = await this.listRuns()
    const latest = runs.at(-1)
    if (!latest) return
    const generation = this.adopt(latest.runId, latest.prompt, 'loading')
    await this.follow(latest.runId, generation)
  }

  /** Start a new run of the thread with `prompt` and stream it. */
  async start(prompt: string): Promise<void> {
    const runId = `run-${crypto.randomUUID()}`
    const generation = this.adopt(runId, prompt, 'starting')
    try {
      const response = await startRun(runId, this.state.threadId, prompt, this.controller.signal)
      this.set({ phase: 'streaming' })
      await this.consume(response, generation)
    } catch (error) {
      if (this.controller.signal.aborted) return
      this.set({ error: String(error) })
    }
    await this.follow(runId, generation)
  }

  /** Stop: the cancel route records the cancel and aborts the driver; the stream then ends by itself. */
  async stop(): Promise<void> {
    this.set({ phase: 'stopping' })
    const response = await fetch('/api/run/cancel', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId: this.state.threadId }) })
    if (!response.ok) this.set({ error: `cancel: ${response.status}` })
  }

  dispose(): void {
    this.flush()
    this.controller.abort()
  }

  private adopt(runId: string, prompt: string | null, phase: string): number {
    this.flush()
    const cached = loadRun(runId)
    this.events = cached.events
    this.seen = new Set(cached.events.map((event) => event.id))
    const transcript = cached.events.reduce((state, event) => reduce(state, event.chunk), EMPTY)
    this.set({ runId, prompt, phase, transcript, lastEventId: cached.lastEventId, error: undefined })
    return ++this.generation
  }

  /** Reattach until the run has ended: after each stream, read the record; a live run is rejoined after the last id kept. */
  private async follow(runId: string, generation: number): Promise<void> {
    for (let attempt = 0; attempt < 600 && generation === this.generation && !this.controller.signal.aborted; attempt++) {
      const record = (await this.listRuns()).find((run) => run.runId === runId)
      if (generation !== this.generation) return
      if (record && TERMINAL.has(record.status) && (this.state.transcript.end || attempt > 0)) {
        this.set({ phase: record.status })
        return
      }
      if (attempt > 0) await sleep(400)
      // The final status only once its events are all in: a finished run's log is replayed first.
      if (this.state.phase !== 'stopping') this.set({ phase: record && TERMINAL.has(record.status) ? 'replaying' : 'streaming' })
      try {
        await this.consume(await attachRun(runId, this.state.lastEventId, this.controller.signal), generation)
      } catch (error) {
        if (this.controller.signal.aborted) return
        this.set({ error: String(error) })
      }
    }
  }

  private async consume(response: Response, generation: number): Promise<void> {
    for await (const { id, chunk } of readEvents(response)) {
      if (generation !== this.generation) return
      if (id === undefined) {
        this.set({ transcript: reduce(this.state.transcript, chunk) }) // not in the log (an error the server made up): shown, not cached
        continue
      }
      if (this.seen.has(id)) continue
      this.seen.add(id)
      this.events.push({ id, chunk })
      this.set({ transcript: reduce(this.state.transcript, chunk), lastEventId: id })
      this.scheduleSave()
    }
    this.flush()
  }

  private async listRuns(): Promise<RunSummary[]> {
    const response = await fetch(`/api/threads/${encodeURIComponent(this.state.threadId)}`, { signal: this.controller.signal })
    if (!response.ok) return []
    return ((await response.json()) as { runs: RunSummary[] }).runs
  }

  private scheduleSave(): void {
    this.saveTimer ??= setTimeout(() => this.flush(), 150)
  }

  private flush(): void {
    clearTimeout(this.saveTimer)
    this.saveTimer = undefined
    if (this.state.runId !== undefined && this.events.length > 0) saveRun(this.state.runId, { lastEventId: this.state.lastEventId, events: this.events })
  }

  private set(patch: Partial<RunViewState>): void {
    this.state = { ...this.state, ...patch }
    this.onChange(this.state)
  }
}
