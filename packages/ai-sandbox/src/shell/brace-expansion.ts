/**
 * Bash brace expansion over a marked word (`glob-word.ts`): `{a,b}`,
 * nested lists and `{1..3}`/`{a..c}` ranges (with a step, and zero-padded
 * like bash: `{01..03}`), as bash expands them before
 * globbing. Bounded: past `MAX_WORDS` results a brace expression becomes a
 * `*` glob instead, so the policy still sees "could be anything here".
 * Invariant: a word without a complete brace expression comes back as it is.
 */
import { BRACE_CLOSE, BRACE_COMMA, BRACE_OPEN, GLOB_STAR } from './glob-word.js'

/** More words than this from one word and the expression is read as a glob. */
const MAX_WORDS = 64
const RANGE = /^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$/

/**
 * The words a marked word expands to, and whether it held a brace expression.
 * Braces that form no expression (`{}`, `{a}`) are written back as literals.
 * @example
 * ```ts
 * expandBraces('\uE003a\uE004b\uE005x') // { words: ['ax', 'bx'], expanded: true }
 * ```
 */
export function expandBraces(word: string): { words: string[]; expanded: boolean } {
  const words = expand(word, 0)
  if (words === undefined) return { words: [literal(word.replace(/\uE003[^\uE003\uE005]*\uE005/g, GLOB_STAR))], expanded: true }
  const expanded = words.length !== 1 || words[0] !== word
  return { words: expanded ? words.map(literal).filter((w) => w !== '') : [literal(word)], expanded }
}

/** Remaining brace marks written back as the characters. */
function literal(word: string): string {
  return word.replace(/[\uE003-\uE005]/g, (mark) => (mark === BRACE_OPEN ? '{' : mark === BRACE_COMMA ? ',' : '}'))
}

function expand(word: string, depth: number): string[] | undefined {
  if (depth > 8) return undefined
  for (let open = word.indexOf(BRACE_OPEN); open !== -1; open = word.indexOf(BRACE_OPEN, open + 1)) {
    const close = matchingClose(word, open)
    if (close === -1) continue
    const alternatives = alternativesOf(word.slice(open + 1, close))
    if (alternatives === 'too-many') return undefined
    if (alternatives === undefined) continue
    const results: string[] = []
    for (const alternative of alternatives) {
      const more = expand(word.slice(0, open) + alternative + word.slice(close + 1), depth + 1)
      if (more === undefined) return undefined
      results.push(...more)
      if (results.length > MAX_WORDS) return undefined
    }
    return results
  }
  return [word]
}

function matchingClose(word: string, open: number): number {
  let depth = 0
  for (let i = open; i < word.length; i++) {
    if (word[i] === BRACE_OPEN) depth++
    else if (word[i] === BRACE_CLOSE && --depth === 0) return i
  }
  return -1
}

/** The top-level comma alternatives or the range of a brace body, if it is an expression. */
function alternativesOf(body: string): string[] | 'too-many' | undefined {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < body.length; i++) {
    if (body[i] === BRACE_OPEN) depth++
    else if (body[i] === BRACE_CLOSE) depth--
    else if (body[i] === BRACE_COMMA && depth === 0) {
      parts.push(body.slice(start, i))
      start = i + 1
    }
  }
  if (parts.length > 0) return [...parts, body.slice(start)]
  const range = RANGE.exec(body)
  if (!range) return undefined
  const numeric = /\d/.test(range[1]!) && /\d/.test(range[2]!)
  if (!numeric && (/\d/.test(range[1]!) || /\d/.test(range[2]!))) return undefined
  const from = numeric ? Number(range[1]) : range[1]!.charCodeAt(0)
  const to = numeric ? Number(range[2]) : range[2]!.charCodeAt(0)
  const step = Math.max(1, Math.abs(Number(range[3] ?? 1)))
  if (Math.abs(to - from) / step > MAX_WORDS) return 'too-many'
  // bash pads every term to the width of a zero-padded end (`{01..03}` → 01 02 03, `{-01..1}` → -01 000 001).
  const width = numeric ? Math.max(paddedWidth(range[1]!), paddedWidth(range[2]!)) : 0
  const out: string[] = []
  for (let v = from; from <= to ? v <= to : v >= to; v += from <= to ? step : -step) out.push(numeric ? padded(v, width) : String.fromCharCode(v))
  return out
}

/** The width bash pads a range to when this end has a leading zero (`05`, `-03`), else 0. */
function paddedWidth(end: string): number {
  return /^-?0\d/.test(end) ? end.length : 0
}

/** A number written as `printf '%0*d'` writes it: the sign counts towards the width. */
function padded(value: number, width: number): string {
  const digits = String(Math.abs(value)).padStart(value < 0 ? width - 1 : width, '0')
  return value < 0 ? `-${digits}` : digits
}
