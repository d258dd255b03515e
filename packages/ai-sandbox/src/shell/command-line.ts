/**
 * Reads a shell command line as the simple commands it runs, for the policy
 * judge (`evaluateCommand`): shell-quote plus a quote-aware pass for what it
 * reads differently from bash. Best effort: anything it cannot see into marks
 * the line `opaque`, and the caller must not trust the words alone.
 * One file: the pre-pass and the split share one scanner state.
 * Design notes: docs/design/shell.md
 */
import parseWords from 'shell-quote/parse.js'
import { expandBraces } from './brace-expansion.js'
import { globWord, hasGlob, markUnquoted, plainWord } from './glob-word.js'
import { shellJoin } from './quote.js'

/** A command line split into what it runs. */
export interface CommandLine {
  /** Each simple command's words: quotes removed, braces expanded, redirections left out; a glob word keeps its marks (`glob-word.ts`). */
  commands: string[][]
  /** Command text that runs but is not among `commands`: the bodies of `$(…)`, backticks, `<(…)` and `>(…)`, alias values and the commands they expand. */
  hidden: string[]
  /** The line holds something whose effect the words do not show (substitution, subshell, here-document, output redirection to a file, an unterminated quote, a glob or brace expansion, an alias, …). */
  opaque: boolean
}

/** Written in place of a substitution, so the word around it stays one word. */
const SUBSTITUTION = '__substitution__'
/** Operators that end a simple command. */
const SEPARATORS = new Set([';', '&', '&&', '||', '|', '|&', ';;', ';&', ';;&'])
/** Redirections whose target is a file written to. */
const WRITES = new Set(['>', '>>', '>|', '&>', '&>>', '<>'])
/** Redirections followed by a word that is not a command word. */
const REDIRECTIONS = new Set([...WRITES, '<', '>&', '<&', '<<<', '<<', '<<-'])
/** Files a redirection may write without making the line opaque. */
const HARMLESS_SINKS = new Set(['/dev/null', '/dev/stdout', '/dev/stderr'])

/**
 * Split a command line into its simple commands.
 * @example
 * ```ts
 * splitCommandLine('ls -la; rm -rf "$HOME"') // { commands: [['ls', '-la'], ['rm', '-rf', '$HOME']], hidden: [], opaque: false }
 * ```
 */
export function splitCommandLine(line: string): CommandLine {
  const prepared = prepare(line)
  let tokens: parseWords.ParseEntry[]
  try {
    // Variables stay as written: their value is unknown here.
    tokens = parseWords(prepared.text, (name: string) => `$${name}`)
  } catch {
    const words = plainWord(prepared.text).replace(/[;&|]/g, ' ').trim().split(/\s+/).filter(Boolean)
    return { commands: words.length ? [words] : [], hidden: prepared.hidden, opaque: true }
  }
  const commands: string[][] = []
  let opaque = prepared.opaque
  let words: string[] = []
  const end = () => {
    if (words.length) commands.push(words)
    words = []
  }
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!
    if (typeof token === 'string') {
      const { words: expanded, expanded: braces } = expandBraces(token)
      for (const word of expanded.map(globWord)) {
        if (braces || hasGlob(word)) opaque = true
        words.push(word)
      }
    } else if ('comment' in token) opaque = true
    else if (token.op === 'glob') words.push(token.pattern)
    else if (SEPARATORS.has(token.op)) end()
    else if (REDIRECTIONS.has(token.op)) {
      const next = tokens[i + 1]
      const target = typeof next === 'string' ? next : next && 'op' in next && next.op === 'glob' ? next.pattern : undefined
      if (target !== undefined) i++
      if (token.op === '<<' || token.op === '<<-') opaque = true
      if (WRITES.has(token.op) && !(target !== undefined && HARMLESS_SINKS.has(target))) opaque = true
      if (token.op === '>&' && !(target !== undefined && /^(\d+-?|-)$/.test(target))) opaque = true
    } else {
      // `(`, `)` (subshells, case patterns) and anything unforeseen.
      end()
      opaque = true
    }
  }
  end()
  const aliases = aliasesIn(commands)
  const hidden = [...prepared.hidden]
  if (aliases.found) {
    opaque = true
    hidden.push(...aliases.values.values())
    for (const words of commands) {
      const at = words.findIndex((word) => !ASSIGNMENT.test(word))
      const value = at === -1 ? undefined : aliases.values.get(words[at]!)
      if (value !== undefined) hidden.push(`${value} ${shellJoin(words.slice(at + 1))}`.trim())
    }
  }
  return { commands, hidden, opaque }
}

