/**
 * The run page: a prompt and Start/Stop, the transcript (streamed text, tool
 * cards), the live file tree and the final diff. All run state lives in
 * `RunSession`; this file only renders it. `data-testid`s are what the
 * browser tests read.
 */
import { useEffect, useMemo, useRef, useState } from 'react'
import { apiFetch, UNAUTHORIZED_MESSAGE, useUnauthorized } from './auth.js'
import { RunSession, type RunViewState } from './run-session.js'
import { currentThread, rememberThread } from './session.js'
import { describeInput, type FileState, type Transcript } from './transcript.js'

/** Phases in which Start waits; Stop is offered only while the agent may be working. */
const BUSY = new Set(['loading', 'starting', 'streaming', 'replaying', 'reconnecting', 'stopping'])
const STOPPABLE = new Set(['starting', 'streaming', 'reconnecting'])
/** Phases after which nothing more arrives. */
const ENDED = new Set(['completed', 'failed', 'aborted'])

/** What `GET /api/sample` says: the sample task and files, and how the server runs agents. */
interface Sample {
  task: string
  files: string[]
  /** `offline`: the scripted mock model; `live`: the real API. */
  mode: 'offline' | 'live'
  provider: string
}

export function RunPage() {
  const unauthorized = useUnauthorized()
  const [threadId, setThreadId] = useState(currentThread)
  const [view, setView] = useState<RunViewState | undefined>()
  const [sample, setSample] = useState<Sample>({ task: '', files: [], mode: 'offline', provider: 'local-process' })
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
      {sample.mode === 'offline' && sample.task !== '' && prompt.trim() !== sample.task && (
        <p className="hint" data-testid="offline-hint">
          Offline, the mock model only knows the sample task; anything else gets a short reply saying so.{' '}
          <button type="button" className="link" onClick={() => setPrompt(sample.task)}>Use the sample task</button>
        </p>
      )}
      {view && <RunView view={view} sampleFiles={sample.files} />}
    </main>
  )
}

function newThread(): string {
  const threadId = `thread-${crypto.randomUUID()}`
  rememberThread(threadId)
  return threadId
}

function RunView({ view, sampleFiles }: { view: RunViewState; sampleFiles: string[] }) {
  return (
    <div className="run">
      <div className="run-head">
        <span className={`phase phase-${view.phase}`} data-testid="run-status" data-status={view.phase}>{view.phase}</span>
        {view.runId && <span className="meta" data-testid="run-id">{view.runId}</span>}
        <span className="meta" data-testid="last-event-id">last event {view.lastEventId ?? '–'}</span>
        {view.error && <span className="error" data-testid="run-notice">{view.error}</span>}
      </div>
      {view.prompt && <p className="user-prompt">{view.prompt}</p>}
      <div className="columns">
        <TranscriptView transcript={view.transcript} ended={ENDED.has(view.phase)} />
        <aside>
          <FileTree sampleFiles={sampleFiles} files={view.transcript.files} />
          <DiffView diffs={view.transcript.diffs} />
        </aside>
      </div>
    </div>
  )
}

/** `ended`: the run is over, so a tool call without a result will never get one (the run was stopped or failed). */
function TranscriptView({ transcript, ended }: { transcript: Transcript; ended: boolean }) {
  return (
    <section className="transcript" data-testid="transcript">
      {transcript.items.map((item) => {
        if (item.kind === 'tool') {
          const card = transcript.tools[item.id]
          if (!card) return null
          return (
            <div key={`tool-${item.id}`} className="tool-card" data-testid="tool-card" data-tool-call-id={card.id} data-done={card.result !== undefined}>
              <div className="tool-name">{card.name}</div>
              <pre className="tool-input">{describeInput(card)}</pre>
              {card.result !== undefined ? (
                <pre className="tool-result">{card.result}</pre>
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
          <p key={`${item.kind}-${item.id}`} className={item.kind} data-testid={item.kind === 'text' ? 'text' : 'reasoning'} data-message-id={item.id}>
            {item.text}
          </p>
        )
      })}
      {transcript.end?.kind === 'error' && (
        <p className="error" data-testid="run-error">
          {transcript.end.code ? `${transcript.end.code}: ` : ''}
          {transcript.end.message}
        </p>
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

function DiffView({ diffs }: { diffs: { path: string; diff: string }[] }) {
  if (diffs.length === 0) return null
  return (
    <section className="diffs" data-testid="diff">
      <h2>Changes</h2>
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
