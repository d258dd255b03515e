/**
 * encodeRunId / decodeJournalRunId: injective and round-tripping over a
 * generated corpus of valid ids, the run-id rule (lone surrogates and
 * control characters refused both ways), long ids split into 200-char
 * folders, the 512-character bound, and decoding that fails closed on every
 * name encodeRunId could not have written.
 */
import { describe, expect, it } from 'vitest'
import { JournalError, MAX_JOURNAL_RUN_ID_LENGTH } from '../../src/journal/errors.js'
import { decodeJournalRunId, encodeRunId } from '../../src/journal/run-id.js'
import { seededRandom } from '../helpers/seeded-random.js'


// Literals, the escape character, path and shell specials, non-ASCII characters (a surrogate pair among them). Control
// characters and lone surrogates break the run-id rule; the last test of encodeRunId pins their refusal.
const ALPHABET = ['a', 'Z', '0', '9', '-', '_', '/', '.', ' ', '"', "'", '$', '(', ')', '`', '\\', 'é', '日', '🙂', '\u{10ffff}', '\uffff', '_0061', '_002f']

function corpus(seed: number, count: number, maxParts: number): string[] {
  const next = seededRandom(seed)
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    let id = ''
    const parts = 1 + Math.floor(next() * maxParts)
    for (let p = 0; p < parts; p++) id += ALPHABET[Math.floor(next() * ALPHABET.length)]
    out.push(id)
  }
  return out
}

describe('encodeRunId', () => {
  it('keeps A-Z a-z 0-9 - and escapes every other code unit as _ plus four hex digits', () => {
    expect(encodeRunId('run-7')).toBe('run-7')
    expect(encodeRunId('3f2c9a10-1b2c-4d5e-8f90-123456789abc')).toBe('3f2c9a10-1b2c-4d5e-8f90-123456789abc')
    expect(encodeRunId('a/b')).toBe('a_002fb')
    expect(encodeRunId('../x')).toBe('_002e_002e_002fx')
    expect(encodeRunId('_')).toBe('_005f')
    expect(encodeRunId('🙂')).toBe('_d83d_de42')
  })

  it('is injective and decodes back over a generated corpus of valid ids', () => {
    const ids = [...new Set([...corpus(1, 4000, 12), ...corpus(2, 500, 60)])]
    const names = new Map<string, string>()
    for (const id of ids) {
      const name = encodeRunId(id)
      expect(name, `only shell- and filename-safe characters for ${JSON.stringify(id)}`).toMatch(/^[A-Za-z0-9_/-]+$/)
      expect(names.get(name), `${JSON.stringify(id)} and ${JSON.stringify(names.get(name))} share ${name}`).toBeUndefined()
      names.set(name, id)
      expect(decodeJournalRunId(`${name}.ndjson`)).toEqual({ ok: true, runId: id })
      expect(decodeJournalRunId(name)).toEqual({ ok: true, runId: id })
    }
    expect(names.size).toBe(ids.length)
  })

  it('splits a long id into 200-character folders, an escape may straddle a fold', () => {
    const long = 'a'.repeat(300)
    expect(encodeRunId(long)).toBe(`${'a'.repeat(200)}/${'a'.repeat(100)}`)
    expect(decodeJournalRunId(`${encodeRunId(long)}.ndjson`)).toEqual({ ok: true, runId: long })

    const max = 'x'.repeat(512)
    expect(encodeRunId(max).split('/').map((s) => s.length)).toEqual([200, 200, 112])
    expect(decodeJournalRunId(encodeRunId(max))).toEqual({ ok: true, runId: max })

    const straddle = `${'a'.repeat(198)}/b`
    const name = encodeRunId(straddle)
    expect(name).toBe(`${'a'.repeat(198)}_0/02fb`)
    expect(decodeJournalRunId(name)).toEqual({ ok: true, runId: straddle })

    // 512 escaped characters: 2560 characters in 13 folders, every component far under NAME_MAX.
    const escaped = '/'.repeat(512)
    const segments = encodeRunId(escaped).split('/')
    expect(segments).toHaveLength(13)
    expect(Math.max(...segments.map((s) => s.length + '.ndjson'.length))).toBeLessThan(255)
    expect(decodeJournalRunId(encodeRunId(escaped))).toEqual({ ok: true, runId: escaped })
  })

  it('throws JournalError invalid-run-id for an empty, non-string, 513-character, ill-formed or control-character id', () => {
    for (const bad of ['', 'x'.repeat(MAX_JOURNAL_RUN_ID_LENGTH + 1), undefined, 7, '\ud800', 'a\udc00', 'a\nb', 'a\rb', '\0', '\u007f', '\u0085']) {
      let caught: unknown
      try {
        encodeRunId(bad as string)
      } catch (error) {
        caught = error
      }
      expect(JournalError.isInstance(caught), `encodeRunId(${JSON.stringify(bad)?.slice(0, 20)}) throws JournalError`).toBe(true)
      expect((caught as JournalError).reason).toBe('invalid-run-id')
    }
    expect(() => encodeRunId('x'.repeat(513))).toThrow(/at most 512 UTF-16 code units; got 513/)
    expect(MAX_JOURNAL_RUN_ID_LENGTH).toBe(512)
  })
})

