/**
 * Words whose value the shell computes from patterns: unquoted glob
 * characters (`*`, `?`, `[…]`) and brace expressions (`{a,b}`, `{1..3}`).
 * The quote-aware pass of `command-line.ts` writes those characters as the
 * private-use marks below, so that after quote removal a word still tells a
 * pattern character from a quoted literal one. Invariant: a mark only ever
 * stands for a character that was unquoted on the line.
 */

/** Unquoted `*`, `?` and `[`: glob characters. */
export const GLOB_STAR = '\uE000'
export const GLOB_ONE = '\uE001'
export const GLOB_OPEN = '\uE002'
/** Unquoted `{`, `,` and `}`: brace expression characters. */
export const BRACE_OPEN = '\uE003'
export const BRACE_COMMA = '\uE004'
export const BRACE_CLOSE = '\uE005'

const MARKS: Readonly<Record<string, string>> = { '*': GLOB_STAR, '?': GLOB_ONE, '[': GLOB_OPEN, '{': BRACE_OPEN, ',': BRACE_COMMA, '}': BRACE_CLOSE }
const PLAIN: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(MARKS).map(([ch, mark]) => [mark, ch]))

/** The mark for an unquoted character, or the character itself when it is not special. */
export function markUnquoted(ch: string): string {
  return MARKS[ch] ?? ch
}

/** A word with every mark written back as the character it stands for. */
export function plainWord(word: string): string {
  return word.replace(/[\uE000-\uE005]/g, (mark) => PLAIN[mark]!)
}

/** Whether a word (or a form joined from words) holds a glob the shell would expand. */
export function hasGlob(word: string): boolean {
  return /[\uE000\uE001\uE002]/.test(word)
}

/**
 * Keep the glob marks of a word that bash would treat as a pattern and write
 * back the rest: a `[` is a pattern only with a later `]`.
 * @example
 * ```ts
 * globWord('[') // '[' (no closing bracket: literal)
 * ```
 */
export function globWord(word: string): string {
  let out = ''
  for (let i = 0; i < word.length; i++) {
    const ch = word[i]!
    out += ch === GLOB_OPEN && word.indexOf(']', i + 2) === -1 ? '[' : ch
  }
  return out
}
