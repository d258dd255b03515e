/**
 * One tab's view of a thread's latest run, and the client half of the
 * durable routes: start (POST), follow and rejoin (GET with `Last-Event-ID`),
 * and Stop, which calls the cancel route (closing our own connection alone is
 * only a detach: the agent would go on). Events are de-duplicated by log
 * offset and cached with the last id, so a refresh repaints from the cache
 * and reattaches after the last event it has.
 */
import { apiFetch, UnauthorizedError } from './auth.js'
import { attachRun, readEvents, startRun, type WireChunk } from './sse.js'
import { loadRun, saveRun } from './session.js'
import { EMPTY, reduce, type Transcript } from './transcript.js'

/** A run of the thread as `GET /api/threads/:threadId` lists it. */
export interface RunSummary {
  runId: string
  status: string
  prompt: string | null
  detached: boolean
  /** Epoch ms, on the server's clock. */
  startedAt: number
  finishedAt: number | null
  /** The provider's id of the sandbox the run got (`null`: none yet, or it never got one). */
  sandboxId: string | null
}

/** What `GET /api/runs/:runId/changes` serves: a stopped run's diff, taken just before its sandbox went. */
export interface StoppedChanges {
  capturedAt: number
  files: { path: string; diff: string }[]
  truncated: boolean
}

/** What the page renders. */
export interface RunViewState {
  threadId: string
  runId: string | undefined
  prompt: string | null
  /** `idle`, `loading`, `starting`, `streaming` (live), `replaying` (a finished run's log), `reconnecting` (the server is away), `stopping`, then the record's final status (`completed`, `failed`, `aborted`). */
  phase: string
  transcript: Transcript
  lastEventId: string | undefined
  error: string | undefined
  /** When the run started and ended, epoch ms on this tab's clock (the server's, shifted by the offset it reported). */
  startedAt: number | undefined
  finishedAt: number | undefined
  /** A stopped run's changes, captured by the server before the sandbox went (a stopped run has no `file.changed` diffs). */
  stopped: StoppedChanges | undefined
  /** The id of the sandbox the run got, once the server knows it. */
  sandboxId: string | undefined
}

const TERMINAL = new Set(['completed', 'failed', 'aborted'])
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** How many reads of the thread may miss the run (a POST not yet recorded) before the tab gives up on it. */
const MISSING_RUN_ATTEMPTS = 50

export class RunSession {
  state: RunViewState
  private seen = new Set<string>()
  private events: { id: string; chunk: WireChunk }[] = []
  private readonly controller = new AbortController()
  private saveTimer: ReturnType<typeof setTimeout> | undefined
  /** Bumped by every adopt, so a loop of an earlier run stops. */
  private generation = 0
  /** The server's clock minus this tab's, ms, from the last list of runs: the record's times shift by it. */
  private clockOffset = 0

  constructor(threadId: string, private readonly onChange: (state: RunViewState) => void) {
    this.state = { threadId, runId: undefined, prompt: null, phase: 'idle', transcript: EMPTY, lastEventId: undefined, error: undefined, startedAt: undefined, finishedAt: undefined, stopped: undefined, sandboxId: undefined }
    window.addEventListener('pagehide', () => this.flush())
  }

  /** Show the thread's latest run: from the cache, then the log after it, live while it runs. */
  async load(): Promise<void> {
    const runs = await this.listRuns().catch((error: unknown) => {
      if (error instanceof UnauthorizedError) this.set({ error: error.message })
      return [] as RunSummary[] // disposed, refused, or the server away: nothing to show yet
    })
    const latest = runs.at(-1)
    if (!latest) return
    const generation = this.adopt(latest.runId, latest.prompt, 'loading')
    this.times(latest)
    await this.follow(latest.runId, generation)
  }

  /** Start a new run of the thread with `prompt` and stream it. */
  async start(prompt: string): Promise<void> {
    const runId = `run-${crypto.randomUUID()}`
    const generation = this.adopt(runId, prompt, 'starting')
    this.set({ startedAt: Date.now() })
    try {
      const response = await startRun(runId, this.state.threadId, prompt, this.controller.signal)
      if (response.status >= 400 && response.status < 500) {
        // Refused (a live run on the thread, a bad task, no token, 429: too many runs): no run was started, so there
        // is nothing to follow; the server's message says why.
        const body = (await response.json().catch(() => ({}))) as { error?: string }
        // 409: the thread has a live run (started from another tab): follow that run instead.
        if (response.status === 409) return await this.load()
        this.set({ runId: undefined, prompt: null, phase: 'idle', startedAt: undefined, error: body.error ?? `${response.status} ${response.statusText}` })
        return
      }
      this.set({ phase: 'streaming' })
      await this.consume(response, generation)
    } catch (error) {
      if (this.controller.signal.aborted) return
      this.set({ error: String(error) })
    }
    // The stream ended or broke (a restart, the network): the record says whether the run goes on.
    await this.follow(runId, generation)
  }