describe('decodeJournalRunId fails closed', () => {
  it.each([
    ['a foreign file', 'notes.txt'],
    ['a dotted name', 'a.b.ndjson'],
    ['the suffix alone', '.ndjson'],
    ['an empty name', ''],
    ['the stderr sidecar', 'run-7.err'],
    ['an upper-case escape', 'a_002Fb.ndjson'],
    ['an escaped literal', '_0061.ndjson'],
    ['an escaped hyphen', '_002d.ndjson'],
    ['a short escape', 'a_002.ndjson'],
    ['a non-hex escape', '_zzzz.ndjson'],
    ['a bare underscore', 'a_.ndjson'],
    ['a folder split at the wrong place', 'a/b.ndjson'],
    ['an even split that is not 200', `${'a'.repeat(100)}/${'a'.repeat(100)}.ndjson`],
    ['a component over 200 characters', `${'a'.repeat(201)}.ndjson`],
    ['an empty last component', `${'a'.repeat(200)}/.ndjson`],
    ['a leading slash', `/${'a'.repeat(10)}.ndjson`],
    ['a parent reference', '../x.ndjson'],
    ['a raw non-ASCII character', 'é.ndjson'],
    ['a newline', 'a\nb.ndjson'],
    ['a double suffix', 'x.ndjson.ndjson'],
    ['a lone surrogate', '_d800.ndjson'],
    ['a newline', 'a_000ab.ndjson'],
    ['a NUL', '_0000.ndjson'],
    ['a run id over 512 characters', `${'a'.repeat(200)}/${'a'.repeat(200)}/${'a'.repeat(113)}.ndjson`],
  ])('%s', (_what, name) => {
    const decoded = decodeJournalRunId(name)
    expect(decoded.ok).toBe(false)
    if (!decoded.ok) expect(decoded.reason).toContain(JSON.stringify(name))
  })

  it('every name that decodes is exactly the encoding of what it decodes to (generated names)', () => {
    const next = seededRandom(3)
    const pieces = ['a', 'Z', '0', '-', '_', 'f', 'F', '00', '002f', '0061', '/', '.', 'd800', 'ndjson']
    let accepted = 0
    for (let i = 0; i < 20_000; i++) {
      let name = ''
      const parts = 1 + Math.floor(next() * 10)
      for (let p = 0; p < parts; p++) name += pieces[Math.floor(next() * pieces.length)]
      const decoded = decodeJournalRunId(name)
      if (!decoded.ok) continue
      accepted++
      const stem = name.endsWith('.ndjson') ? name.slice(0, -'.ndjson'.length) : name
      expect(encodeRunId(decoded.runId), `${JSON.stringify(name)} decoded to an id that encodes elsewhere`).toBe(stem)
    }
    // The corpus must exercise the accepting side too, or this proves nothing.
    expect(accepted).toBeGreaterThan(1000)
  })
})
