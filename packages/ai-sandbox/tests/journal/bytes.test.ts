/**
 * Byte framing of journal reads: decodeBase64Stream over base64 cut at every
 * position (wrapped or not), a cut frame failing loud, encodeUtf8Stream, and
 * toJournalLines / JournalLineSplitter giving each line's absolute end
 * position with multi-byte UTF-8 cut mid-character and never yielding a
 * trailing partial line; toJournalLines called as spec 003 writes it.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { LineTooLongError } from '../../src/journal/to-lines.js'
import { decodeBase64Stream, encodeUtf8Stream, JournalLineSplitter, toJournalLines, type JournalLine } from '../../src/journal/bytes.js'
import { SandboxConfigError } from '../../src/contracts/errors.js'
import { JournalError } from '../../src/journal/errors.js'

async function* from<T>(items: readonly T[]): AsyncIterable<T> {
  for (const item of items) yield item
}

async function decodeAll(pieces: readonly string[]): Promise<Buffer> {
  const out: Buffer[] = []
  for await (const bytes of decodeBase64Stream(from(pieces))) out.push(Buffer.from(bytes))
  return Buffer.concat(out)
}

async function linesOf(pieces: readonly Uint8Array[], startPosition = 0, options?: { maxLineBytes?: number }): Promise<JournalLine[]> {
  const out: JournalLine[] = []
  for await (const line of toJournalLines(from(pieces), startPosition, options)) out.push(line)
  return out
}

const utf8 = (text: string) => Buffer.from(text, 'utf8')

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

  it('throws TypeError on a character outside the alphabet, naming it, also beside line wrapping', async () => {
    await expect(decodeAll(['aGVs', 'b*8K'])).rejects.toThrow(TypeError)
    await expect(decodeAll(['aGVs\n', 'bG8\n\u00e9K'])).rejects.toThrow('"é" is not a base64 character')
  })

  it('ignores any whitespace, not only the newlines of line wrapping', async () => {
    expect((await decodeAll(['aGV s\r\n', '\tbG8K \n'])).toString('utf8')).toBe('hello\n')
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

  /** The complete lines of `text` with absolute end positions, computed independently over bytes. */
  function expected(startPosition: number): JournalLine[] {
    const out: JournalLine[] = []
    let at = 0
    for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, at)) {
      out.push({ line: bytes.subarray(at, nl).toString('utf8'), endPosition: startPosition + nl + 1 })
      at = nl + 1
    }
    return out
  }

  it('gives absolute end positions with the bytes cut at every position, mid-character included', async () => {
    const want = expected(1000)
    expect(want.map((l) => l.line)).toEqual(['{"a":"é"}', '', '{"b":"日本語"}', '{"c":"🙂"}\r'])
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await linesOf([bytes.subarray(0, cut), bytes.subarray(cut)], 1000), `cut at byte ${cut}`).toEqual(want)
    }
    expect(await linesOf([...bytes].map((b) => Uint8Array.of(b)), 1000)).toEqual(want)
  })

  it('never yields the trailing partial line, even when the stream ends there', async () => {
    const lines = await linesOf([bytes])
    expect(lines.at(-1)?.line).toBe('{"c":"🙂"}\r')
    expect(lines.some((l) => l.line.includes('partial'))).toBe(false)
    expect(await linesOf([utf8('no newline at all')])).toEqual([])
    expect(await linesOf([])).toEqual([])
  })

  it('decodes invalid UTF-8 as U+FFFD while positions still count every byte', async () => {
    expect(await linesOf([Uint8Array.of(0x61, 0xff, 0xc3, 0x0a, 0x62, 0x0a)])).toEqual([
      { line: 'a\ufffd\ufffd', endPosition: 4 },
      { line: 'b', endPosition: 6 },
    ])
  })

  it('refuses a line longer than maxLineBytes, also while it is still unfinished', async () => {
    await expect(linesOf([utf8('x'.repeat(11)), utf8('\n')], 0, { maxLineBytes: 10 })).rejects.toBeInstanceOf(LineTooLongError)
    await expect(linesOf([utf8('x'.repeat(6)), utf8('x'.repeat(6))], 0, { maxLineBytes: 10 })).rejects.toBeInstanceOf(LineTooLongError)
    expect(await linesOf([utf8('x'.repeat(10)), utf8('\n')], 0, { maxLineBytes: 10 })).toHaveLength(1)
  })

  it('refuses a startPosition that is not a whole number of bytes >= 0, such as the old options object', async () => {
    for (const bad of [-1, 1.5, Number.NaN, { startByte: 100 }]) {
      await expect(linesOf([utf8('a\n')], bad as number), String(bad)).rejects.toBeInstanceOf(SandboxConfigError)
    }
  })
})

describe('JournalLineSplitter', () => {
  it('position is where a reader resumes; held counts the unfinished bytes; reset forgets them', () => {
    const splitter = new JournalLineSplitter(100)
    expect(splitter.push('ab\ncd')).toEqual([{ line: 'ab', endPosition: 103 }])
    expect([splitter.position, splitter.held]).toEqual([103, 2])
    splitter.reset()
    expect([splitter.position, splitter.held]).toEqual([103, 0])
    expect(splitter.push('cdef\n')).toEqual([{ line: 'cdef', endPosition: 108 }])
  })

  it('takes text as UTF-8 and counts its bytes, not characters', () => {
    const splitter = new JournalLineSplitter(5)
    expect([...splitter.push('日本\n'), ...splitter.push('🙂\nx')]).toEqual([
      { line: '日本', endPosition: 12 },
      { line: '🙂', endPosition: 17 },
    ])
  })

  it('copies an unfinished piece, so a caller reusing its buffer changes nothing', () => {
    const splitter = new JournalLineSplitter(0)
    const buffer = Buffer.from('hello')
    splitter.push(buffer)
    buffer.fill(0x7a)
    expect(splitter.push('\n')).toEqual([{ line: 'hello', endPosition: 6 }])
  })
})

describe('the spec 003 signatures', () => {
  it('toJournalLines(byteChunks, startPosition) counts from startPosition and yields { line, endPosition }', async () => {
    const out: unknown[] = []
    for await (const line of toJournalLines(from([Buffer.from('{"a":1}\n日本\n{"b"')]), 100)) out.push(line)
    expect(out).toEqual([
      { line: '{"a":1}', endPosition: 108 },
      { line: '日本', endPosition: 115 },
    ])
  })

  it('encodeUtf8Stream turns text chunks back into their UTF-8 bytes and drops empty chunks', async () => {
    const out: Uint8Array[] = []
    for await (const bytes of encodeUtf8Stream(from(['é日', '', '🙂\n']))) out.push(bytes)
    expect(out.map((bytes) => Buffer.from(bytes).toString('hex'))).toEqual([Buffer.from('é日').toString('hex'), Buffer.from('🙂\n').toString('hex')])
  })

  it('encodeUtf8Stream then toJournalLines (the follow path) counts the bytes of text chunks, not characters', async () => {
    const out: JournalLine[] = []
    for await (const line of toJournalLines(encodeUtf8Stream(from(['日本\n', '🙂\nx'])), 5)) out.push(line)
    expect(out).toEqual([
      { line: '日本', endPosition: 12 },
      { line: '🙂', endPosition: 17 },
    ])
  })
})
