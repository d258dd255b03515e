/**
 * The run page: a prompt and Start/Stop, the transcript (streamed text as
 * Markdown, tool cards), the live file tree and the final diff (or, for a
 * stopped run, the diff the server captured before its sandbox went). All run
 * state lives in `RunSession`; this file only renders it. From 360 px wide
 * up: on a narrow screen the transcript and the Workspace/Changes panel are
 * two tabs, and the composer stays at the top of the screen while scrolling
 * (styles.css). Under the composer, the thread's latest portable-snapshot
 * checkpoint and "Restore in a new sandbox". `data-testid`s are what the
 * browser tests read.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState, type ComponentProps } from 'react'
import Markdown, { type Components } from 'react-markdown'
import remarkGfm from 'remark-gfm'
import { apiFetch, UNAUTHORIZED_MESSAGE, useUnauthorized } from './auth.js'
import { RunSession, type RunViewState } from './run-session.js'
import { currentThread, rememberThread } from './session.js'
import { describeInput, type FileState, type Transcript, type Usage } from './transcript.js'

/** Phases in which Start waits; Stop is offered only while the agent may be working. */
const BUSY = new Set(['loading', 'starting', 'streaming', 'replaying', 'reconnecting', 'stopping'])
const STOPPABLE = new Set(['starting', 'streaming', 'reconnecting'])
/** Phases after which nothing more arrives. */
const ENDED = new Set(['completed', 'failed', 'aborted'])
/** What the badge says for a phase, where the record's word is not the user's: `aborted` is a run the user stopped. */
const PHASE_LABEL: Record<string, string> = { aborted: 'stopped' }

/** What `GET /api/sample` says: the sample task and files, and how the server runs agents. */
interface Sample {
  task: string
  /** The second scripted task: prints CHANGES.md and the end of math.js (what the sample wrote, or a restore brought back). */
  showTask: string
  files: string[]
  /** `offline`: the scripted mock model; `live`: the real API. */
  mode: 'offline' | 'live'
  provider: string
}

export function RunPage() {
  const unauthorized = useUnauthorized()
  const [threadId, setThreadId] = useState(currentThread)
  const [view, setView] = useState<RunViewState | undefined>()
  const [sample, setSample] = useState<Sample>({ task: '', showTask: '', files: [], mode: 'offline', provider: 'local-process' })
  const [prompt, setPrompt] = useState('')
  const session = useRef<RunSession | undefined>(undefined)

  useEffect(() => {
    void apiFetch('/api/sample').then(async (response) => {
      if (!response.ok) return // 401: the notice says what to do
      const body = (await response.json()) as Sample
      setSample(body)
      setPrompt((current) => current || body.task)
    })
  }, [])

  useEffect(() => {
    const current = new RunSession(threadId, setView)
    session.current = current
    setView(current.state)
    void current.load()
    return () => current.dispose()
  }, [threadId])

  const busy = view !== undefined && BUSY.has(view.phase)
  return (
    <main>
      <header>
        <h1>sandbox-web</h1>
        <span className="thread" data-testid="thread-id">{threadId}</span>
        <button type="button" disabled={busy} onClick={() => setThreadId(newThread())}>New thread</button>
        <span className="mode" data-testid="mode" data-mode={sample.mode}>{sample.mode === 'live' ? 'live model' : 'offline mock model'} · {sample.provider}</span>
        <a href="/status">Status and reaper</a>
      </header>
      {unauthorized && <p className="error notice" data-testid="unauthorized">{UNAUTHORIZED_MESSAGE}</p>}
      <section className="composer">
        <textarea data-testid="prompt" value={prompt} onChange={(event) => setPrompt(event.target.value)} rows={2} />
        <button type="button" data-testid="start" disabled={busy || prompt.trim() === ''} onClick={() => void session.current?.start(prompt)}>Start</button>
        <button type="button" data-testid="stop" disabled={view === undefined || !STOPPABLE.has(view.phase)} onClick={() => void session.current?.stop()}>Stop</button>
      </section>
      {sample.mode === 'offline' && sample.task !== '' && prompt.trim() !== sample.task && prompt.trim() !== sample.showTask && (
        <p className="hint" data-testid="offline-hint">
          Offline, the mock model only knows the sample task (and one that shows what it wrote); anything else gets a short reply saying so.{' '}
          <button type="button" className="link" onClick={() => setPrompt(sample.task)}>Use the sample task</button>
        </p>
      )}
      <Checkpoints threadId={threadId} busy={busy} runPhase={view?.phase} runId={view?.runId} showTask={sample.mode === 'offline' && sample.showTask !== '' && prompt.trim() !== sample.showTask ? () => setPrompt(sample.showTask) : undefined} />
      {view && <RunView view={view} sampleFiles={sample.files} />}
    </main>
  )
}

