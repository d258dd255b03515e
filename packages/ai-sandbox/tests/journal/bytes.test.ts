/**
 * Byte framing of journal reads: decodeBase64Stream over base64 cut at every
 * position (wrapped or not), a cut frame failing loud, and toJournalLines /
 * JournalLineSplitter giving absolute byte positions with multi-byte UTF-8
 * cut mid-character and never yielding a trailing partial line.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { LineTooLongError } from '../../src/harness/to-lines.js'
import { decodeBase64Stream, JournalLineSplitter, toJournalLines, type JournalLine } from '../../src/journal/bytes.js'
import { JournalError } from '../../src/journal/errors.js'

async function* from<T>(items: readonly T[]): AsyncIterable<T> {
  for (const item of items) yield item
}

async function decodeAll(pieces: readonly string[]): Promise<Buffer> {
  const out: Buffer[] = []
  for await (const bytes of decodeBase64Stream(from(pieces))) out.push(Buffer.from(bytes))
  return Buffer.concat(out)
}

async function linesOf(pieces: readonly (string | Uint8Array)[], options?: { startByte?: number; maxLineBytes?: number }): Promise<JournalLine[]> {
  const out: JournalLine[] = []
  for await (const line of toJournalLines(from(pieces), options)) out.push(line)
  return out
}

describe('decodeBase64Stream', () => {
  it('decodes base64 cut into two pieces at every position, wrapped at 76 columns or not', async () => {
    for (const length of [0, 1, 2, 3, 4, 5, 57, 58, 59, 100]) {
      const payload = randomBytes(length)
      for (const text of [payload.toString('base64'), payload.toString('base64').replace(/(.{76})/g, '$1\n') + '\n']) {
        for (let cut = 0; cut <= text.length; cut++) {
          const decoded = await decodeAll([text.slice(0, cut), text.slice(cut)])
          expect(decoded.equals(payload), `${length} bytes cut at ${cut}`).toBe(true)
        }
      }
    }
  })

  it('decodes one character at a time and yields as soon as a group is whole', async () => {
    const payload = randomBytes(301)
    const text = payload.toString('base64').replace(/(.{76})/g, '$1\r\n')
    expect((await decodeAll([...text])).equals(payload)).toBe(true)
    const yielded: number[] = []
    for await (const bytes of decodeBase64Stream(from(['aGVs', 'bG8', 'K']))) yielded.push(bytes.byteLength)
    expect(yielded).toEqual([3, 3])
  })

  it('throws TypeError on a character outside the alphabet', async () => {
    await expect(decodeAll(['aGVs', 'b*8K'])).rejects.toThrow(TypeError)
  })

  it('fails loud on a frame cut mid-quantum instead of dropping bytes', async () => {
    for (const cut of ['aGVsbG8', 'aGVsb', 'aG']) {
      const error = await decodeAll([cut]).catch((e: unknown) => e)
      expect(JournalError.isInstance(error), cut).toBe(true)
      expect((error as JournalError).reason).toBe('read-failed')
    }
  })
})

describe('toJournalLines', () => {
  const text = '{"a":"é"}\n\n{"b":"日本語"}\n{"c":"🙂"}\r\n{"partial":'
  const bytes = Buffer.from(text, 'utf8')

  /** The complete lines of `text` with absolute positions, computed independently over bytes. */
  function expected(startByte: number): JournalLine[] {
    const out: JournalLine[] = []
    let at = 0
    for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, at)) {
      out.push({ text: bytes.subarray(at, nl).toString('utf8'), start: startByte + at, end: startByte + nl + 1 })
      at = nl + 1
    }
    return out
  }

  it('gives absolute byte positions with the bytes cut at every position, mid-character included', async () => {
    const want = expected(1000)
    expect(want.map((l) => l.text)).toEqual(['{"a":"é"}', '', '{"b":"日本語"}', '{"c":"🙂"}\r'])
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await linesOf([bytes.subarray(0, cut), bytes.subarray(cut)], { startByte: 1000 }), `cut at byte ${cut}`).toEqual(want)
    }
    expect(await linesOf([...bytes].map((b) => Uint8Array.of(b)), { startByte: 1000 })).toEqual(want)
  })

  it('never yields the trailing partial line, even when the stream ends there', async () => {
    const lines = await linesOf([bytes])
    expect(lines.at(-1)?.text).toBe('{"c":"🙂"}\r')
    expect(lines.some((l) => l.text.includes('partial'))).toBe(false)
    expect(await linesOf(['no newline at all'])).toEqual([])
    expect(await linesOf([])).toEqual([])
  })

  it('takes strings as UTF-8 and counts their bytes, not characters', async () => {
    expect(await linesOf(['日本\n', '🙂\nx'], { startByte: 5 })).toEqual([
      { text: '日本', start: 5, end: 12 },
      { text: '🙂', start: 12, end: 17 },
    ])
  })

  it('decodes invalid UTF-8 as U+FFFD while positions still count every byte', async () => {
    expect(await linesOf([Uint8Array.of(0x61, 0xff, 0xc3, 0x0a, 0x62, 0x0a)])).toEqual([
      { text: 'a\ufffd\ufffd', start: 0, end: 4 },
      { text: 'b', start: 4, end: 6 },
    ])
  })

  it('refuses a line longer than maxLineBytes, also while it is still unfinished', async () => {
    await expect(linesOf(['x'.repeat(11), '\n'], { maxLineBytes: 10 })).rejects.toBeInstanceOf(LineTooLongError)
    await expect(linesOf(['x'.repeat(6), 'x'.repeat(6)], { maxLineBytes: 10 })).rejects.toBeInstanceOf(LineTooLongError)
    expect(await linesOf(['x'.repeat(10), '\n'], { maxLineBytes: 10 })).toHaveLength(1)
  })
})

describe('JournalLineSplitter', () => {
  it('position is where a reader resumes; held counts the unfinished bytes; reset forgets them', () => {
    const splitter = new JournalLineSplitter(100)
    expect(splitter.push('ab\ncd')).toEqual([{ text: 'ab', start: 100, end: 103 }])
    expect([splitter.position, splitter.held]).toEqual([103, 2])
    splitter.reset()
    expect([splitter.position, splitter.held]).toEqual([103, 0])
    expect(splitter.push('cdef\n')).toEqual([{ text: 'cdef', start: 103, end: 108 }])
  })

  it('copies an unfinished piece, so a caller reusing its buffer changes nothing', () => {
    const splitter = new JournalLineSplitter(0)
    const buffer = Buffer.from('hello')
    splitter.push(buffer)
    buffer.fill(0x7a)
    expect(splitter.push('\n')).toEqual([{ text: 'hello', start: 0, end: 6 }])
  })
})
