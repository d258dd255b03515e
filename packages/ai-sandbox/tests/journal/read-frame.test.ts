/**
 * The bounded journal read through the package's public API, run by the
 * host's real `sh` (BusyBox runs the same command in the conformance kit):
 * its stdout is nothing but one base64 frame, so the exported
 * `decodeBase64Stream` recovers the exact bytes read and `toJournalLines`
 * turns them into lines with absolute end positions (spec 000 "Reading
 * strategy", spec 003 `journal-bytes.ts`). The facts only our reader needs
 * (the journal's size, or that there is no journal) travel on stderr.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { decodeBase64Stream, journalPaths, journalReadCommand, parseJournalRead, toJournalLines, type JournalLine } from '../../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'journal-read-frame-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Run a command with the host's `sh`, as a sandbox's `exec` would. */
function exec(command: string): { stdout: string; stderr: string; exitCode: number } {
  const result = spawnSync('/bin/sh', ['-c', command], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  return { stdout: result.stdout, stderr: result.stderr, exitCode: result.status ?? -1 }
}

async function* pieces(text: string, size: number): AsyncIterable<string> {
  for (let at = 0; at < text.length; at += size) yield text.slice(at, at + size)
}

async function decoded(stdout: string, pieceSize = stdout.length || 1): Promise<Buffer> {
  const out: Buffer[] = []
  for await (const bytes of decodeBase64Stream(pieces(stdout, pieceSize))) out.push(Buffer.from(bytes))
  return Buffer.concat(out)
}

// About 150 KB of multi-byte UTF-8 lines, so reads cross the command's 64 KiB blocks and start mid-character.
const lines = Array.from({ length: 2000 }, (_, i) => `{"i":${i},"t":"é日本語🙂 ${'x'.repeat(i % 37)}"}`)
const content = Buffer.from(`${lines.join('\n')}\n`, 'utf8')

describe('journalReadCommand stdout is one base64 frame', () => {
  const paths = journalPaths('frame', root)
  writeFileSync(paths.journal, content)

  it('decodeBase64Stream recovers the exact bytes read, from any offset, whole or cut into pieces', async () => {
    const ranges: Array<[number, number]> = [[0, content.length], [0, 10], [1, 50], [2, 70_000], [65_535, 3], [65_536, 65_536], [100_001, 100_000], [content.length - 1, 10], [content.length, 10], [content.length + 5, 10]]
    for (const [from, max] of ranges) {
      const result = exec(journalReadCommand(paths, from, max))
      expect(result.exitCode, result.stderr).toBe(0)
      const want = content.subarray(from, from + max)
      expect((await decoded(result.stdout)).equals(want), `bytes ${from}..+${max}, one chunk`).toBe(true)
      expect((await decoded(result.stdout, 7)).equals(want), `bytes ${from}..+${max}, 7-character pieces`).toBe(true)
      expect(parseJournalRead(result)).toEqual({ size: content.length, bytes: want })
    }
  })

  it('decodeBase64Stream then toJournalLines(bytes, from) gives the lines after `from` with their absolute end positions', async () => {
    const from = Buffer.byteLength(`${lines.slice(0, 3).join('\n')}\n`)
    const result = exec(journalReadCommand(paths, from, 1000))
    const got: JournalLine[] = []
    for await (const line of toJournalLines(decodeBase64Stream(pieces(result.stdout, 13)), from)) got.push(line)
    expect(got.length).toBeGreaterThan(3)
    let end = from
    got.forEach((line, i) => {
      end += Buffer.byteLength(lines[3 + i]!) + 1
      expect(line).toEqual({ line: lines[3 + i], endPosition: end })
    })
    expect(end).toBeLessThanOrEqual(from + 1000)
  })

  it('a missing journal decodes to no bytes, and parseJournalRead tells it from an empty journal', async () => {
    const missing = exec(journalReadCommand(journalPaths('no-such-run', root), 0, 100))
    expect(missing.exitCode, missing.stderr).toBe(0)
    expect((await decoded(missing.stdout)).length).toBe(0)
    expect(parseJournalRead(missing)).toEqual({ size: undefined, bytes: Buffer.alloc(0) })

    const emptyPaths = journalPaths('empty', root)
    writeFileSync(emptyPaths.journal, '')
    const empty = exec(journalReadCommand(emptyPaths, 0, 100))
    expect(empty.exitCode, empty.stderr).toBe(0)
    expect((await decoded(empty.stdout)).length).toBe(0)
    expect(parseJournalRead(empty)).toEqual({ size: 0, bytes: Buffer.alloc(0) })
  })
})

describe('review findings (issue 29)', () => {
  it('decodeBase64Stream refuses padding inside the frame, whole or split, instead of dropping bytes', async () => {
    const decode = async (pieces: string[]) => {
      const out: Uint8Array[] = []
      for await (const bytes of decodeBase64Stream((async function* () {
        yield* pieces
      })())) out.push(bytes)
      return Buffer.concat(out).toString('utf8')
    }
    expect(await decode(['aGk=\n'])).toBe('hi')
    expect(await decode(['aG', 'k='])).toBe('hi')
    for (const pieces of [['aGk=aGk='], ['aGk=', 'aGk='], ['a=Gk'], ['aGk=a', 'Gk=']]) {
      await expect(decode(pieces), JSON.stringify(pieces)).rejects.toMatchObject({ reason: 'read-failed' })
    }
  })

  it('journalReadCommand refuses a maxBytes that is not a number >= 1', () => {
    const paths = journalPaths('frame-max-bytes', '/tmp/frames')
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 0]) expect(() => journalReadCommand(paths, 0, bad), String(bad)).toThrow(/maxBytes must be a number of bytes >= 1/)
  })
})
