/**
 * The two lines a journal's shell writes around the agent's output: the header
 * `{"__journal":1,"__nonceHash":H}` and the exit sentinel
 * `{"__exit":N,"__nonce":X}`. Owns their format and the rule that makes the
 * sentinel unforgeable (sha256 of its nonce matches the header's hash). It
 * never reads a journal. Design notes: docs/design/journal.md
 */
import { createHash, createHmac } from 'node:crypto'
import { JournalError } from './errors.js'

/** The key of the exit sentinel that carries the agent's exit code. Source: spec 000 "Durable runs". */
export const EXIT_SENTINEL_KEY = '__exit'

/** The key of the exit sentinel that carries the run's nonce (see the module doc). Source: spec 003. */
export const EXIT_SENTINEL_NONCE_KEY = '__nonce'

/** The key of the journal header; its value is the header format version, `1`. */
export const JOURNAL_HEADER_KEY = '__journal'

/** The key of the journal header that carries sha256 (hex) of the nonce. */
export const JOURNAL_NONCE_HASH_KEY = '__nonceHash'

/** The key of the header that carries the launch's salt, when the provider keeps a `journalSecret` (see `journalNonce`). */
export const JOURNAL_SALT_KEY = '__salt'

/** The key of a header the shell writes instead when it cannot draw a nonce; its value says why. */
export const JOURNAL_HEADER_ERROR_KEY = '__error'

/** A parsed journal header. */
export interface JournalHeader {
  /** sha256 of the run's nonce, 64 lowercase hex digits; absent on a header that reports an error. */
  readonly nonceHash?: string
  /** Set when the shell could not draw a nonce (a sandbox without `od` or `sha256sum`). */
  readonly error?: string
  /** The launch's salt (32 lowercase hex digits), on a journal whose nonce comes from the provider's secret. */
  readonly salt?: string
}

/** sha256 of a nonce as the journal header carries it (64 lowercase hex digits). */
export function nonceHash(nonce: string): string {
  return createHash('sha256').update(nonce, 'utf8').digest('hex')
}

/** Characters a provider's `journalSecret` must have at least. */
export const MIN_JOURNAL_SECRET_LENGTH = 32

/**
 * The nonce of one launch of run `runId` in a sandbox whose provider keeps
 * `secret` outside it (`SandboxHandle.journalSecret`): the first 32 hex
 * digits of HMAC-SHA256(secret, runId + "\n" + salt). The salt is drawn per
 * launch and written in the header, so every host that knows the secret
 * computes the nonce from the journal alone, a waiting shell of an earlier
 * launch of the same id cannot end a later one, and an agent that can read
 * neither the secret nor its waiting shell cannot write a genuine sentinel.
 *
 * @param secret - The provider's secret, at least {@link MIN_JOURNAL_SECRET_LENGTH} characters.
 * @param runId - The run's id.
 * @param salt - The launch's salt, as its header carries it (32 lowercase hex digits).
 * @returns 32 lowercase hex digits, the shape the journal's shell draws itself.
 * @throws JournalError `journal-unsupported` for a secret shorter than 32 characters.
 */
export function journalNonce(secret: string, runId: string, salt: string): string {
  if (typeof secret !== 'string' || secret.length < MIN_JOURNAL_SECRET_LENGTH) {
    throw new JournalError('journal-unsupported', `A sandbox's journalSecret must be a string of at least ${MIN_JOURNAL_SECRET_LENGTH} characters (the provider sets it); got ${typeof secret === 'string' ? `${secret.length} characters` : typeof secret}.`, { runId })
  }
  return createHmac('sha256', secret).update(`${runId}\n${salt}`, 'utf8').digest('hex').slice(0, 32)
}

/** What a reader needs to check a journal against its provider's secret instead of the journal's own header. */
export interface JournalTrust {
  /** `SandboxHandle.journalSecret`. */
  readonly journalSecret: string
  /** The run's id. */
  readonly runId: string
}

/**
 * The trust a reader of run `runId` in `handle` uses: the provider's
 * `journalSecret` and the id, when the sandbox has a secret and the id is
 * known; else `undefined` (the journal's own header is then trusted).
 *
 * @param handle - The sandbox (only `journalSecret` is read).
 * @param runId - The run's id.
 */
export function journalTrustOf(handle: { readonly journalSecret?: string | undefined }, runId: string | undefined): JournalTrust | undefined {
  return handle.journalSecret === undefined || runId === undefined ? undefined : { journalSecret: handle.journalSecret, runId }
}