/** `NAME=value` before a command. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/

/**
 * The aliases a line defines (`alias g=git`, also inside a word such as
 * `eval 'alias g=git'`), and whether it mentions `alias` as a command at all.
 */
function aliasesIn(commands: readonly string[][]): { found: boolean; values: Map<string, string> } {
  const values = new Map<string, string>()
  let found = false
  const define = (words: readonly string[], inWord: boolean) => {
    const at = words.findIndex((word) => word !== 'builtin' && word !== 'command')
    if (words[at] !== 'alias') return
    const definitions = words.slice(at + 1).filter((word) => word.indexOf('=') > 0)
    // In a word (`eval 'alias g=git'`) only a definition counts, not a message that says "alias".
    if (inWord && definitions.length === 0) return
    found = true
    for (const word of definitions) values.set(word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1))
  }
  for (const words of commands) {
    define(words, false)
    for (const word of words.slice(1)) if (/(^|[\s;&|(])alias\s/.test(word)) for (const inner of splitCommandLine(word).commands) define(inner, true)
  }
  return { found, values }
}

interface Prepared {
  text: string
  hidden: string[]
  opaque: boolean
}

/**
 * Rewrite a line so shell-quote reads its operators as bash does: unquoted
 * newlines become `;`, comments go, a `#` inside a word is escaped, line
 * continuations join, an fd number before a redirection goes, substitutions
 * become a placeholder (their bodies go to `hidden`) and here-document
 * bodies are skipped (their substitutions, when the delimiter is unquoted,
 * go to `hidden`).
 */