  /** Stop: the cancel route records the cancel and aborts the driver; the stream then ends by itself. */
  async stop(): Promise<void> {
    const before = this.state.phase
    this.set({ phase: 'stopping' })
    const response = await apiFetch('/api/run/cancel', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId: this.state.threadId }) }).catch(() => undefined)
    // Not recorded: the run goes on, so Stop is offered again.
    if (response?.status === 401) this.set({ phase: before, error: new UnauthorizedError().message })
    else if (!response?.ok) this.set({ phase: before, error: `the cancel did not reach the server (${response ? response.status : 'unreachable'}): press Stop again` })
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
    this.set({ runId, prompt, phase, transcript, lastEventId: cached.lastEventId, error: undefined, startedAt: undefined, finishedAt: undefined, stopped: undefined, sandboxId: undefined })
    return ++this.generation
  }

  /**
   * Reattach until the run has ended: after each stream, read the record; a live run is rejoined after the
   * last id kept. When the server cannot be reached (restarting, network gone) the phase is `reconnecting` and
   * the tab retries with a growing pause (0.5 s doubling to 5 s) for as long as it is open: the run lives on in
   * its sandbox and the next server takes it over when this tab reattaches.
   */
  private async follow(runId: string, generation: number): Promise<void> {
    let retryMs = 0
    let missing = 0
    for (let attempt = 0; generation === this.generation && !this.controller.signal.aborted; attempt++) {
      if (retryMs > 0) await sleep(retryMs)
      else if (attempt > 0) await sleep(400)
      if (generation !== this.generation || this.controller.signal.aborted) return
      let record: RunSummary | undefined
      try {
        record = (await this.listRuns()).find((run) => run.runId === runId)
      } catch (error) {
        if (this.controller.signal.aborted) return
        if (this.refused(error)) return
        retryMs = this.unreachable(error, retryMs)
        continue
      }
      if (generation !== this.generation) return
      if (retryMs > 0) this.set({ error: undefined })
      retryMs = 0
      if (record === undefined && ++missing > MISSING_RUN_ATTEMPTS) {
        this.set({ phase: 'idle', error: `the server does not know run ${runId} (its data was removed?)` })
        return
      }
      if (record) this.times(record)
      if (record && TERMINAL.has(record.status) && (this.state.transcript.end || attempt > 0)) {
        this.set({ phase: record.status, finishedAt: this.state.finishedAt ?? Date.now() })
        if (record.status === 'aborted') await this.loadStoppedChanges(runId, generation)
        return
      }
      // The final status only once its events are all in: a finished run's log is replayed first.
      if (this.state.phase !== 'stopping') this.set({ phase: record && TERMINAL.has(record.status) ? 'replaying' : 'streaming' })
      try {
        await this.consume(await attachRun(runId, this.state.lastEventId, this.controller.signal), generation)
      } catch (error) {
        if (this.controller.signal.aborted) return
        if (this.refused(error)) return
        retryMs = this.unreachable(error, retryMs)
      }
    }
  }

  /** A 401: retrying cannot help (the token is missing or from an earlier start), so stop following and say so. */
  private refused(error: unknown): boolean {
    if (!(error instanceof UnauthorizedError)) return false
    this.set({ phase: 'idle', error: error.message })
    return true
  }

  /** The server is away: show it, and return the next pause before retrying, ms. */
  private unreachable(error: unknown, retryMs: number): number {
    if (this.state.phase !== 'stopping') this.set({ phase: 'reconnecting', error: `server unreachable, retrying (${error instanceof Error ? error.message : String(error)})` })
    return Math.min(Math.max(retryMs * 2, 500), 5000)
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
    const response = await apiFetch(`/api/threads/${encodeURIComponent(this.state.threadId)}`, { signal: this.controller.signal })
    if (response.status === 401) throw new UnauthorizedError()
    if (response.status >= 500) throw new Error(`${response.status} ${response.statusText}`) // a proxy in front of a server that is away
    if (!response.ok) return []
    const body = (await response.json()) as { runs: RunSummary[]; now?: number }
    if (typeof body.now === 'number') this.clockOffset = body.now - Date.now()
    return body.runs
  }

  /** Take the run's start and end from its record, on this tab's clock, and its sandbox's id. */
  private times(record: RunSummary): void {
    if (record.runId !== this.state.runId) return
    this.set({ startedAt: record.startedAt - this.clockOffset, finishedAt: record.finishedAt === null ? undefined : record.finishedAt - this.clockOffset, sandboxId: record.sandboxId ?? undefined })
  }

  /** A stopped run's captured changes (404: none were captured, e.g. it was stopped while its sandbox booted). */
  private async loadStoppedChanges(runId: string, generation: number): Promise<void> {
    const response = await apiFetch(`/api/runs/${encodeURIComponent(runId)}/changes`, { signal: this.controller.signal }).catch(() => undefined)
    if (!response?.ok || generation !== this.generation) return
    this.set({ stopped: (await response.json()) as StoppedChanges })
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
