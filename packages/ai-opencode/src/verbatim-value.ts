/**
 * Values OpenCode reads exactly as declared: a value holding `{env:` or
 * `{file:` goes into a file of its own and the config says `{file:<path>}`,
 * because OpenCode escapes what it reads there and substitutes nothing in it.
 * Pure. Design notes: docs/design/harness-adapters.md
 */

/** A value as it goes into the config text, and the file it needs, if any. */
export interface VerbatimValue {
  /** The string to put in the JSON (before `JSON.stringify`). */
  text: string
  /** A file to create (absolute `path`, exact `content`) before OpenCode starts. */
  file?: { path: string; content: string }
}

/**
 * How to write `value` so that OpenCode ends up with exactly `value`.
 * @param nextFile - Gives an absolute path for a new file (called only when one is needed); it must not contain `}`.
 * @example
 * ```ts
 * verbatimValue('{env:HOME}', () => '/w/.tanstack-opencode/values/hdr.0')
 * // { text: '{file:/w/.tanstack-opencode/values/hdr.0}', file: { path: '/w/.tanstack-opencode/values/hdr.0', content: '{env:HOME}' } }
 * ```
 */
export function verbatimValue(value: string, nextFile: () => string): VerbatimValue {
  if (!value.includes('{env:') && !value.includes('{file:')) return { text: value }
  // OpenCode trims what it reads from the file: the blanks around the value stay in the config itself.
  const lead = /^\s*/.exec(value)![0]
  const rest = value.slice(lead.length)
  const trail = /\s*$/.exec(rest)![0]
  const path = nextFile()
  return { text: `${lead}{file:${path}}${trail}`, file: { path, content: rest.slice(0, rest.length - trail.length) } }
}

/**
 * Whether `{env:NAME}` can stand for a variable holding `value`: OpenCode
 * inserts the value into the JSON text unescaped and then looks for
 * `{file:…}` in the result, so the value may hold no quote, backslash,
 * control character or `{file:`.
 */
export function envSubstitutable(value: string): boolean {
  return !value.includes('{file:') && [...value].every((ch) => ch !== '"' && ch !== '\\' && ch.charCodeAt(0) >= 0x20)
}

/**
 * Whether OpenCode's HTTP client refuses `value` as a header value. Seen with
 * OpenCode 1.18.33 (Bun 1.3.14's fetch) against a logging server: it sends
 * characters up to U+00FF as their UTF-8 bytes, but only in a value of at
 * most 12 characters; a longer non-ASCII value, or any character above
 * U+00FF, makes the connection fail before a request is sent.
 */
export function unsendableHeader(value: string): boolean {
  const codes = [...value].map((ch) => ch.codePointAt(0)!)
  return codes.some((code) => code > 0xff) || (value.length > 12 && codes.some((code) => code > 0x7f))
}
