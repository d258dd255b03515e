/**
 * The secret scrubber (issue 16): every form of a secret a script is likely
 * to print is replaced (raw, JSON-escaped, base64 and base64url with and
 * without padding and at each byte offset inside longer base64, URL-encoded,
 * hex), nested chunk fields are scrubbed, a secret split across streamed
 * deltas is caught, and text without a secret passes unchanged. The encoded
 * forms come from real encoders (Buffer, btoa, encodeURIComponent,
 * URLSearchParams); what `base64` and `od` print in a real sandbox is in
 * testing/sandbox-e2e/tests/secret-leaks.test.ts.
 */
import type { StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { createSecretScrubber, secretForms } from '../../src/secrets/secret-scrubber.js'
import { bearer, createSecrets } from '../../src/contracts/secret-ref.js'
import { redactSecrets } from '../../src/secrets/secret-values.js'

const SECRET = 'ghp_S3cr3t/Value+With=Odd&Chars'
const scrub = createSecretScrubber([['GH_TOKEN', SECRET]])

/** `%xx` for every UTF-8 byte of `value`, letters and digits included (lower-case hex). */
function percentEveryByte(value: string): string {
  return [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')
}
const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64')

describe('secret forms', () => {
  const encodings: [string, string][] = [
    ['raw', SECRET],
    ['JSON-escaped', JSON.stringify(`"${SECRET}"`).slice(1, -1)],
    ['base64', b64(SECRET)],
    ['base64 without padding', b64(SECRET).replace(/=+$/, '')],
    ['base64url', Buffer.from(SECRET).toString('base64url')],
    ['btoa', btoa(SECRET)],
    ['encodeURIComponent', encodeURIComponent(SECRET)],
    ['lower-case percent escapes', encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())],
    ['form encoding', new URLSearchParams({ t: SECRET }).toString().slice(2)],
    ['every byte percent-escaped (upper-case hex)', percentEveryByte(SECRET).toUpperCase()],
    ['every byte percent-escaped (lower-case hex)', percentEveryByte(SECRET)],
    ['hex', Buffer.from(SECRET).toString('hex')],
    ['HEX', Buffer.from(SECRET).toString('hex').toUpperCase()],
  ]
  it('replaces percent-encodings that mix escaped and plain characters, hex cases, and escapes encoded twice (whatever decodeURIComponent turns back into the secret)', () => {
    const bytes = [...Buffer.from(SECRET, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`)
    const mixedCase = bytes.map((escape, i) => (i % 2 === 0 ? escape.toUpperCase() : escape)).join('')
    const oneEscaped = `${SECRET.slice(0, 5)}%${SECRET.charCodeAt(5).toString(16)}${SECRET.slice(6)}`
    const twice = bytes.map((escape) => `%25${escape.slice(1)}`).join('')
    for (const form of [mixedCase, oneEscaped, twice]) {
      expect(decodeURIComponent(form.replaceAll('%25', '%'))).toBe(SECRET)
      const out = scrub.text(`before ${form} after`)
      expect(out, form).toBe('before [secret GH_TOKEN] after')
    }
    expect(scrub.text('before ghp_S3cr3t/Value+With=Odd&Chars after'), 'the raw form still wins').toBe('before [secret GH_TOKEN] after')
  })

  it('builds the every-byte forms the way decodeURIComponent reads them', () => {
    expect(decodeURIComponent(percentEveryByte(SECRET))).toBe(SECRET)
    expect(decodeURIComponent(percentEveryByte(SECRET).toUpperCase())).toBe(SECRET)
  })

  it.each(encodings)('replaces the %s form', (_, form) => {
    const out = scrub.text(`before ${form} after`)
    expect(out).toContain('[secret GH_TOKEN]')
    expect(out).not.toContain(form)
    expect(out.startsWith('before ')).toBe(true)
    expect(out.endsWith(' after')).toBe(true)
  })

  it.each([0, 1, 2, 3, 4, 5])('catches the secret inside a longer base64 text after %i bytes of other data', (prefix) => {
    const blob = b64(Buffer.concat([Buffer.from('x'.repeat(prefix)), Buffer.from(`:${SECRET}:`), Buffer.from('trailer bytes')]))
    const out = scrub.text(blob)
    expect(out).toContain('[secret GH_TOKEN]')
    // Only the edge characters that mix secret bits with their neighbours' are left (one at each end at most).
    const left = out.split('[secret GH_TOKEN]')
    expect(left).toHaveLength(2)
    expect(blob.length - left.join('').length).toBeGreaterThanOrEqual(Math.floor((SECRET.length * 8) / 6) - 1)
  })

  it('catches the JSON escapes other serializers write, JSON escaped twice, and encodeURI (review findings)', () => {
    const odd = 'Ab+/=%&9xY"\\q!~*'
    const accents = 'pässwört_Ω_42xyz'
    const own = createSecretScrubber([['ODD', odd], ['ACCENTS', accents]])
    const unicode = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`
    // Go's encoding/json escapes <>& by default; PHP escapes "/"; Python's json.dumps escapes every non-ASCII character.
    expect(own.text(JSON.stringify({ go: odd }).replace(/&/g, unicode))).toBe('{"go":"[secret ODD]"}')
    expect(own.text(JSON.stringify({ php: odd }).replace(/\//g, '\\/'))).toBe('{"php":"[secret ODD]"}')
    expect(own.text(JSON.stringify({ py: accents }).replace(/[^ -~]/g, unicode))).toBe('{"py":"[secret ACCENTS]"}')
    expect(own.text(JSON.stringify(JSON.stringify({ inner: odd })))).toBe('"{\\"inner\\":\\"[secret ODD]\\"}"')
    expect(scrub.text(`https://example.test/${encodeURI(SECRET)}`)).toBe('https://example.test/[secret GH_TOKEN]')
  })

  it('leaves text without a secret, and values under 4 characters, as they are', () => {
    const text = 'nothing to see: aGVsbG8= 68656c6c6f hello%20world'
    expect(scrub.text(text)).toBe(text)
    const short = createSecretScrubber([['PIN', 'abc']])
    expect(short.empty).toBe(true)
    expect(short.text('abc YWJj')).toBe('abc YWJj')
  })

  it('replaces a longer secret whole before a shorter one inside it', () => {
    const both = createSecretScrubber([['SHORT', 'token-123'], ['LONG', 'prefix-token-123-suffix']])
    expect(both.text('a prefix-token-123-suffix b token-123')).toBe('a [secret LONG] b [secret SHORT]')
  })

  it('lists each form once, the raw value first', () => {
    const forms = secretForms(SECRET)
    expect(forms[0]).toBe(SECRET)
    expect(new Set(forms).size).toBe(forms.length)
    expect(forms).toContain(b64(SECRET))
  })
})

describe('redactSecrets', () => {
  it('takes the encoded forms out as well, and a bearer reference as one token', () => {
    const secrets = createSecrets({ NPM_TOKEN: 'npm_abcdefghijklmnop' })
    const out = redactSecrets(`echo ${b64('npm_abcdefghijklmnop')} ${encodeURIComponent('npm_abcdefghijklmnop')} Bearer npm_abcdefghijklmnop`, [secrets.NPM_TOKEN])
    expect(out).toBe('echo [secret NPM_TOKEN] [secret NPM_TOKEN] Bearer [secret NPM_TOKEN]')
    expect(redactSecrets('Authorization: Bearer npm_abcdefghijklmnop', [bearer(secrets.NPM_TOKEN)])).toBe('Authorization: [secret NPM_TOKEN]')
  })
})

describe('nested values', () => {
  it('scrubs every string deep inside a chunk, and returns the same object when nothing changed', () => {
    const chunk = { type: 'STATE_SNAPSHOT', snapshot: { env: [{ name: 'GH', value: b64(SECRET) }], deep: { a: { b: { c: `x${SECRET}y` } } } }, rawEvent: { line: JSON.stringify({ token: SECRET }) } }
    const out = scrub.deep(chunk)
    expect(JSON.stringify(out)).not.toContain(SECRET)
    expect(JSON.stringify(out)).not.toContain(b64(SECRET))
    expect(out.snapshot.deep.a.b.c).toBe('x[secret GH_TOKEN]y')
    const clean = { type: 'TEXT_MESSAGE_CONTENT', delta: 'hello', nested: [{ a: 1 }] }
    expect(scrub.deep(clean)).toBe(clean)
  })

  it('turns errors into records with scrubbed message, stack and cause, and cuts cycles', () => {
    const error = Object.assign(new Error(`failed with ${SECRET}`, { cause: new Error(`cause ${encodeURIComponent(SECRET)}`) }), { reason: 'setup' })
    const cyclic: Record<string, unknown> = { error, text: SECRET }
    cyclic.self = cyclic
    const out = scrub.deep(cyclic) as Record<string, any>
    expect(out.error).toMatchObject({ name: 'Error', message: 'failed with [secret GH_TOKEN]', reason: 'setup', cause: { message: 'cause [secret GH_TOKEN]' } })
    expect(out.error.stack).not.toContain(SECRET)
    expect(out.self).toBe('[circular]')
  })
})

describe('streamed deltas', () => {
  const content = (delta: string, messageId = 'm1'): StreamChunk => ({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta }) as StreamChunk
  const textOf = (chunks: StreamChunk[]) => chunks.map((c) => (c as { delta?: string }).delta ?? '').join('')

  it.each([1, 5, SECRET.length - 1])('catches a secret split across deltas at character %i, and flushes the held tail at the end chunk', (at) => {
    const stream = scrub.stream()
    const out = [
      ...stream.push(content(`the token is ${SECRET.slice(0, at)}`)),
      ...stream.push(content(`${SECRET.slice(at)} and more`)),
      ...stream.push(content(' g')),
      ...stream.push({ type: 'TEXT_MESSAGE_END', messageId: 'm1' } as StreamChunk),
    ]
    expect(textOf(out)).toBe('the token is [secret GH_TOKEN] and more g')
    expect(JSON.stringify(out)).not.toContain(SECRET.slice(0, Math.max(at, 4)))
    expect(out.at(-1)?.type).toBe('TEXT_MESSAGE_END')
  })

  it('catches a base64 form split over many one-character deltas of a tool call\'s arguments', () => {
    const stream = scrub.stream()
    const args = JSON.stringify({ command: `echo ${b64(SECRET)} | base64 -d` })
    const out = [...args].flatMap((ch) => stream.push({ type: 'TOOL_CALL_ARGS', toolCallId: 't1', delta: ch } as StreamChunk))
    out.push(...stream.push({ type: 'TOOL_CALL_END', toolCallId: 't1' } as StreamChunk))
    expect(textOf(out)).toBe(JSON.stringify({ command: 'echo [secret GH_TOKEN] | base64 -d' }))
  })

  it('keeps messages apart, and flushes every held tail before a terminal chunk', () => {
    const stream = scrub.stream()
    const out = [...stream.push(content('a ghp_', 'm1')), ...stream.push(content('b ghp_S3', 'm2')), ...stream.push({ type: 'RUN_FINISHED', runId: 'r', threadId: 't' } as StreamChunk)]
    expect(out.map((c) => `${c.type}:${(c as { delta?: string }).delta ?? ''}`)).toEqual(['TEXT_MESSAGE_CONTENT:a ', 'TEXT_MESSAGE_CONTENT:b ', 'TEXT_MESSAGE_CONTENT:ghp_', 'TEXT_MESSAGE_CONTENT:ghp_S3', 'RUN_FINISHED:'])
  })

  it('passes every chunk through untouched with no secret', () => {
    const stream = createSecretScrubber([]).stream()
    const chunk = content('ghp_')
    expect(stream.push(chunk)).toEqual([chunk])
    expect(stream.push(chunk)[0]).toBe(chunk)
  })
})

describe('fragments (for logs)', () => {
  it('replaces the start or the end of a form cut elsewhere, 8 characters or more', () => {
    const encoded = b64(SECRET)
    const line = JSON.stringify({ delta: `the token is ${encoded.slice(0, 14)}` })
    expect(scrub.text(line)).toBe(line)
    expect(scrub.fragments(line)).toBe(JSON.stringify({ delta: 'the token is [secret GH_TOKEN]' }))
    expect(scrub.fragments(`${encoded.slice(20)}, in hex`)).toBe('[secret GH_TOKEN], in hex')
    expect(scrub.fragments(`raw ${SECRET.slice(0, 7)}`), 'shorter pieces stay').toBe(`raw ${SECRET.slice(0, 7)}`)
  })

  it('catches base64 wrapped over lines, as `base64` prints a long secret', () => {
    const long = createSecretScrubber([['KEY', 'k'.repeat(30) + '-very-long-secret-value-' + 'v'.repeat(30)]])
    const wrapped = b64('k'.repeat(30) + '-very-long-secret-value-' + 'v'.repeat(30)).replace(/(.{76})/g, '$1\n')
    expect(wrapped.split('\n')).toHaveLength(2)
    expect(long.fragments(wrapped)).toBe('[secret KEY]\n[secret KEY]')
  })
})
