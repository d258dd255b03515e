/**
 * toLines: framing of text and byte chunks into lines. Covers UTF-8 split at
 * every byte position, CRLF, a multi-megabyte line in small chunks, many small
 * lines, the trailing unterminated line and the maxLineBytes guard.
 */
import { describe, expect, it } from 'vitest'
import { LineTooLongError, toLines } from '../../src/journal/to-lines.js'
import { SandboxError } from '../../src/contracts/errors.js'

async function* from<T>(chunks: T[]): AsyncIterable<T> {
  for (const chunk of chunks) yield chunk
}

async function collect(chunks: AsyncIterable<string | Uint8Array>, maxLineBytes?: number): Promise<string[]> {
  const lines: string[] = []
  for await (const line of toLines(chunks, maxLineBytes === undefined ? {} : { maxLineBytes })) lines.push(line)
  return lines
}

const encode = (text: string) => new TextEncoder().encode(text)

describe('toLines', () => {
  const text = 'héllo 🌍 wörld\nsecond ✓ line\r\nthird'
  const expected = ['héllo 🌍 wörld', 'second ✓ line', 'third']

  it('decodes UTF-8 split at every byte position into two chunks', async () => {
    const bytes = encode(text)
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await collect(from([bytes.subarray(0, cut), bytes.subarray(cut)])), `cut at ${cut}`).toEqual(expected)
    }
  })

  it('decodes UTF-8 delivered one byte per chunk', async () => {
    const bytes = encode(text)
    const chunks = Array.from(bytes, (byte) => Uint8Array.of(byte))
    expect(await collect(from(chunks))).toEqual(expected)
  })

  it('splits string chunks at every character position', async () => {
    for (let cut = 0; cut <= text.length; cut++) {
      expect(await collect(from([text.slice(0, cut), text.slice(cut)]))).toEqual(expected)
    }
  })

  it('strips \\r of CRLF, also when \\r and \\n arrive in different chunks, and keeps a lone \\r', async () => {
    expect(await collect(from(['a\r\nb\r', '\nc\rd\r\n']))).toEqual(['a', 'b', 'c\rd'])
    expect(await collect(from(['\r\n\r\n']))).toEqual(['', ''])
  })

  it('yields a trailing line without newline, and no extra empty line after a final newline', async () => {
    expect(await collect(from(['one\ntwo']))).toEqual(['one', 'two'])
    expect(await collect(from(['one\ntwo\n']))).toEqual(['one', 'two'])
    expect(await collect(from([encode('tail without newline')]))).toEqual(['tail without newline'])
    expect(await collect(from<string>([]))).toEqual([])
    expect(await collect(from(['', '']))).toEqual([])
  })

  it('keeps empty lines between newlines', async () => {
    expect(await collect(from(['a\n\n', '\nb\n']))).toEqual(['a', '', '', 'b'])
  })

  it('joins a 5 MB line delivered in 64 KiB byte chunks', async () => {
    const line = '{"data":"' + 'x'.repeat(5 * 1024 * 1024) + '"}'
    const bytes = encode(`${line}\nafter\n`)
    const chunks: Uint8Array[] = []
    for (let i = 0; i < bytes.length; i += 65_536) chunks.push(bytes.subarray(i, i + 65_536))
    const lines = await collect(from(chunks))
    expect(lines).toHaveLength(2)
    expect(lines[0]).toHaveLength(line.length)
    expect(lines[0] === line).toBe(true)
    expect(lines[1]).toBe('after')
  })

  it('splits many small lines across arbitrary chunk boundaries', async () => {
    const expectedLines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ i, s: 'é'.repeat(i % 7) }))
    const bytes = encode(expectedLines.join('\n') + '\n')
    const chunks: Uint8Array[] = []
    for (let i = 0, size = 1; i < bytes.length; i += size, size = (size * 7 + 3) % 4099) {
      chunks.push(bytes.subarray(i, i + size))
    }
    expect(await collect(from(chunks))).toEqual(expectedLines)
  })

  it('accepts mixed string and byte chunks in order', async () => {
    const euro = encode('€') // 3 bytes
    expect(await collect(from<string | Uint8Array>([euro.subarray(0, 3), 'a\n', encode('b'), 'c']))).toEqual(['€a', 'bc'])
  })

  describe('maxLineBytes', () => {
    it('allows a line of exactly the limit in UTF-8 bytes, with LF or CRLF', async () => {
      expect(await collect(from(['abcd\n', 'ab', 'cd\r', '\n', 'éé\n']), 4)).toEqual(['abcd', 'abcd', 'éé'])
    })

    it('throws LineTooLongError when a line grows past the limit, before its newline arrives', async () => {
      const chunks = (async function* () {
        yield 'ok\n'
        yield 'x'.repeat(600)
        yield 'x'.repeat(600)
        throw new Error('the guard must fire before the stream is read further')
      })()
      const lines: string[] = []
      const error = await (async () => {
        try {
          for await (const line of toLines(chunks, { maxLineBytes: 1000 })) lines.push(line)
        } catch (caught) {
          return caught
        }
      })()
      expect(lines).toEqual(['ok'])
      expect(error).toBeInstanceOf(LineTooLongError)
      expect(SandboxError.isInstance(error)).toBe(true)
      expect((error as LineTooLongError).reason).toBe('line-too-long')
      expect((error as LineTooLongError).maxLineBytes).toBe(1000)
    })

    it('counts multi-byte characters as their UTF-8 length', async () => {
      await expect(collect(from(['ééé\n']), 5)).rejects.toBeInstanceOf(LineTooLongError)
      await expect(collect(from(['🌍🌍']), 7)).rejects.toBeInstanceOf(LineTooLongError)
      expect(await collect(from(['🌍🌍']), 8)).toEqual(['🌍🌍'])
    })
  })
})