/**
 * The header a journal must start with: with `trust`, the one the secret
 * gives for the salt `own` carries (a header without a salt gets one no
 * journal can match), else `own` itself.
 *
 * @param own - The journal's first line, parsed.
 * @param trust - From {@link journalTrustOf}.
 */
export function expectedJournalHeader(own: JournalHeader | undefined, trust: JournalTrust | undefined): JournalHeader | undefined {
  if (trust === undefined) return own
  const salt = own?.salt ?? ''
  return { nonceHash: nonceHash(journalNonce(trust.journalSecret, trust.runId, salt)), ...(own?.salt !== undefined ? { salt } : {}) }
}

/**
 * The header line of a journal whose sentinel will carry `nonce`, for code
 * that writes a journal by hand (a fake provider, a test). No newline.
 *
 * @param nonce - The nonce the sentinel will carry.
 * @example
 * ```ts
 * await append(path, `${journalHeaderLine(nonce)}\n{"type":"x"}\n${exitSentinelLine(0, nonce)}\n`)
 * ```
 */
export function journalHeaderLine(nonce: string): string {
  return JSON.stringify({ [JOURNAL_HEADER_KEY]: 1, [JOURNAL_NONCE_HASH_KEY]: nonceHash(nonce) })
}

/**
 * The exit sentinel line, exactly as the journal shell prints it (no
 * newline): `{"__exit":N,"__nonce":"X"}`. For code that writes a journal by
 * hand; with {@link journalHeaderLine} of the same nonce it is genuine.
 *
 * @param exitCode - The agent's exit status (128+N for signal N).
 * @param nonce - The run's nonce.
 */
export function exitSentinelLine(exitCode: number, nonce: string): string {
  return `{"${EXIT_SENTINEL_KEY}":${Math.trunc(exitCode)},"${EXIT_SENTINEL_NONCE_KEY}":${JSON.stringify(nonce)}}`
}

/**
 * Parse a journal line as the journal header, or `undefined` when it is not one.
 *
 * @param line - One journal line, without its newline.
 */
export function parseJournalHeader(line: string): JournalHeader | undefined {
  if (!line.startsWith(`{"${JOURNAL_HEADER_KEY}"`)) return undefined
  const value = parseObject(line)
  if (!value || value[JOURNAL_HEADER_KEY] !== 1) return undefined
  const hash = value[JOURNAL_NONCE_HASH_KEY]
  const error = value[JOURNAL_HEADER_ERROR_KEY]
  if (typeof error === 'string') return { error }
  const salt = value[JOURNAL_SALT_KEY]
  if (typeof hash === 'string' && /^[0-9a-f]{64}$/.test(hash)) return typeof salt === 'string' && /^[0-9a-f]{32}$/.test(salt) ? { nonceHash: hash, salt } : { nonceHash: hash }
  return undefined
}

/**
 * Parse a journal line as an exit sentinel. With `header` (the journal's first
 * line, parsed), only a GENUINE sentinel counts: one whose nonce hashes to the
 * header's `nonceHash`; a forged or guessed one is `undefined`. Without a
 * header (a journal written by hand without one) any line of the sentinel's
 * exact shape counts, which is why every journal the shell writes has one.
 * Source: spec 003 (`parseExitSentinel`).
 *
 * @param line - One journal line, without its newline.
 * @param header - The journal's header, when it has one.
 * @returns `{ exitCode }`, or `undefined` when the line is not a (genuine) sentinel.
 * @example
 * ```ts
 * parseExitSentinel(exitSentinelLine(3, nonce), { nonceHash: nonceHash(nonce) }) // { exitCode: 3 }
 * parseExitSentinel('{"__exit":0}', header) // undefined
 * ```
 */
export function parseExitSentinel(line: string, header?: JournalHeader): { readonly exitCode: number } | undefined {
  if (!line.startsWith(`{"${EXIT_SENTINEL_KEY}"`)) return undefined
  const value = parseObject(line)
  if (!value) return undefined
  const keys = Object.keys(value)
  const code = value[EXIT_SENTINEL_KEY]
  const nonce = value[EXIT_SENTINEL_NONCE_KEY]
  if (keys.length !== 2 || typeof code !== 'number' || !Number.isInteger(code) || typeof nonce !== 'string') return undefined
  if (header?.nonceHash !== undefined && nonceHash(nonce) !== header.nonceHash) return undefined
  return { exitCode: code }
}

function parseObject(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}
