/**
 * Secret zeroing, pure: every form the scrubber knows becomes zero bytes of
 * the same length (raw, JSON-escaped, base64 alone and inside longer base64,
 * base64url, URL-encoded, hex), references resolve (a bearer one to both
 * forms), short values are left alone, and paths are checked too.
 */
import { describe, expect, it } from 'vitest'
import { bearer, createSecrets } from '../../src/index.js'
import { createSecretZeroer, resolveSnapshotSecrets } from '../../src/snapshots/secret-zeroing.js'

const SECRET = 'sk-live/ab+cd=ef-0123'

function zeroed(text: string, values = [SECRET]): Buffer {
  const bytes = Buffer.from(text)
  createSecretZeroer(values).zero(bytes)
  return bytes
}

describe('createSecretZeroer', () => {
  it.each([
    ['raw', SECRET],
    ['JSON-escaped', JSON.stringify(SECRET).slice(1, -1)],
    ['base64', Buffer.from(SECRET).toString('base64')],
    ['base64 without padding', Buffer.from(SECRET).toString('base64').replace(/=+$/, '')],
    ['base64url', Buffer.from(SECRET).toString('base64url')],
    ['URL-encoded', encodeURIComponent(SECRET)],
    ['hex', Buffer.from(SECRET).toString('hex')],
  ])('zeroes the %s form, keeping the length and the bytes around it', (_, form) => {
    const out = zeroed(`before ${form} after`)
    expect(out.length).toBe(Buffer.byteLength(`before ${form} after`))
    expect(out.subarray(0, 7).toString()).toBe('before ')
    expect(out.subarray(-6).toString()).toBe(' after')
    expect(out.subarray(7, -6).every((byte) => byte === 0)).toBe(true)
  })

  it('zeroes the secret inside the base64 of a longer value, whatever its offset', () => {
    for (const prefix of ['u:', 'us:', 'use:']) {
      const encoded = Buffer.from(`${prefix}${SECRET}:tail`).toString('base64')
      const out = zeroed(`auth=${encoded}\n`)
      expect(out.toString()).not.toContain(encoded)
      expect(out.filter((byte) => byte === 0).length, prefix).toBeGreaterThan(SECRET.length)
    }
  })

  it('zeroes every occurrence, in binary content too', () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0x00]), Buffer.from(SECRET), Buffer.from([0x80]), Buffer.from(SECRET)])
    const zeroer = createSecretZeroer([SECRET])
    expect(zeroer.zero(bytes)).toBe(2)
    expect(bytes.includes(SECRET)).toBe(false)
    expect(bytes[0]).toBe(0xff)
    expect(bytes[2 + SECRET.length]).toBe(0x80)
  })

  it('zeroes a secret split across lines (LF or CRLF, raw or base64) and keeps the line breaks', () => {
    const fold = (text: string, width: number, eol: string) => text.match(new RegExp(`.{1,${width}}`, 'g'))!.join(eol) + eol
    for (const [text, eol] of [
      [fold(SECRET, 5, '\n'), '\n'],
      [fold(Buffer.from(SECRET).toString('base64'), 8, '\r\n'), '\r\n'],
    ] as const) {
      const bytes = Buffer.from(text)
      expect(createSecretZeroer([SECRET]).zero(bytes)).toBeGreaterThan(0)
      expect(bytes.toString('latin1').replace(/\0/g, ''), 'only the line breaks are left').toBe(eol.repeat(text.split(eol).length - 1))
    }
    const plain = Buffer.from('line one\nline two\n')
    expect(createSecretZeroer([SECRET]).zero(plain)).toBe(0)
    expect(plain.toString()).toBe('line one\nline two\n')
  })

  it('zeroes the raw value written as UTF-16 in either byte order', () => {
    const le = Buffer.concat([Buffer.from('x: ', 'utf16le'), Buffer.from(SECRET, 'utf16le')])
    const be = Buffer.from(le).swap16()
    for (const bytes of [le, be]) {
      expect(createSecretZeroer([SECRET]).zero(bytes)).toBe(1)
      expect(bytes.subarray(6).every((b) => b === 0)).toBe(true)
    }
  })

  it('leaves values shorter than 4 characters and empty input alone', () => {
    expect(zeroed('abc abc', ['abc']).toString()).toBe('abc abc')
    expect(createSecretZeroer([]).zero(Buffer.alloc(0))).toBe(0)
  })

  it('finds a secret in a path', () => {
    const zeroer = createSecretZeroer([SECRET])
    expect(zeroer.holdsSecret(`cache/${Buffer.from(SECRET).toString('hex')}.json`)).toBe(true)
    expect(zeroer.holdsSecret('src/app.ts')).toBe(false)
  })
})

describe('resolveSnapshotSecrets', () => {
  it('resolves references (a bearer one to the header value and the token), takes strings as they are, longest first', () => {
    const secrets = createSecrets({ TOKEN: 'tok-123456', OTHER: 'other-secret-value' })
    expect(resolveSnapshotSecrets([bearer(secrets.TOKEN), secrets.OTHER, 'plain-value', 'ab'])).toEqual(['other-secret-value', 'Bearer tok-123456', 'plain-value', 'tok-123456'])
  })
})
