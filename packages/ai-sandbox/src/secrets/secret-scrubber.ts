/**
 * The secret scrubber: one function per run, built from its secret values,
 * that removes every secret from what leaves the package (chunks, errors,
 * logs) in the forms likely to be printed. Invariant: a string holding a known
 * form never leaves unchanged; others come back as they were. Not caught:
 * see docs/provisioning.md. One file: every encoding feeds one matcher.
 * Design notes: docs/design/secrets.md
 */
import type { StreamChunk } from '@tanstack/ai'

/** A secret value shorter than this many characters is left alone: replacing it would mangle ordinary text. */
export const MIN_SECRET_CHARS = 4

/** An encoded form shorter than this many characters is left alone, for the same reason. */
export const MIN_ENCODED_CHARS = 6

/** The shortest piece of a form that `fragments` replaces: a start or an end of a form, of this many characters or more. */
export const MIN_FRAGMENT_CHARS = 8

/** How deep `deep` walks objects and arrays; deeper values are replaced by a marker rather than passed on unread. */
const MAX_DEPTH = 32

/** A named secret value: the name is what the replacement says (`[secret NAME]`). */
export type NamedSecret = readonly [name: string, value: string]

/** What {@link createSecretScrubber} returns. */
export interface SecretScrubber {
  /** True when there is nothing to scrub (no secret of {@link MIN_SECRET_CHARS}+ characters). */
  readonly empty: boolean
  /** `text` with every form of every secret replaced by `[secret NAME]`. */
  text: (text: string) => string
  /**
   * `text`, and also every start or end of a form of {@link MIN_FRAGMENT_CHARS}+
   * characters: for texts that may hold a piece of a secret cut elsewhere (a
   * raw CLI line carrying one delta of a streamed text, one line of wrapped
   * base64). Meant for logs: it may also replace harmless text that happens
   * to start like a secret.
   */
  fragments: (text: string) => string
  /**
   * `value` with `text` applied to every string inside it (plain objects,
   * arrays, and errors, which become `{ name, message, stack, reason?, cause? }`
   * records). Returns `value` itself when nothing changed.
   */
  deep: <T>(value: T) => T
  /** A scrubber for one ordered chunk stream (see {@link ChunkStreamScrubber}). */
  stream: () => ChunkStreamScrubber
}

/**
 * Scrubs one ordered stream of chunks. Every string field is scrubbed; the
 * `delta` of a streamed text (`*_CONTENT`, `*_ARGS`, `*_CHUNK` chunks, per
 * `messageId`/`toolCallId`) is scrubbed as one text with the deltas before
 * it, so a secret split across two deltas is still caught.
 */
export interface ChunkStreamScrubber {
  /** The chunks to pass on for `chunk`: none (its delta is held back), one, or the held text of its message first (at an `*_END`, a terminal chunk). */
  push: (chunk: StreamChunk) => StreamChunk[]
  /** The held-back text of every open message, as delta chunks; call when the stream ends without a terminal chunk. */
  end: () => StreamChunk[]
}

