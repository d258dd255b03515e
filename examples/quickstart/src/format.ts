/**
 * One-line summaries of Claude Code tool calls and results for the terminal,
 * plus small number formatting. Pure: strings in, strings out, no IO, no
 * colour (the reporter adds colour). Invariant: every summary is a single
 * line of at most `width` characters.
 */

/** Longest summary printed, in characters. */
export const SUMMARY_WIDTH = 96

/** Collapse whitespace and cut to `width` characters with an ellipsis. */
export function oneLine(text: string, width = SUMMARY_WIDTH): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length <= width ? flat : `${flat.slice(0, width - 1)}…`
}

/** A path inside the workspace shown relative to it (`/ws/src/a.ts` → `src/a.ts`). */
export function relativePath(path: unknown, workspaceRoot: string | undefined): string {
  const text = typeof path === 'string' ? path : String(path)
  if (workspaceRoot && text.startsWith(`${workspaceRoot}/`)) return text.slice(workspaceRoot.length + 1)
  return text
}

function lineCount(text: unknown): number {
  return typeof text === 'string' && text !== '' ? text.replace(/\n$/, '').split('\n').length : 0
}

/**
 * Summarise a tool call's arguments: the file for file tools, the command for Bash, short JSON otherwise.
 * @param name - The tool name, e.g. `Edit`.
 * @param input - The parsed arguments (or the raw string when they were not JSON).
 * @param workspaceRoot - Strip this prefix from paths.
 * @example
 * ```ts
 * summarizeToolCall('Edit', { file_path: '/ws/a.js', old_string: 'x', new_string: 'x\ny' }, '/ws') // 'a.js (-1 +2 lines)'
 * ```
 */
export function summarizeToolCall(name: string, input: unknown, workspaceRoot?: string): string {
  const args = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>
  switch (name) {
    case 'Read':
      return oneLine(relativePath(args.file_path, workspaceRoot))
    case 'Write':
      return oneLine(`${relativePath(args.file_path, workspaceRoot)} (${lineCount(args.content)} lines)`)
    case 'Edit':
      return oneLine(`${relativePath(args.file_path, workspaceRoot)} (-${lineCount(args.old_string)} +${lineCount(args.new_string)} lines)`)
    case 'Bash':
      return oneLine(`$ ${String(args.command ?? '')}`)
    case 'Glob':
    case 'Grep':
      return oneLine(String(args.pattern ?? JSON.stringify(args)))
    default:
      return oneLine(typeof input === 'string' ? input : JSON.stringify(input ?? {}))
  }
}

/** Test-runner verdict lines (`# pass 2`, `Tests: 3 passed`, `ℹ fail 0`), the part of a test run worth one line. */
const VERDICT = /^[#ℹ\s]*(tests?|pass(ed)?|fail(ed)?)\b[:\s]/i

/**
 * Summarise a tool result: `N lines` for reads, test verdicts for test runs,
 * otherwise the first line and a line count. Workspace paths are shown relative.
 * @example
 * ```ts
 * summarizeToolResult('Bash', 'ok 1\nok 2\n') // 'ok 1 (+1 more lines)'
 * summarizeToolResult('Bash', 'TAP version 13\n# pass 2\n# fail 0\n') // 'pass 2, fail 0'
 * ```
 */
export function summarizeToolResult(name: string, content: string, workspaceRoot?: string): string {
  const text = workspaceRoot ? content.replaceAll(`${workspaceRoot}/`, '') : content
  const lines = text.replace(/\n$/, '').split('\n').filter((line) => line.trim() !== '')
  if (lines.length === 0) return '(no output)'
  if (name === 'Read') return `${lines.length} lines`
  const verdicts = lines.filter((line) => VERDICT.test(line)).map((line) => line.replace(/^[#ℹ\s]+/, ''))
  if (verdicts.length > 0) return oneLine(verdicts.join(', '))
  const first = oneLine(lines[0]!, SUMMARY_WIDTH - 20)
  return lines.length === 1 ? first : `${first} (+${lines.length - 1} more lines)`
}

/** `1234` → `1,234`. */
export function formatCount(value: number): string {
  return value.toLocaleString('en-US')
}

/** Milliseconds as seconds with one decimal (`1234` → `1.2s`). */
export function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`
}
