/**
 * The journal's output parsers (parseJournalRead, parseJournalList,
 * parseJournalMtimeListing, parseJournalExit) on hand-made output, including
 * malformed output, and the matching commands run by the host's real `sh`
 * over files in a temp folder (BusyBox runs them in the conformance kit).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { JournalError } from '../../src/journal/errors.js'
import {
  journalExitProbeCommand,
  journalListCommand,
  journalMtimeListCommand,
  journalPaths,
  parseJournalExit,
  parseJournalList,
  parseJournalMtimeListing,
} from '../../src/journal/commands.js'
import { journalReadCommand, parseJournalRead } from '../../src/journal/bounded-read.js'
import { encodeRunId } from '../../src/journal/run-id.js'
import { exitSentinelLine, journalHeaderLine } from '../../src/journal/sentinel.js'

const root = mkdtempSync(join(tmpdir(), 'journal-commands-test-'))
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
  expect(existsSync(root)).toBe(false)
})

const sh = (command: string): string => execFileSync('/bin/sh', ['-c', command], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
const exec = (command: string) => {
  const result = spawnSync('/bin/sh', ['-c', command], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  return { stdout: result.stdout, stderr: result.stderr, exitCode: result.status ?? -1 }
}
const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64')
const thrown = (run: () => unknown): unknown => {
  try {
    run()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

describe('parseJournalRead', () => {
  it('reads the status line on stderr and the (wrapped) base64 frame on stdout', () => {
    expect(parseJournalRead({ stdout: '', stderr: 'journal-missing\n' })).toEqual({ size: undefined, bytes: Buffer.alloc(0) })
    expect(parseJournalRead({ stdout: '', stderr: 'journal-size 0\n', exitCode: 0 })).toEqual({ size: 0, bytes: Buffer.alloc(0) })
    const body = randomBytes(200)
    const wrapped = b64(body).replace(/(.{76})/g, '$1\n')
    expect(parseJournalRead({ stdout: `${wrapped}\n`, stderr: 'bash: some profile noise\njournal-size    4096\n' })).toEqual({ size: 4096, bytes: body })
  })

  it.each([
    ['no status line', { stdout: 'aGVsbG8K\n', stderr: '' }],
    ['a negative size', { stdout: 'aGk=\n', stderr: 'journal-size -1\n' }],
    ['a size that is not a number', { stdout: 'aGk=\n', stderr: 'journal-size \n' }],
    ['the old size line on stdout', { stdout: '4\naGk=\n', stderr: '' }],
    ['a frame cut mid-quantum', { stdout: 'aGVsbG8\n', stderr: 'journal-size 6\n' }],
    ['a stray character', { stdout: 'aGk*\n', stderr: 'journal-size 2\n' }],
    ['a failed command', { stdout: '', stderr: 'sh: dd: not found\n', exitCode: 127 }],
  ])('throws JournalError read-failed on %s', (_what, result) => {
    const error = thrown(() => parseJournalRead(result))
    expect(JournalError.isInstance(error)).toBe(true)
    expect((error as JournalError).reason).toBe('read-failed')
  })

  it('the real command reads exact byte ranges around its 64 KiB dd blocks', () => {
    const content = randomBytes(200_000)
    const paths = journalPaths('read-ranges', root)
    writeFileSync(paths.journal, content)
    for (const [from, max] of [[0, 10], [1, 70_000], [65_535, 3], [65_536, 65_536], [65_537, 1], [131_071, 100_000], [199_999, 50], [200_000, 10], [250_000, 10]] as const) {
      const read = parseJournalRead(exec(journalReadCommand(paths, from, max)))
      expect(read.size).toBe(200_000)
      expect(read.bytes.equals(content.subarray(from, from + max)), `bytes ${from}..+${max}`).toBe(true)
    }
    expect(parseJournalRead(exec(journalReadCommand(journalPaths('no-such-run', root))))).toEqual({ size: undefined, bytes: Buffer.alloc(0) })
  })
})

describe('parseJournalList and parseJournalMtimeListing', () => {
  const dir = '/tmp/tanstack-runs'
  const long = `${'é'.repeat(60)}`

  it('decodes listed names, keeps foreign ones without a runId, ignores other folders, sorts by name', () => {
    const stdout = [`${dir}/run-b.ndjson`, `${dir}/notes.v2.ndjson`, `/elsewhere/run-c.ndjson`, `${dir}/run-a.err`, `${dir}/${encodeRunId(long)}.ndjson`, `${dir}/run-a.ndjson`, ''].join('\n')
    expect(parseJournalList(stdout, `${dir}/`)).toEqual([
      { path: `${dir}/${encodeRunId(long)}.ndjson`, name: `${encodeRunId(long)}.ndjson`, runId: long },
      { path: `${dir}/notes.v2.ndjson`, name: 'notes.v2.ndjson', runId: undefined },
      { path: `${dir}/run-a.ndjson`, name: 'run-a.ndjson', runId: 'run-a' },
      { path: `${dir}/run-b.ndjson`, name: 'run-b.ndjson', runId: 'run-b' },
    ])
    expect(parseJournalList('')).toEqual([])
  })

  it('reads the sandbox clock and each mtime in ms', () => {
    const stdout = ['1700000100', `1700000000 ${dir}/run-b.ndjson`, `1699990000 ${dir}/run-a.ndjson`, 'garbage line', `1700000050 /other/x.ndjson`, ''].join('\n')
    expect(parseJournalMtimeListing(stdout)).toEqual({
      nowMs: 1_700_000_100_000,
      entries: [
        { path: `${dir}/run-a.ndjson`, name: 'run-a.ndjson', runId: 'run-a', mtimeMs: 1_699_990_000_000 },
        { path: `${dir}/run-b.ndjson`, name: 'run-b.ndjson', runId: 'run-b', mtimeMs: 1_700_000_000_000 },
      ],
    })
    expect(parseJournalMtimeListing('1700000100\n')).toEqual({ nowMs: 1_700_000_100_000, entries: [] })
  })

  it('throws JournalError read-failed when the listing does not start with the clock', () => {
    for (const stdout of ['', 'sh: date: not found\n', `${dir}/run-a.ndjson\n`]) {
      const error = thrown(() => parseJournalMtimeListing(stdout))
      expect((error as JournalError).reason).toBe('read-failed')
    }
  })

  it('the real commands list nested long-id journals with their mtimes', () => {
    const dir = join(root, 'listing')
    const ids = ['run-1', 'a/b', 'x'.repeat(450)]
    for (const id of ids) {
      const paths = journalPaths(id, dir)
      mkdirSync(join(paths.journal, '..'), { recursive: true })
      writeFileSync(paths.journal, '')
      writeFileSync(paths.stderr, '')
      utimesSync(paths.journal, 1_600_000_000, 1_600_000_000)
    }
    writeFileSync(join(dir, 'stray.txt'), '')
    expect(parseJournalList(sh(journalListCommand(dir)), dir).map((e) => e.runId).sort()).toEqual([...ids].sort())
    const listing = parseJournalMtimeListing(sh(journalMtimeListCommand(dir)), dir)
    expect(Math.abs(listing.nowMs - Date.now())).toBeLessThan(5_000)
    expect(listing.entries.map((e) => [e.runId, e.mtimeMs]).sort()).toEqual(ids.map((id) => [id, 1_600_000_000_000]).sort())
    expect(sh(journalListCommand(join(root, 'no-such-folder')))).toBe('')
  })
})

describe('parseJournalExit', () => {
  const nonce = randomBytes(16).toString('hex')
  const probe = (journal: string, tailBytes = 64 * 1024) => {
    const tail = Buffer.from(journal).subarray(-tailBytes)
    const head = journal.slice(0, journal.indexOf('\n') + 1)
    return `present\n${b64(head).replace(/(.{76})/g, '$1\n')}\n.\n${b64(tail).replace(/(.{76})/g, '$1\n')}\n`
  }

  it('missing, running, or exited only on the genuine sentinel', () => {
    expect(parseJournalExit('missing\n')).toEqual({ state: 'missing' })
    const head = `${journalHeaderLine(nonce)}\n{"type":"a"}\n`
    expect(parseJournalExit(probe(head))).toEqual({ state: 'running' })
    expect(parseJournalExit(probe(`${head}{"__exit":0}\n`))).toEqual({ state: 'running' })
    expect(parseJournalExit(probe(`${head}${exitSentinelLine(0, randomBytes(16).toString('hex'))}\n`))).toEqual({ state: 'running' })
    expect(parseJournalExit(probe(`${head}\n${exitSentinelLine(4, nonce)}\n`))).toEqual({ state: 'exited', exitCode: 4 })
  })

  it('finds the sentinel after a tail cut mid-line and mid-character', () => {
    const journal = `${journalHeaderLine(nonce)}\n${'{"t":"日本語"}\n'.repeat(500)}\n${exitSentinelLine(9, nonce)}\n`
    expect(parseJournalExit(probe(journal, 100))).toEqual({ state: 'exited', exitCode: 9 })
  })

  it('a journal whose shell could not draw a nonce never reads as exited', () => {
    expect(parseJournalExit(probe('{"__journal":1,"__error":"the sandbox needs od"}\n{"__exit":0,"__nonce":""}\n'))).toEqual({ state: 'running' })
  })

  it.each([['an unknown status', 'maybe\n'], ['no separator', `present\n${b64('x\n')}\n`], ['empty output', '']])('throws JournalError read-failed on %s', (_what, stdout) => {
    expect((thrown(() => parseJournalExit(stdout)) as JournalError).reason).toBe('read-failed')
  })

  it('the real probe reads a real journal', () => {
    const paths = journalPaths('probe-me', root)
    expect(parseJournalExit(sh(journalExitProbeCommand(paths)))).toEqual({ state: 'missing' })
    writeFileSync(paths.journal, `${journalHeaderLine(nonce)}\n${'{"pad":"xxxxxxxxxxxxxxxx"}\n'.repeat(5000)}`)
    expect(parseJournalExit(sh(journalExitProbeCommand(paths)))).toEqual({ state: 'running' })
    writeFileSync(paths.journal, `\n${exitSentinelLine(0, nonce)}\n`, { flag: 'a' })
    expect(parseJournalExit(sh(journalExitProbeCommand(paths, 4096)))).toEqual({ state: 'exited', exitCode: 0 })
  })
})
