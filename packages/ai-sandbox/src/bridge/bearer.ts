/**
 * The run-token checks: a constant-time comparison of a presented token, or
 * of an `Authorization: Bearer <token>` header, against a token's digest,
 * shared by the node:http bridge transport, the routed one and the model
 * proxy (which also takes the token as `x-api-key`).
 */
import { createHash, timingSafeEqual } from 'node:crypto'

/** Constant-time check of an `Authorization: Bearer <token>` header (digests make the lengths equal). */
export function authorized(header: string | null, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return tokenMatches(match?.[1], expected) && match !== null
}

/** Constant-time check of a presented token (a missing one is compared as `''`, so it never matches a real token). */
export function tokenMatches(token: string | null | undefined, expected: Buffer): boolean {
  return timingSafeEqual(digest(token ?? ''), expected) && typeof token === 'string' && token !== ''
}

/** SHA-256 of a token, what {@link authorized} and {@link tokenMatches} compare against. */
export function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}
