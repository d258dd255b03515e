/**
 * Secret-leak search for tests: the forms a token can take on the wire
 * (raw, base64, inside a git Basic auth header), a walk of a directory tree
 * that reports every file holding one, and renderings of arbitrary values
 * (JSON that survives cycles and errors, plus `util.inspect`) to search in.
 * It only reads; reports name the secret, never its value.
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { join, relative } from 'node:path'
import { inspect } from 'node:util'

/** One form of a secret to look for. */
export interface Needle {
  /** What it is, e.g. `GIT_TOKEN (base64)`; safe to print. */
  readonly label: string
  readonly text: string
}

/**
 * The forms of `value` worth searching for: the value, its base64, and the
 * base64 of `x-access-token:<value>` (what a git Basic auth header carries).
 */
export function needlesFor(name: string, value: string): Needle[] {
  const b64 = (text: string) => Buffer.from(text).toString('base64')
  return [
    { label: name, text: value },
    { label: `${name} (base64)`, text: b64(value) },
    { label: `${name} (git Basic header)`, text: b64(`x-access-token:${value}`) },
  ]
}

/** Labels of the needles found in `text`. */
export function hits(text: string, needles: readonly Needle[]): string[] {
  return needles.filter((n) => text.includes(n.text)).map((n) => n.label)
}

/**
 * Every file under `dir` holding a needle: regular files by content, symlinks
 * by target (not followed). Paths are relative to `dir`.
 * @returns `path: label` strings, sorted.
 */
export function filesContaining(dir: string, needles: readonly Needle[]): string[] {
  const found: string[] = []
  const walk = (path: string) => {
    const info = lstatSync(path)
    const rel = relative(dir, path) || '.'
    if (info.isSymbolicLink()) {
      for (const label of hits(readlinkSync(path), needles)) found.push(`${rel} (link target): ${label}`)
    } else if (info.isDirectory()) {
      for (const name of readdirSync(path)) walk(join(path, name))
    } else if (info.isFile()) {
      const content = readFileSync(path)
      for (const n of needles) if (content.includes(n.text)) found.push(`${rel}: ${n.label}`)
    }
  }
  walk(dir)
  return found.sort()
}

/** How many files `filesContaining` would read under `dir` (so a search of an empty tree is not mistaken for a clean one). */
export function countFiles(dir: string): number {
  const info = lstatSync(dir)
  if (!info.isDirectory()) return info.isFile() ? 1 : 0
  return readdirSync(dir).reduce((n, name) => n + countFiles(join(dir, name)), 0)
}

/**
 * JSON of any value: cycles become `"[Circular]"`, errors keep name, message,
 * stack, cause and own fields, functions their name, bigints their digits,
 * Maps and Sets their entries.
 */
export function safeJson(value: unknown): string {
  const seen = new WeakSet<object>()
  return (
    JSON.stringify(value, function (_key, v: unknown) {
      if (typeof v === 'bigint') return v.toString()
      if (typeof v === 'function') return `[Function ${v.name}]`
      if (typeof v !== 'object' || v === null) return v
      if (seen.has(v)) return '[Circular]'
      seen.add(v)
      if (v instanceof Error) return { ...Object.fromEntries(Object.entries(v)), name: v.name, message: v.message, stack: v.stack, cause: v.cause }
      if (v instanceof Map) return [...v.entries()]
      if (v instanceof Set) return [...v.values()]
      return v
    }) ?? String(value)
  )
}

/** Every rendering of `value` a log sink or error reporter might produce: JSON (above) and `util.inspect` with hidden fields. */
export function renderings(value: unknown): string[] {
  return [safeJson(value), inspect(value, { depth: 12, showHidden: true, breakLength: Infinity })]
}

/**
 * What an error shows wherever it ends up: `message`, `String()`, the stack,
 * plain `JSON.stringify`, the renderings above, and the same for each
 * `cause` down the chain.
 */
export function errorTexts(error: unknown): string[] {
  const out: string[] = []
  const seen = new Set<unknown>()
  for (let e: unknown = error; e !== undefined && e !== null && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e)
    out.push(String(e), safePlainJson(e), ...renderings(e))
    if (e instanceof Error) out.push(e.message, e.stack ?? '')
  }
  return out
}

function safePlainJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? ''
  } catch (error) {
    return `JSON.stringify threw: ${String(error)}`
  }
}