function prepare(line: string): Prepared {
  const hidden: string[] = []
  let opaque = false
  let text = ''
  let quote: '' | "'" | '"' | "$'" = ''
  let parameterDepth = 0
  const heredocs: { delimiter: string; stripTabs: boolean; expands: boolean }[] = []
  const substitution = (start: number, close: (text: string, from: number) => number): number => {
    opaque = true
    const end = close(line, start)
    hidden.push(line.slice(start, end === -1 ? undefined : end))
    text += SUBSTITUTION
    return end === -1 ? line.length : end
  }
  let i = 0
  while (i < line.length) {
    const ch = line[i]!
    const next = line[i + 1]
    if (quote === "'") {
      text += ch
      if (ch === "'") quote = ''
      i++
    } else if (quote === "$'") {
      if (ch === '\\' && next !== undefined) {
        text += ch + next
        i += 2
        continue
      }
      text += ch
      if (ch === "'") quote = ''
      i++
    } else if (ch === '\\') {
      if (next === '\n') i += 2 // a line continuation joins the lines
      else {
        text += next === undefined ? ch : ch + next
        i += 2
      }
    } else if (ch === '`') {
      i = substitution(i + 1, closingBacktick) + 1
    } else if (ch === '$' && next === '(') {
      i = substitution(i + 2, closingParen) + 1
    } else if (quote === '"') {
      text += ch
      if (ch === '"') quote = ''
      i++
    } else if ((ch === '<' || ch === '>') && next === '(') {
      i = substitution(i + 2, closingParen) + 1
    } else if (ch === "'" || ch === '"') {
      text += ch
      quote = ch
      i++
    } else if (ch === '$' && next === "'") {
      text += "$'"
      quote = "$'"
      i += 2
    } else if (ch === '$' && next === '"') {
      // bash's locale string: read as "…" for deny rules, opaque since a message catalogue may translate it.
      text += '"'
      quote = '"'
      opaque = true
      i += 2
    } else if (ch === '$' && next === '{') {
      text += '${' // a parameter expansion: its braces are not a brace expression
      parameterDepth++
      i += 2
    } else if (parameterDepth > 0 && (ch === '{' || ch === '}')) {
      text += ch
      parameterDepth += ch === '{' ? 1 : -1
      i++
    } else if (ch === '\n') {
      text += ' ; '
      i = skipHeredocBodies(line, i + 1, heredocs, hidden)
    } else if (ch === '#' && atWordStart(text)) {
      while (i < line.length && line[i] !== '\n') i++
    } else if (ch === '#') {
      text += '\\#'
      i++
    } else if (/\d/.test(ch) && atWordStart(text) && /^\d+[<>]/.test(line.slice(i))) {
      while (/\d/.test(line[i]!)) i++ // the fd number of a redirection (`2>&1`) is not a word
    } else if (line.startsWith('<<<', i)) {
      text += '<<<' // a here-string: one word of stdin, not a here-document
      i += 3
    } else if (ch === '<' && next === '<') {
      const heredoc = /^<<(-?)[ \t]*((?:[^\s;&|()<>'"\\]|'[^']*'|"[^"]*"|\\.)+)/.exec(line.slice(i))
      if (!heredoc) {
        text += '<<'
        i += 2
        continue
      }
      const word = heredoc[2]!
      heredocs.push({ delimiter: word.replace(/['"\\]/g, ''), stripTabs: heredoc[1] === '-', expands: !/['"\\]/.test(word) })
      text += `<<${heredoc[1]} ${word.replace(/[^A-Za-z0-9_]/g, '') || 'EOF'}`
      i += heredoc[0].length
    } else {
      text += markUnquoted(ch)
      i++
    }
  }
  if (quote !== '') opaque = true
  return { text, hidden, opaque: opaque || heredocs.length > 0 }
}

/** Whether the next character starts a word (for `#` comments and fd numbers). */
function atWordStart(text: string): boolean {
  return text === '' || /[\s;&|()<>]$/.test(text)
}

/** Skip the bodies of pending here-documents, starting at the line after their operator. */
function skipHeredocBodies(line: string, start: number, heredocs: { delimiter: string; stripTabs: boolean; expands: boolean; done?: boolean }[], hidden: string[]): number {
  let i = start
  for (const heredoc of heredocs) {
    if (heredoc.done) continue
    heredoc.done = true
    let body = ''
    while (i < line.length) {
      const end = line.indexOf('\n', i)
      const row = line.slice(i, end === -1 ? undefined : end)
      i = end === -1 ? line.length : end + 1
      if ((heredoc.stripTabs ? row.replace(/^\t+/, '') : row) === heredoc.delimiter) break
      body += `${row}\n`
    }
    if (heredoc.expands) hidden.push(...substitutionsIn(body))
  }
  return i
}

/** The bodies of the command substitutions in text read like a double-quoted string (a here-document body). */
function substitutionsIn(text: string): string[] {
  const found: string[] = []
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\') i++
    else if (text[i] === '`' || (text[i] === '$' && text[i + 1] === '(')) {
      const start = text[i] === '`' ? i + 1 : i + 2
      const end = text[i] === '`' ? closingBacktick(text, start) : closingParen(text, start)
      found.push(text.slice(start, end === -1 ? undefined : end))
      i = end === -1 ? text.length : end
    }
  }
  return found
}

/** The index of the backtick closing a substitution opened before `from`, or -1. */
function closingBacktick(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    if (text[i] === '\\') i++
    else if (text[i] === '`') return i
  }
  return -1
}

/** The index of the `)` closing a `$(`/`<(`/`>(` opened before `from`, or -1. Honours quotes and nesting. */
function closingParen(text: string, from: number): number {
  let depth = 1
  for (let i = from; i < text.length; i++) {
    const ch = text[i]
    if (ch === '\\') i++
    else if (ch === "'") {
      const end = text.indexOf("'", i + 1)
      if (end === -1) return -1
      i = end
    } else if (ch === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) {
        if (text[i] === '\\') i++
        else if (text[i] === '$' && text[i + 1] === '(') {
          const end = closingParen(text, i + 2)
          if (end === -1) return -1
          i = end
        } else if (text[i] === '`') {
          const end = closingBacktick(text, i + 1)
          if (end === -1) return -1
          i = end
        }
      }
      if (i >= text.length) return -1
    } else if (ch === '`') {
      const end = closingBacktick(text, i + 1)
      if (end === -1) return -1
      i = end
    } else if (ch === '(') depth++
    else if (ch === ')' && --depth === 0) return i
  }
  return -1
}
