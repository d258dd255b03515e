/**
 * The journal header and exit sentinel: a genuine sentinel (its nonce hashes
 * to the header's) counts; a forged one, a guessed nonce, a reshaped line do
 * not; a header that reports a missing nonce tool is recognised as such.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { EXIT_SENTINEL_KEY, EXIT_SENTINEL_NONCE_KEY, exitSentinelLine, journalHeaderLine, nonceHash, parseExitSentinel, parseJournalHeader } from '../../src/journal/sentinel.js'

const nonce = randomBytes(16).toString('hex')
const header = parseJournalHeader(journalHeaderLine(nonce))!

describe('journal header', () => {
  it('carries sha256 of the nonce, never the nonce', () => {
    const line = journalHeaderLine(nonce)
    expect(line).not.toContain(nonce)
    expect(JSON.parse(line)).toEqual({ __journal: 1, __nonceHash: nonceHash(nonce) })
    expect(header).toEqual({ nonceHash: nonceHash(nonce) })
    // The value sha256sum prints for `printf %s "$n"`.
    expect(nonceHash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  it('reports the shell error header as an error', () => {
    expect(parseJournalHeader('{"__journal":1,"__error":"the sandbox needs od"}')).toEqual({ error: 'the sandbox needs od' })
  })

  it.each([
    ['not JSON', '{"__journal":1,'],
    ['another version', `{"__journal":2,"__nonceHash":"${nonceHash(nonce)}"}`],
    ['an upper-case hash', `{"__journal":1,"__nonceHash":"${nonceHash(nonce).toUpperCase()}"}`],
    ['a short hash', '{"__journal":1,"__nonceHash":"abcd"}'],
    ['no hash and no error', '{"__journal":1}'],
    ['an agent line', '{"type":"system"}'],
    ['an array', '["__journal",1]'],
  ])('is not a header: %s', (_what, line) => {
    expect(parseJournalHeader(line)).toBeUndefined()
  })
})

describe('parseExitSentinel', () => {
  it('accepts the genuine sentinel with its exit code', () => {
    expect(EXIT_SENTINEL_KEY).toBe('__exit')
    expect(EXIT_SENTINEL_NONCE_KEY).toBe('__nonce')
    expect(exitSentinelLine(0, nonce)).toBe(`{"__exit":0,"__nonce":"${nonce}"}`)
    expect(parseExitSentinel(exitSentinelLine(0, nonce), header)).toEqual({ exitCode: 0 })
    expect(parseExitSentinel(exitSentinelLine(137, nonce), header)).toEqual({ exitCode: 137 })
    expect(parseExitSentinel(exitSentinelLine(3.9, nonce), header)).toEqual({ exitCode: 3 })
  })

  it('ignores the forged sentinels an agent can print', () => {
    expect(parseExitSentinel('{"__exit":0}', header)).toBeUndefined()
    expect(parseExitSentinel('{"__exit":0,"__nonce":""}', header)).toBeUndefined()
    expect(parseExitSentinel(exitSentinelLine(0, randomBytes(16).toString('hex')), header)).toBeUndefined()
    // The hash is public (it is in the header); the nonce is its preimage, not the hash.
    expect(parseExitSentinel(exitSentinelLine(0, header.nonceHash!), header)).toBeUndefined()
  })

  it.each([
    ['an extra key', `{"__exit":0,"__nonce":"${nonce}","x":1}`],
    ['a string exit code', `{"__exit":"0","__nonce":"${nonce}"}`],
    ['a fractional exit code', `{"__exit":0.5,"__nonce":"${nonce}"}`],
    ['a numeric nonce', '{"__exit":0,"__nonce":7}'],
    ['leading whitespace', ` {"__exit":0,"__nonce":"${nonce}"}`],
    ['keys in another order', `{"__nonce":"${nonce}","__exit":0}`],
    ['truncated JSON', `{"__exit":0,"__nonce":"${nonce}"`],
  ])('is not a sentinel: %s', (_what, line) => {
    expect(parseExitSentinel(line, header)).toBeUndefined()
  })

  it('without a header, any line of the exact shape counts (a hand-written journal)', () => {
    expect(parseExitSentinel('{"__exit":2,"__nonce":"anything"}')).toEqual({ exitCode: 2 })
    expect(parseExitSentinel('{"__exit":2}')).toBeUndefined()
  })

  it('a nonce with quotes survives the JSON of the line', () => {
    const odd = 'a"b\\c'
    const hand = parseJournalHeader(journalHeaderLine(odd))!
    expect(parseExitSentinel(exitSentinelLine(5, odd), hand)).toEqual({ exitCode: 5 })
  })
})
