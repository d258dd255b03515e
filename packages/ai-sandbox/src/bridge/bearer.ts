/**
 * The bridge's bearer check: a constant-time comparison of an
 * `Authorization: Bearer <token>` header against a token's digest, shared by
 * the node:http transport and the routed one.
 */
import { createHash, timingSafeEqual } from 'node:crypto'

/** Constant-time check of an `Authorization: Bearer <token>` header (digests make the lengths equal). */
export function authorized(header: string | null, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return timingSafeEqual(digest(match?.[1] ?? ''), expected) && match !== null
}

/** SHA-256 of a token, what {@link authorized} compares against. */
export function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}
