/**
 * Whether a policy glob and a command form holding shell globs could meet:
 * some text matches both. `git p*sh` (the shell may expand it to `push`)
 * meets the rule `git push *`. Used for deny and ask rules only; an allow
 * rule never matches a glob word. A policy `*` spans anything, spaces
 * included; a shell glob stays inside one word (no spaces).
 */
import { GLOB_ONE, GLOB_OPEN, GLOB_STAR } from './glob-word.js'

type Token = { kind: 'char'; ch: string } | { kind: 'one' } | { kind: 'star' } | { kind: 'class'; has: (ch: string) => boolean }

/**
 * Whether some text matches both the policy glob `rule` and the marked form.
 * @example
 * ```ts
 * globsOverlap('git push *', 'git p\uE000sh') // true
 * ```
 */
export function globsOverlap(rule: string, form: string): boolean {
  const normalised = rule.trim().replace(/\s+/g, ' ')
  const formTokens = formTokensOf(form)
  if (normalised.endsWith(' *') && meets(ruleTokensOf(normalised.slice(0, -2)), formTokens)) return true
  return meets(ruleTokensOf(normalised), formTokens)
}

function ruleTokensOf(rule: string): Token[] {
  return [...rule].map((ch) => (ch === '*' ? { kind: 'star' } : ch === '?' ? { kind: 'one' } : { kind: 'char', ch }))
}

function formTokensOf(form: string): Token[] {
  const tokens: Token[] = []
  for (let i = 0; i < form.length; i++) {
    const ch = form[i]!
    if (ch === GLOB_STAR) tokens.push({ kind: 'star' })
    else if (ch === GLOB_ONE) tokens.push({ kind: 'one' })
    else if (ch === GLOB_OPEN) {
      const end = form.indexOf(']', i + 2)
      tokens.push({ kind: 'class', has: bracketClass(form.slice(i + 1, end)) })
      i = end
    } else tokens.push({ kind: 'char', ch })
  }
  return tokens
}

/** A bracket expression's body (`a-z`, `!x`) as a membership test. */
function bracketClass(body: string): (ch: string) => boolean {
  const negated = body.startsWith('!') || body.startsWith('^')
  const set = negated ? body.slice(1) : body
  return (ch) => {
    let found = false
    for (let i = 0; i < set.length; i++) {
      if (set[i + 1] === '-' && i + 2 < set.length) {
        if (ch >= set[i]! && ch <= set[i + 2]!) found = true
        i += 2
      } else if (set[i] === ch) found = true
    }
    return ch !== ' ' && found !== negated
  }
}

/** One character both tokens accept exists (a shell glob never spans a space). */
function compatible(rule: Token, form: Token): boolean {
  if (rule.kind !== 'char') return true
  if (form.kind === 'char') return form.ch === rule.ch
  if (form.kind === 'class') return form.has(rule.ch)
  return rule.ch !== ' '
}

/** Non-empty intersection of two token sequences: a search over pairs of positions. */
function meets(rule: Token[], form: Token[]): boolean {
  const seen = new Set<number>()
  const stack: [number, number][] = [[0, 0]]
  while (stack.length > 0) {
    const [i, j] = stack.pop()!
    const key = i * (form.length + 1) + j
    if (seen.has(key)) continue
    seen.add(key)
    if (i === rule.length && j === form.length) return true
    const r = rule[i]
    const f = form[j]
    if (r?.kind === 'star') stack.push([i + 1, j])
    if (f?.kind === 'star') stack.push([i, j + 1])
    if (r && f && compatible(r, f)) {
      const ni = r.kind === 'star' ? i : i + 1
      const nj = f.kind === 'star' ? j : j + 1
      if (ni !== i || nj !== j) stack.push([ni, nj])
      if (r.kind === 'star' && f.kind === 'star') stack.push([i + 1, j + 1])
    }
  }
  return false
}