/**
 * The encoded forms of `value` that a scrubber looks for, longest first
 * (duplicates and forms equal to the raw value removed).
 *
 * @param value - A secret value.
 * @returns The raw value, then every encoded form of {@link MIN_ENCODED_CHARS}+ characters.
 * @example
 * ```ts
 * secretForms('hunter2-token') // ['hunter2-token', 'aHVudGVyMi10b2tlbg==', '68756e746572322d746f6b656e', …]
 * ```
 */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8')
  const encoded = new Set<string>()
  const add = (form: string) => {
    if (form.length >= MIN_ENCODED_CHARS && form !== value) encoded.add(form)
  }
  // JSON string escapes as common serializers write them: plain, `\/` (PHP), `\u00XX` for `<>&` (Go's
  // HTML-safe default), every non-ASCII character as `\uXXXX` (Python's ensure_ascii), and escaped twice
  // (JSON inside a JSON string, as tool results often carry).
  const json = JSON.stringify(value).slice(1, -1)
  const unicode = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`
  for (const form of [json, json.replace(/\//g, '\\/'), json.replace(/[<>&]/g, unicode), json.replace(/[^ -~]/g, unicode)]) {
    add(form)
    add(JSON.stringify(form).slice(1, -1))
  }
  const standard = bytes.toString('base64')
  for (const b64 of [standard, bytes.toString('base64url')]) {
    add(b64)
    add(b64.replace(/=+$/, ''))
  }
  add(`${bytes.toString('base64url')}${standard.slice(standard.replace(/=+$/, '').length)}`)
  // Embedded in a longer base64 text, the secret starts at byte offset 0, 1 or 2 of a 3-byte group;
  // only the characters whose 6 bits all come from the secret are fixed, whatever surrounds it.
  for (let offset = 0; offset < 3; offset++) {
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64')
    const first = Math.ceil((8 * offset) / 6)
    const end = Math.floor((8 * (offset + bytes.length)) / 6)
    const core = shifted.slice(first, end)
    add(core)
    add(core.replace(/\+/g, '-').replace(/\//g, '_'))
  }
  const uri = encodeURIComponent(value)
  add(uri)
  add(uri.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()))
  add(new URLSearchParams([['', value]]).toString().slice(1))
  // `encodeURI` leaves reserved characters (`/+=&`...) as they are: a URL path or a half-encoded query.
  add(encodeURI(value))
  // Every byte escaped, letters and digits too (`%73%6B%2D…`): what a hand-rolled or paranoid encoder writes,
  // and what `decodeURIComponent` restores all the same. Upper- and lower-case hex; mixed case is not listed.
  const everyByte = [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')
  add(everyByte)
  add(everyByte.toUpperCase())
  const hex = bytes.toString('hex')
  add(hex)
  add(hex.toUpperCase())
  return [value, ...[...encoded].sort((a, b) => b.length - a.length)]
}

/**
 * Build the scrubber of one run.
 *
 * @param secrets - `[name, value]` pairs; values shorter than {@link MIN_SECRET_CHARS} are skipped. Read once, now.
 * @returns A {@link SecretScrubber}; with no usable secret, one that returns everything unchanged.
 * @example
 * ```ts
 * const scrub = createSecretScrubber([['GH_TOKEN', 'ghp_1234567890']])
 * scrub.text(`echo ${Buffer.from('ghp_1234567890').toString('base64')}`) // 'echo [secret GH_TOKEN]'
 * ```
 */
export function createSecretScrubber(secrets: Iterable<NamedSecret>): SecretScrubber {
  const labels = new Map<string, string>()
  // Longer values first, so a secret that contains another is replaced whole.
  const usable = [...secrets].filter(([, value]) => typeof value === 'string' && value.length >= MIN_SECRET_CHARS).sort((a, b) => b[1].length - a[1].length)
  for (const [name, value] of usable) for (const form of secretForms(value)) if (!labels.has(form)) labels.set(form, `[secret ${name}]`)
  const forms = [...labels.keys()].sort((a, b) => b.length - a.length)
  // One pass per string: at each position the longest literal form wins (alternatives are tried in order); then each
  // secret's percent-encoded forms, one capturing group per secret, in the same order as `usable`.
  const percentGroups = usable.map(([, value]) => `(${percentPattern(value)})`)
  const pattern = forms.length > 0 ? new RegExp([...forms.map(escapeRegExp), ...percentGroups].join('|'), 'g') : undefined
  const percentLabels = usable.map(([name]) => `[secret ${name}]`)
  /** The label of a match: a literal form's, or that of the secret whose percent group matched. */
  const labelOf = (found: string, groups: (string | undefined)[]): string => labels.get(found) ?? percentLabels[groups.findIndex((group) => group !== undefined)] ?? '[secret]'
  const maxForm = forms[0]?.length ?? 0
  /** Every proper prefix of every form: what a delta's tail must be to be held back. */
  const prefixes = new Set<string>()
  for (const form of forms) for (let n = 1; n < form.length; n++) prefixes.add(form.slice(0, n))

  const text = (input: string): string =>
    pattern && input.length >= MIN_SECRET_CHARS ? input.replace(pattern, (found: string, ...rest: unknown[]) => labelOf(found, rest.slice(0, percentGroups.length) as (string | undefined)[])) : input

  /** The start of the longest tail of `input` (at or after `from`) that is a proper prefix of a form; `input.length` when none. */
  const heldFrom = (input: string, from: number): number => {
    for (let i = Math.max(from, input.length - maxForm + 1); i < input.length; i++) if (prefixes.has(input.slice(i))) return i
    return input.length
  }

  /**
   * Scrub a streamed text whose `held` part came before: what to emit now, and
   * what to hold. The held tail is the shortest end of the text that could
   * still grow into a form (a short base64 core may be the start of the padded
   * form), moved back to the start of a match that reaches into it.
   */
  const scrubDelta = (held: string, delta: string): { out: string; hold: string } => {
    const input = held + delta
    if (!pattern) return { out: input, hold: '' }
    let cut = heldFrom(input, 0)
    pattern.lastIndex = 0
    for (let m = pattern.exec(input); m && m.index < cut; m = pattern.exec(input)) {
      if (m.index + m[0].length > cut) {
        cut = m.index
        break
      }
    }
    return { out: text(input.slice(0, cut)), hold: input.slice(cut) }
  }

  const deep = <T>(value: T): T => (pattern ? scrubDeep(value, text) : value)

  const fragments = (input: string): string => {
    const out = text(input)
    if (!pattern || out.length < MIN_FRAGMENT_CHARS) return out
    const ranges: [number, number, string][] = []
    for (const form of forms) {
      if (form.length <= MIN_FRAGMENT_CHARS) continue
      const label = labels.get(form)!
      const head = form.slice(0, MIN_FRAGMENT_CHARS)
      const tail = form.slice(-MIN_FRAGMENT_CHARS)
      for (let at = out.indexOf(head); at !== -1; at = out.indexOf(head, at + 1)) {
        let end = at + MIN_FRAGMENT_CHARS
        while (end < out.length && end - at < form.length && out[end] === form[end - at]) end++
        ranges.push([at, end, label])
      }
      for (let at = out.indexOf(tail); at !== -1; at = out.indexOf(tail, at + 1)) {
        let start = at
        const stop = at + MIN_FRAGMENT_CHARS
        while (start > 0 && stop - start < form.length && out[start - 1] === form[form.length - (stop - start) - 1]) start--
        ranges.push([start, stop, label])
      }
    }
    if (ranges.length === 0) return out
    ranges.sort((a, b) => a[0] - b[0] || b[1] - a[1])
    let result = ''
    let last = 0
    for (const [start, end, label] of ranges) {
      if (end <= last) continue
      result += out.slice(last, Math.max(start, last)) + (start >= last ? label : '')
      last = end
    }
    return result + out.slice(last)
  }

  const stream = (): ChunkStreamScrubber => {
    /** Held text per streamed message, with the last chunk of it (the template for a flushed delta). */
    const open = new Map<string, { hold: string; last: StreamChunk }>()
    const flush = (key: string): StreamChunk[] => {
      const entry = open.get(key)
      open.delete(key)
      return entry && entry.hold !== '' ? [{ ...entry.last, delta: text(entry.hold) } as StreamChunk] : []
    }
    const flushAll = (): StreamChunk[] => [...open.keys()].flatMap(flush)
    return {
      push(chunk) {
        if (!pattern) return [chunk]
        const c = chunk as unknown as Record<string, unknown>
        const key = streamKey(c)
        if (key !== undefined && typeof c.delta === 'string' && /_(CONTENT|ARGS|CHUNK)$/.test(String(c.type))) {
          const entry = open.get(key)
          const { out, hold } = scrubDelta(entry?.hold ?? '', c.delta)
          const scrubbed = deep({ ...c, delta: out }) as unknown as StreamChunk
          open.set(key, { hold, last: scrubbed })
          return out === '' ? [] : [scrubbed]
        }
        const before = c.type === 'RUN_FINISHED' || c.type === 'RUN_ERROR' ? flushAll() : key !== undefined && String(c.type).endsWith('_END') ? flush(key) : []
        return [...before, deep(chunk)]
      },
      end: flushAll,
    }
  }

  return { empty: pattern === undefined, text, fragments, deep, stream }
}

/**
 * Apply a text redactor to every string inside `value`: plain objects and
 * arrays are walked (32 levels at most, cycles cut), errors become
 * `{ name, message, stack, reason?, cause? }` records, other class instances
 * pass unless their text holds something to replace.
 *
 * @param value - Any value.
 * @param text - Replaces secrets in one string.
 * @returns `value` itself when nothing changed, else a scrubbed copy.
 */
export function scrubDeep<T>(value: T, text: (input: string) => string): T {
  return walk(value, text, 0, new Set()) as T
}

/** The stream a delta belongs to: its message or tool call. */
function streamKey(chunk: Record<string, unknown>): string | undefined {
  const id = typeof chunk.toolCallId === 'string' ? chunk.toolCallId : typeof chunk.messageId === 'string' ? chunk.messageId : undefined
  return id === undefined ? undefined : `${typeof chunk.toolCallId === 'string' ? 'tool' : 'message'}:${id}`
}

/** Scrub `value`; `ancestors` are the objects being walked above it (a cycle back to one is cut). */
function walk(value: unknown, text: (input: string) => string, depth: number, ancestors: Set<object>): unknown {
  if (typeof value === 'string') return text(value)
  if (value === null || typeof value !== 'object') return value
  if (depth >= MAX_DEPTH) return '[nested too deep to pass on]'
  if (ancestors.has(value)) return '[circular]'
  ancestors.add(value)
  try {
    return walkObject(value, text, depth, ancestors)
  } finally {
    ancestors.delete(value)
  }
}

function walkObject(value: object, text: (input: string) => string, depth: number, ancestors: Set<object>): unknown {
  if (value instanceof Error) {
    const { reason, cause } = value as { reason?: unknown; cause?: unknown }
    return {
      name: value.name,
      message: text(value.message),
      ...(value.stack ? { stack: text(value.stack) } : {}),
      ...(reason !== undefined ? { reason: walk(reason, text, depth + 1, ancestors) } : {}),
      ...(cause !== undefined ? { cause: walk(cause, text, depth + 1, ancestors) } : {}),
    }
  }
  if (Array.isArray(value)) {
    let changed = false
    const out = value.map((item) => {
      const next = walk(item, text, depth + 1, ancestors)
      if (next !== item) changed = true
      return next
    })
    return changed ? out : value
  }
  const proto = Object.getPrototypeOf(value) as unknown
  if (proto !== Object.prototype && proto !== null) {
    // Class instances (a Date, a Map, a URL) are passed on as they are unless their text holds a secret.
    const shown = String(value)
    const scrubbed = text(shown)
    return scrubbed === shown ? value : scrubbed
  }
  let changed = false
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) {
    const next = walk(item, text, depth + 1, ancestors)
    if (next !== item) changed = true
    out[key] = next
  }
  return changed ? out : value
}

/**
 * A pattern for `value` URL-encoded any way a decoder still reads it: each
 * character as itself or as the `%XX` escapes of its UTF-8 bytes, in upper
 * or lower case, each escape possibly encoded once more (`%2573`: what two
 * `decodeURIComponent`s restore), and a space also as `+`.
 */
function percentPattern(value: string): string {
  const escapeOf = (byte: number): string => {
    const [high, low] = byte.toString(16).padStart(2, '0')
    const digit = (d: string) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)
    return `%(?:25)?${digit(high!)}${digit(low!)}`
  }
  return [...value]
    .map((char) => {
      const escaped = [...Buffer.from(char, 'utf8')].map(escapeOf).join('')
      const literal = char === ' ' ? '[ +]' : escapeRegExp(char)
      return `(?:${literal}|${escaped})`
    })
    .join('')
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
