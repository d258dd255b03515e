/**
 * The terminal view of a demo run: a progress line (ticking while the
 * sandbox is created on a TTY), streamed reasoning and text, one line per tool
 * call and result, and the closing summary with the diff. Colour only on a
 * TTY without NO_COLOR. Owns cursor state (whether the last write ended a
 * line); it never reads input or changes the run.
 */
import type { DemoResult } from './demo.js'
import { formatCount, formatSeconds, oneLine, summarizeToolCall, summarizeToolResult } from './format.js'
import type { DemoReporter } from './reporter.js'

type Paint = (text: string) => string

/** ANSI styles, or identity functions when colour is off. */
function palette(enabled: boolean) {
  const style = (open: number, close: number): Paint => (text) => (enabled ? `\x1b[${open}m${text}\x1b[${close}m` : text)
  return { dim: style(2, 22), bold: style(1, 22), green: style(32, 39), red: style(31, 39), cyan: style(36, 39), yellow: style(33, 39) }
}

const INDENT = ' '.repeat(9)

/**
 * Create the reporter that prints a run to `out`.
 * @param out - Default `process.stdout`.
 * @param signal - The run's interrupt; when it fires the progress line stops ticking. Default: none.
 * @example
 * ```ts
 * const result = await runDemo({ reporter: createTerminalReporter(process.stdout, signal), signal })
 * printSummary(result)
 * ```
 */
export function createTerminalReporter(out: NodeJS.WriteStream = process.stdout, signal?: AbortSignal): DemoReporter {
  const c = palette(out.isTTY === true && !process.env.NO_COLOR)
  let atLineStart = true
  let block: 'text' | 'reasoning' | undefined
  let workspaceRoot: string | undefined
  let ticker: ReturnType<typeof setInterval> | undefined
  let creatingAt = 0
  const stamp = (at: number) => c.dim(`[${(at / 1000).toFixed(1).padStart(5)}s]`)
  const endLine = () => {
    if (!atLineStart) out.write('\n')
    atLineStart = true
    block = undefined
  }
  const line = (at: number, text: string) => {
    endLine()
    out.write(`${stamp(at)} ${text}\n`)
  }
  signal?.addEventListener('abort', () => {
    clearInterval(ticker)
    endLine()
  }, { once: true })
  const stream = (kind: 'text' | 'reasoning', delta: string) => {
    if (block !== kind) {
      endLine()
      out.write(kind === 'reasoning' ? `${INDENT}${c.dim('thinking: ')}` : INDENT)
      block = kind
    }
    const body = delta.replace(/\n/g, `\n${INDENT}`)
    out.write(kind === 'reasoning' ? c.dim(body) : body)
    atLineStart = false
  }

  return {
    intro(info) {
      out.write(`${c.bold('TanStack AI quickstart')}: Claude Code works on a git repository inside a sandbox\n`)
      const rows: [string, string][] = [
        ['mode', info.mode === 'offline' ? `offline (aimock at ${info.modelUrl}; --live for the real API)` : 'live (Anthropic API)'],
        ['model', info.model],
        ['repo', info.repo],
        ['sandbox', `${info.provider}${c.dim(sandboxNote(info.provider, info.providerDetail))}`],
        ['task', info.task],
      ]
      for (const [key, value] of rows) out.write(`  ${c.dim(key.padEnd(8))} ${value}\n`)
      out.write('\n')
    },
    sandboxCreating(at, info) {
      creatingAt = at
      const what = `creating the sandbox (${info.provider}): clone, ${info.setup.length} setup step${info.setup.length === 1 ? '' : 's'} · ${info.source}`
      if (!out.isTTY) return line(at, `◌ ${what}`)
      // A ticking line must fit the terminal: `\r` cannot climb back over a wrapped line.
      const short = oneLine(what, Math.max(20, (out.columns ?? 80) - 11))
      const started = Date.now()
      out.write(`${stamp(at)} ${c.yellow('◌')} ${short}`)
      atLineStart = false
      ticker = setInterval(() => out.write(`\r${stamp(at + Date.now() - started)} ${c.yellow('◌')} ${short}`), 100)
      ticker.unref() // never what keeps the process alive
    },
    sandboxReady(at, info) {
      clearInterval(ticker)
      if (out.isTTY) {
        out.write('\r\x1b[2K')
        atLineStart = true
      }
      workspaceRoot = info.workspaceRoot
      line(at, `${c.green('✓')} sandbox ready in ${formatSeconds(at - creatingAt)} ${c.dim(info.workspaceRoot)}`)
    },
    session: (at, id) => line(at, `${c.cyan('●')} claude-code session ${c.dim(id)}`),
    reasoning: (_at, delta) => stream('reasoning', delta),
    text: (_at, delta) => stream('text', delta),
    messageEnd: () => endLine(),
    toolCall: (at, call) => line(at, `${c.cyan('→')} ${c.bold(call.name)} ${summarizeToolCall(call.name, call.input, workspaceRoot)}`),
    toolResult: (at, result) => line(at, `${c.dim('←')} ${c.dim(summarizeToolResult(result.name, result.content, workspaceRoot))}`),
    cleanup(at) {
      clearInterval(ticker)
      line(at, c.dim('cleaning up: destroying the sandbox, stopping the model server, removing temp dirs'))
    },
  }
}

/** What isolation the provider gives, as a note after its name. */
function sandboxNote(provider: string, detail: string | undefined): string {
  if (provider === 'local-process') return ' (no isolation: a directory on this machine)'
  if (provider === 'docker') return ` (a container of ${detail ?? 'the image'}; the CLI mounted read-only)`
  return ''
}

/**
 * Print the closing summary: duration, tokens, changed files and their unified diff.
 * @param result - From `runDemo`.
 * @param out - Default `process.stdout`.
 */
export function printSummary(result: DemoResult, out: NodeJS.WriteStream = process.stdout): void {
  const c = palette(out.isTTY === true && !process.env.NO_COLOR)
  const { timings, usage, changes } = result
  const row = (key: string, value: string) => out.write(`  ${c.dim(key.padEnd(9))} ${value}\n`)
  out.write(`\n${c.bold('Summary')}\n`)
  row('duration', `${formatSeconds(timings.totalMs)} ${c.dim(`(sandbox ready ${formatSeconds(timings.sandboxReadyMs)}, first token ${formatSeconds(timings.firstTokenMs)})`)}`)
  row('tokens', `${formatCount(usage.inputTokens)} in, ${formatCount(usage.outputTokens)} out ${c.dim(`(${result.toolCalls} tool calls)`)}`)
  if (result.sessionId) {
    // The demo has already destroyed the sandbox and its HOME, where Claude Code kept the session.
    row('session', `${result.sessionId} ${c.dim('(not resumable here: this demo deleted its sandbox at the end)')}`)
    row('', c.dim("in your app, keep the sandbox (reuse: 'thread') and pass modelOptions: { sessionId } to resume"))
  }
  if (changes.files.length === 0) row('files', 'no changes')
  changes.files.forEach((file, index) => row(index === 0 ? 'files' : '', `${file.code.trim().padEnd(2)} ${file.path} ${c.green(`+${file.added}`)} ${c.red(`-${file.removed}`)}`))
  if (changes.diff === '') return
  out.write('\n')
  for (const text of changes.diff.replace(/\n$/, '').split('\n')) {
    const paint = text.startsWith('+++') || text.startsWith('---') ? c.bold : text.startsWith('+') ? c.green : text.startsWith('-') ? c.red : text.startsWith('@@') ? c.cyan : (s: string) => s
    out.write(`${paint(text)}\n`)
  }
}
