/**
 * The constant-time bearer check of the edge routes, with Web Crypto only
 * (Workers has no `node:crypto.timingSafeEqual` without `nodejs_compat`):
 * both values are hashed with SHA-256 and the digests compared in full, so
 * neither the token's length nor the first differing byte shows in the time taken.
 */

const encoder = new TextEncoder()

/**
 * Whether `presented` carries the expected bearer token, compared in
 * constant time. `presented` may be a whole `Authorization` header
 * (`Bearer <token>`, the scheme in any case) or the bare token; a missing,
 * empty or malformed value is `false`, as is an empty `expected`.
 *
 * @param presented - The request's `Authorization` header (or a bare token), or `null`.
 * @param expected - The token the route requires.
 * @returns `true` only when the tokens are equal.
 * @example
 * ```ts
 * if (!(await timingSafeBearerEqualWeb(request.headers.get('authorization'), env.RUN_TOKEN))) return new Response('unauthorized', { status: 401 })
 * ```
 */
export async function timingSafeBearerEqualWeb(presented: string | null | undefined, expected: string): Promise<boolean> {
  if (typeof expected !== 'string' || expected === '' || typeof presented !== 'string') return false
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(presented)
  const token = match ? match[1]! : presented.trim()
  if (token === '' || /\s/.test(token)) return false
  const [a, b] = await Promise.all([crypto.subtle.digest('SHA-256', encoder.encode(token)), crypto.subtle.digest('SHA-256', encoder.encode(expected))])
  const left = new Uint8Array(a)
  const right = new Uint8Array(b)
  let difference = 0
  for (let i = 0; i < left.length; i++) difference |= left[i]! ^ right[i]!
  return difference === 0
}
