/**
 * Secret values out of snapshot bytes: every form of every resolved secret
 * that the secret scrubber knows (raw UTF-8, JSON-escaped, base64 and
 * base64url also when embedded in longer base64, URL-encoded, hex), plus the
 * raw value in UTF-16, is overwritten with zero bytes of the same length,
 * also when line breaks split it (fold, wrapped base64), before the file is
 * hashed or stored (spec 000 "Critical rules"). Invariant: after `zero`, no
 * listed form occurs in the bytes, with or without line breaks; the length
 * never changes and line breaks stay.
 */
import { isSecretRef, type SecretRef } from '../contracts/secret-ref.js'
import { MIN_SECRET_CHARS, secretForms } from '../secrets/secret-scrubber.js'
import { namedSecretValues } from '../secrets/secret-values.js'

/** What {@link createSecretZeroer} returns. */
export interface SecretZeroer {
  /** The secret values in use (at least {@link MIN_SECRET_CHARS} characters), longest first. */
  readonly values: readonly string[]
  /** Overwrite every form of every secret in `bytes` with zeros, in place; returns how many ranges were zeroed. */
  zero: (bytes: Buffer) => number
  /** True when `text` (a path) holds a form of a secret. */
  holdsSecret: (text: string) => boolean
}

/**
 * The resolved values of `secrets`: a `SecretRef` resolves through its
 * registry (a `bearer()` one gives both the header value and the bare token;
 * one that no longer resolves is skipped), a string is taken as it is.
 */
export function resolveSnapshotSecrets(secrets: readonly (SecretRef | string)[]): string[] {
  const refs = secrets.filter((secret): secret is SecretRef => isSecretRef(secret))
  const values = [...secrets.filter((secret): secret is string => typeof secret === 'string'), ...namedSecretValues(refs).map(([, value]) => value)]
  return [...new Set(values.filter((value) => value.length >= MIN_SECRET_CHARS))].sort((a, b) => b.length - a.length)
}

/**
 * Build the zeroer of one capture.
 *
 * Values shorter than {@link MIN_SECRET_CHARS} characters are left alone, as
 * the scrubber does: zeroing every `abc` would corrupt ordinary files. Cost:
 * one `Buffer.indexOf` pass per distinct form (about 12 per secret), and for
 * a file with a line break one regular-expression pass per form.
 *
 * @param values - Resolved secret values, e.g. from {@link resolveSnapshotSecrets}.
 */
export function createSecretZeroer(values: readonly string[]): SecretZeroer {
  const usable = [...new Set(values.filter((value) => value.length >= MIN_SECRET_CHARS))].sort((a, b) => b.length - a.length)
  const forms = [...new Set(usable.flatMap((value) => secretForms(value)))].sort((a, b) => Buffer.byteLength(b) - Buffer.byteLength(a))
  // Longest first, so a form that contains a shorter one is zeroed whole. The raw values in UTF-16 (both byte
  // orders) too: an agent may write a secret with iconv or a Windows tool.
  const utf16 = usable.flatMap((value) => {
    const le = Buffer.from(value, 'utf16le')
    return [le, Buffer.from(le).swap16()]
  })
  const needles = [...forms.map((form) => Buffer.from(form, 'utf8')), ...utf16].sort((a, b) => b.length - a.length)
  // Each form again with a line break allowed between any two bytes (fold, PEM-style base64 wrapping), matched over
  // the bytes as latin1 text so offsets are byte offsets; only files with a line break pay for it.
  const wrapped = needles.map((needle) => new RegExp([...needle.toString('latin1')].map((ch) => ch.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&')).join('(?:\r?\n)?'), 'g'))
  return {
    values: usable,
    zero: (bytes) => {
      let count = 0
      for (const needle of needles) {
        for (let at = bytes.indexOf(needle); at !== -1; at = bytes.indexOf(needle, at + needle.length)) {
          bytes.fill(0, at, at + needle.length)
          count++
        }
      }
      if (bytes.indexOf(0x0a) === -1) return count
      const text = bytes.toString('latin1')
      for (const pattern of wrapped) {
        for (const match of text.matchAll(pattern)) {
          // Zero the secret's bytes, keep the line breaks (the file keeps its lines).
          for (let i = match.index; i < match.index + match[0].length; i++) if (bytes[i] !== 0x0a && bytes[i] !== 0x0d) bytes[i] = 0
          count++
        }
      }
      return count
    },
    holdsSecret: (text) => forms.some((form) => text.includes(form)),
  }
}