/** A checkpoint as `GET /api/threads/:threadId/checkpoints` and the restore route describe it. */
interface CheckpointSummary {
  checkpointId: string
  sequence: number
  runId: string | null
  createdAt: number
  fileCount: number
  bytes: number
}

/**
 * The thread's portable snapshots: the latest checkpoint (every completed run writes one) and "Restore in a new
 * sandbox", which asks the server to destroy the thread's sandbox so the next run gets a new one with the latest
 * checkpoint's files. Re-read whenever the run's phase changes (a completed run has just written one).
 */
function Checkpoints({ threadId, busy, runPhase, runId, showTask }: { threadId: string; busy: boolean; runPhase: string | undefined; runId: string | undefined; showTask: (() => void) | undefined }) {
  const [latest, setLatest] = useState<CheckpointSummary | null | undefined>(undefined)
  const [count, setCount] = useState(0)
  const [notice, setNotice] = useState<{ kind: 'restored' | 'error'; text: string; forRun: string | undefined } | undefined>()
  const [restoring, setRestoring] = useState(false)

  useEffect(() => {
    let live = true
    void apiFetch(`/api/threads/${encodeURIComponent(threadId)}/checkpoints`)
      .then(async (response) => {
        if (!response.ok || !live) return
        const body = (await response.json()) as { checkpoints: CheckpointSummary[]; latest: CheckpointSummary | null }
        if (!live) return
        setLatest(body.latest)
        setCount(body.checkpoints.length)
      })
      .catch(() => undefined) // the server away: the run view says so
    return () => {
      live = false
    }
  }, [threadId, runPhase])

  // A notice belongs to the run that was shown when Restore was pressed: the next run replaces it.
  useEffect(() => setNotice((current) => (current && current.forRun !== runId ? undefined : current)), [runId])
  useEffect(() => setNotice(undefined), [threadId])

  const restore = async () => {
    setRestoring(true)
    try {
      const response = await apiFetch(`/api/threads/${encodeURIComponent(threadId)}/restore`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      const body = (await response.json().catch(() => ({}))) as { error?: string; checkpoint?: CheckpointSummary; destroyedSandboxId?: string | null }
      if (!response.ok || !body.checkpoint) {
        setNotice({ kind: 'error', text: body.error ?? `${response.status} ${response.statusText}`, forRun: runId })
        return
      }
      const { checkpoint } = body
      setLatest(checkpoint)
      const gone = body.destroyedSandboxId ? `Sandbox ${body.destroyedSandboxId} was destroyed. ` : 'The thread had no live sandbox. '
      setNotice({ kind: 'restored', text: `${gone}The next run starts in a new sandbox restored from checkpoint #${checkpoint.sequence} (${plural(checkpoint.fileCount, 'file')}, ${new Date(checkpoint.createdAt).toLocaleTimeString()}).`, forRun: runId })
    } catch (error) {
      setNotice({ kind: 'error', text: `the restore did not reach the server (${String(error)})`, forRun: runId })
    } finally {
      setRestoring(false)
    }
  }

  return (
    <section className="checkpoints" data-testid="checkpoints" data-count={count}>
      {latest ? (
        <span className="meta" data-testid="latest-checkpoint" data-sequence={latest.sequence} data-checkpoint-id={latest.checkpointId}>
          Checkpoint #{latest.sequence} · {new Date(latest.createdAt).toLocaleTimeString()} · {plural(latest.fileCount, 'file')}
        </span>
      ) : (
        <span className="meta" data-testid="latest-checkpoint" data-sequence="0">{latest === null ? 'No checkpoint yet: a completed run writes one' : 'Checkpoints…'}</span>
      )}
      <button type="button" data-testid="restore" disabled={busy || restoring} onClick={() => void restore()} title="Destroy this thread's sandbox; the next run gets a new one with the latest checkpoint's files">
        Restore in a new sandbox
      </button>
      {showTask && latest && (
        <button type="button" className="link" data-testid="use-show-task" onClick={showTask} title="offline: the mock model's second task, which prints CHANGES.md and the end of math.js">
          Ask what the workspace holds
        </button>
      )}
      {notice && (
        <span className={notice.kind === 'error' ? 'error' : 'restored'} data-testid={notice.kind === 'error' ? 'restore-error' : 'restore-notice'}>
          {notice.text}
        </span>
      )}
    </section>
  )
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

function newThread(): string {
  const threadId = `thread-${crypto.randomUUID()}`
  rememberThread(threadId)
  return threadId
}

function RunView({ view, sampleFiles }: { view: RunViewState; sampleFiles: string[] }) {
  // Narrow screens show one pane at a time (styles.css); a new run opens on its transcript.
  const [pane, setPane] = useState<'transcript' | 'changes'>('transcript')
  useEffect(() => setPane('transcript'), [view.runId])
  const ended = ENDED.has(view.phase)
  const stopped = view.phase === 'aborted'
  const diffs = view.transcript.diffs.length > 0 ? view.transcript.diffs : (view.stopped?.files ?? [])
  const changedFiles = Object.keys(view.transcript.files).length
  return (
    <div className="run">
      <div className="run-head">
        <span className={`phase phase-${view.phase}`} data-testid="run-status" data-status={view.phase}>{PHASE_LABEL[view.phase] ?? view.phase}</span>
        {view.startedAt !== undefined && <Elapsed startedAt={view.startedAt} finishedAt={ended ? view.finishedAt : undefined} />}
        {view.transcript.usage && <Tokens usage={view.transcript.usage} />}
        {view.error && <span className="error" data-testid="run-notice">{view.error}</span>}
      </div>
      {view.runId && (
        <div className="run-ids">
          <span className="meta" data-testid="run-id" title="run id">{view.runId}</span>
          <span className="meta" data-testid="last-event-id">last event {view.lastEventId ?? '–'}</span>
          {view.sandboxId && <span className="meta" data-testid="sandbox-id" data-sandbox-id={view.sandboxId} title="the sandbox this run got">sandbox {view.sandboxId}</span>}
        </div>
      )}
      {view.prompt && <p className="user-prompt">{view.prompt}</p>}
      <div className="pane-tabs" role="tablist">
        <button type="button" role="tab" data-testid="pane-transcript" aria-selected={pane === 'transcript'} onClick={() => setPane('transcript')}>Transcript</button>
        <button type="button" role="tab" data-testid="pane-changes" aria-selected={pane === 'changes'} onClick={() => setPane('changes')}>
          Changes{diffs.length > 0 ? ` (${diffs.length})` : changedFiles > 0 ? ` (${changedFiles})` : ''}
        </button>
      </div>
      <div className="columns" data-pane={pane}>
        <TranscriptView transcript={view.transcript} ended={ended} stopped={stopped ? { changedFiles: view.stopped?.files.length } : undefined} />
        <aside>
          <FileTree sampleFiles={sampleFiles} files={view.transcript.files} />
          <DiffView diffs={diffs} captured={view.transcript.diffs.length === 0 ? view.stopped : undefined} />
        </aside>
      </div>
    </div>
  )
}

/** Elapsed time: ticking each second while the run goes on, final once it ended. */
function Elapsed({ startedAt, finishedAt }: { startedAt: number; finishedAt: number | undefined }) {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    if (finishedAt !== undefined) return
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [finishedAt])
  const ms = Math.max(0, (finishedAt ?? now) - startedAt)
  return (
    <span className="elapsed" data-testid="elapsed" data-final={finishedAt !== undefined} data-ms={ms} title={finishedAt !== undefined ? 'took' : 'running for'}>
      {formatDuration(ms)}
    </span>
  )
}

/** `42 s`, `3 min 05 s`, `1 h 02 min`. */
function formatDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000)
  if (seconds < 60) return `${seconds} s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes} min ${String(seconds % 60).padStart(2, '0')} s`
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`
}

function Tokens({ usage }: { usage: Usage }) {
  const count = (n: number) => n.toLocaleString('en-US')
  return (
    <span className="tokens" data-testid="tokens" data-total={usage.total} title={`${count(usage.input)} input, ${count(usage.output)} output tokens`}>
      {count(usage.total)} tokens ({count(usage.input)} in · {count(usage.output)} out){usage.cost !== undefined ? ` · $${usage.cost.toFixed(4)}` : ''}
    </span>
  )
}

/**
 * How the agent's Markdown renders. No raw HTML (react-markdown escapes it; no rehype-raw), link targets pass its
 * default URL filter (no `javascript:`), and images are shown as links, not loaded: an image URL in a prompt-injected
 * reply would otherwise make the browser send whatever the URL carries to any server.
 */
const MARKDOWN: Components = {
  a: ({ node: _node, ...props }) => <a {...props} target="_blank" rel="noopener noreferrer" />,
  img: ({ src, alt }) => (typeof src === 'string' && src !== '' ? <a href={src} target="_blank" rel="noopener noreferrer">{`[image: ${alt || src}]`}</a> : <span>{`[image: ${alt ?? ''}]`}</span>),
}
const REMARK = [remarkGfm]

/** A tool's input or result: clipped to a few lines, with a toggle to show it all when it is longer. */
function Clipped({ text, ...props }: { text: string } & ComponentProps<'pre'>) {
  const ref = useRef<HTMLPreElement>(null)
  const [open, setOpen] = useState(false)
  const [overflows, setOverflows] = useState(false)
  useLayoutEffect(() => {
    const node = ref.current
    if (!node || open) return
    const measure = () => setOverflows(node.scrollHeight > node.clientHeight + 1)
    measure()
    const observer = new ResizeObserver(measure) // the width changes what fits (a phone turned, a window resized)
    observer.observe(node)
    return () => observer.disconnect()
  }, [text, open])
  return (
    <>
      <pre {...props} ref={ref} className={`${props.className ?? ''} ${open ? 'open' : 'clipped'}`}>{text}</pre>
      {(overflows || open) && (
        <button type="button" className="link expand" data-testid="expand" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Show less' : `Show all (${text.split('\n').length} lines)`}
        </button>
      )}
    </>
  )
}

/**
 * `ended`: the run is over, so a tool call without a result will never get one (the run was stopped or failed).
 * `stopped`: the user stopped it; `changedFiles` counts the files of the diff captured at the Stop (`undefined`: none, or not loaded yet).
 */
function TranscriptView({ transcript, ended, stopped }: { transcript: Transcript; ended: boolean; stopped: { changedFiles: number | undefined } | undefined }) {
  return (
    <section className="transcript" data-testid="transcript">
      {transcript.items.map((item) => {
        if (item.kind === 'tool') {
          const card = transcript.tools[item.id]
          if (!card) return null
          return (
            <div key={`tool-${item.id}`} className="tool-card" data-testid="tool-card" data-tool-call-id={card.id} data-done={card.result !== undefined}>
              <div className="tool-name">{card.name}</div>
              <Clipped className="tool-input" text={describeInput(card)} />
              {card.result !== undefined ? (
                <Clipped className="tool-result" text={card.result} />
              ) : ended ? (
                <div className="tool-interrupted" data-testid="tool-interrupted">no result: the run ended before this call finished</div>
              ) : (
                <div className="tool-pending">running…</div>
              )}
            </div>
          )
        }
        if (item.text === '') return null
        return (
          <div key={`${item.kind}-${item.id}`} className={`md ${item.kind}`} data-testid={item.kind === 'text' ? 'text' : 'reasoning'} data-message-id={item.id}>
            <Markdown remarkPlugins={REMARK} components={MARKDOWN}>{item.text}</Markdown>
          </div>
        )
      })}
      {stopped ? (
        <p className="stopped" data-testid="run-stopped">
          Stopped before the agent finished.
          {stopped.changedFiles === undefined ? '' : stopped.changedFiles === 0 ? ' It had changed no files by then.' : ' Changes shows what it had changed by then.'}
        </p>
      ) : (
        transcript.end?.kind === 'error' && (
          <p className="error" data-testid="run-error">
            {transcript.end.code ? `${transcript.end.code}: ` : ''}
            {transcript.end.message}
          </p>
        )
      )}
    </section>
  )
}

function FileTree({ sampleFiles, files }: { sampleFiles: string[]; files: Record<string, FileState> }) {
  const paths = useMemo(() => [...new Set([...sampleFiles, ...Object.keys(files)])].sort(), [sampleFiles, files])
  return (
    <section className="files" data-testid="file-tree">
      <h2>Workspace</h2>
      <ul>
        {paths.map((path) => (
          <li key={path} data-path={path} data-state={files[path] ?? 'unchanged'} className={`file file-${files[path] ?? 'unchanged'}`}>
            {path}
            {files[path] && <span className="badge">{files[path]}</span>}
          </li>
        ))}
      </ul>
    </section>
  )
}

/** `captured`: the diffs are what the server captured when the run was stopped, not the run's own `file.changed` events. */
function DiffView({ diffs, captured }: { diffs: readonly { path: string; diff: string }[]; captured?: { capturedAt: number; truncated: boolean } | undefined }) {
  if (diffs.length === 0) return null
  return (
    <section className="diffs" data-testid="diff" data-captured={captured !== undefined}>
      <h2>Changes</h2>
      {captured && (
        <p className="hint" data-testid="diff-captured">
          As the workspace was when Stop was pressed ({new Date(captured.capturedAt).toLocaleTimeString()}){captured.truncated ? '; cut short, the diff is too large' : ''}.
        </p>
      )}
      {diffs.map(({ path, diff }) => (
        <div key={path} className="diff" data-path={path}>
          <h3>{path}</h3>
          <pre>
            {diff.split('\n').map((line, index) => (
              <span key={index} className={line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : line.startsWith('@@') ? 'hunk' : ''}>
                {line}
                {'\n'}
              </span>
            ))}
          </pre>
        </div>
      ))}
    </section>
  )
}
