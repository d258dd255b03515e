/**
 * Secret values as text to take out: the `[name, value]` pairs of a set of
 * references (`namedSecretValues`) and `redactSecrets`, which removes them
 * from text in every encoding the scrubber knows.
 */
import { resolveSecret, type SecretRef } from '../contracts/secret-ref.js'
import { createSecretScrubber, type NamedSecret } from './secret-scrubber.js'

/**
 * The `[name, value]` pairs of `refs` that resolve (an unresolvable reference
 * has no value that could leak). A `bearer()` reference yields both
 * `Bearer <value>` and the raw value.
 * @param refs - Secret references.
 * @returns One or two pairs per resolvable reference.
 */
export function namedSecretValues(refs: Iterable<SecretRef>): NamedSecret[] {
  const out: NamedSecret[] = []
  for (const ref of refs) {
    try {
      const value = resolveSecret(ref)
      out.push([ref.name, value])
      if (ref.format === 'bearer') out.push([ref.name, value.slice('Bearer '.length)])
    } catch {
      continue
    }
  }
  return out
}

/**
 * Replace every occurrence of the given secret values in `text` with
 * `[secret NAME]`, in every form the secret scrubber knows: raw,
 * JSON-escaped, base64 and base64url (also embedded in longer base64 text),
 * URL-encoded and hex. Used on command output and error messages before they
 * leave the package. Values shorter than 4 characters, and encoded forms
 * shorter than 6, are left alone (they would mangle ordinary text).
 *
 * @param text - Any text.
 * @param refs - The secrets to take out; references not made by `createSecrets` are skipped.
 * @returns `text` with each form replaced, longest first.
 * @example
 * ```ts
 * redactSecrets(`token=${btoa(value)}`, Object.values(secrets)) // 'token=[secret GH]'
 * ```
 */
export function redactSecrets(text: string, refs: Iterable<SecretRef>): string {
  return createSecretScrubber(namedSecretValues(refs)).text(text)
}
