/**
 * The journal shell on the host's real `sh` (tests/helpers/fake-handle.ts):
 * the header carries sha256 of the nonce the sentinel later carries, and the
 * nonce is never in the journal before the sentinel; a shell without `od`
 * writes the error header, the start fails with exit 127, and a reader of
 * that journal fails with JournalError `journal-unsupported` instead of
 * waiting for a sentinel that cannot come; a hand-written journal with a
 * forged sentinel reads to its genuine one; a follow whose journal was
 * renamed over or replaced by a link ends, and its reader gives up.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { SandboxOperationError } from '../../src/contracts/errors.js'
import { startJournaledAgent } from '../../src/journal/journaled-spawn.js'
import { journalPaths } from '../../src/journal/commands.js'
import { JournalAttachUnavailableError } from '../../src/journal/attach-preflight.js'
import { JournalError } from '../../src/journal/errors.js'
import { readJournal } from '../../src/journal/reader.js'
import { exitSentinelLine, journalHeaderLine, nonceHash, parseExitSentinel, parseJournalHeader } from '../../src/journal/sentinel.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const root = mkdtempSync(join(tmpdir(), 'journal-shell-test-'))
const handle = createFakeHandle(root)
const dir = join(root, 'journals')

afterAll(async () => {
  await handle.destroy()
  rmSync(root, { recursive: true, force: true })
  expect(existsSync(root)).toBe(false)
})

async function until(done: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!done()) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

it('the header holds sha256 of the nonce only the sentinel reveals', async () => {
  const paths = await startJournaledAgent(handle, `printf '%s\\n' '{"a":1}'`, { journal: { runId: 'nonce-run', dir } })
  await until(() => readFileSync(paths.journal, 'utf8').includes('"__exit"'))
  const lines = readFileSync(paths.journal, 'utf8').split('\n')
  const header = parseJournalHeader(lines[0]!)!
  const sentinel = JSON.parse(lines.at(-2)!) as { __exit: number; __nonce: string }
  expect(sentinel.__nonce).toMatch(/^[0-9a-f]{32}$/)
  expect(header.nonceHash).toBe(nonceHash(sentinel.__nonce))
  expect(lines.slice(0, -2).join('\n')).not.toContain(sentinel.__nonce)
  expect(parseExitSentinel(lines.at(-2)!, header)).toEqual({ exitCode: 0 })
})

it('a shell without od writes the error header, the start fails with 127, and a reader fails journal-unsupported', async () => {
  const bin = join(root, 'bin-without-od')
  mkdirSync(bin)
  for (const tool of ['mkdir', 'chmod', 'cp', 'tr', 'sha256sum', 'wc', 'dd', 'tail', 'head', 'base64', 'rm']) symlinkSync(execFileSync('/bin/sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(bin, tool))
  const start = startJournaledAgent(handle, 'echo never', { journal: { runId: 'no-od', dir }, env: { PATH: bin } })
  const error = await start.catch((e: unknown) => e)
  expect(SandboxOperationError.isInstance(error)).toBe(true)
  expect((error as SandboxOperationError).message).toMatch(/exit 127.*od, tr, sha256sum/)
  const paths = journalPaths('no-od', dir)
  expect(parseJournalHeader(readFileSync(paths.journal, 'utf8').split('\n')[0]!)?.error).toMatch(/needs od/)
  const read = (async () => {
    for await (const _ of readJournal(handle, { paths, strategy: 'poll', pollMs: 20 })) void _
  })()
  const failure = await read.catch((e: unknown) => e)
  expect(JournalError.isInstance(failure)).toBe(true)
  expect((failure as JournalError).reason).toBe('journal-unsupported')
})

it('a hand-written journal reads past its forged sentinels to the genuine one, by follow and by poll', async () => {
  const nonce = 'f'.repeat(32)
  const paths = journalPaths('hand-written', dir)
  writeFileSync(paths.journal, [journalHeaderLine(nonce), '{"a":1}', '{"__exit":0}', exitSentinelLine(0, 'e'.repeat(32)), '{"b":2}', '', exitSentinelLine(6, nonce), '{"after":"the sentinel"}', ''].join('\n'))
  for (const strategy of ['follow', 'poll'] as const) {
    let exitCode: number | undefined
    const texts: string[] = []
    for await (const line of readJournal(handle, { paths, strategy, pollMs: 20, onExit: (e) => (exitCode = e.exitCode) })) texts.push(line.line)
    expect(texts, strategy).toEqual(['{"a":1}', '{"__exit":0}', exitSentinelLine(0, 'e'.repeat(32)), '{"b":2}'])
    expect(exitCode).toBe(6)
  }
  // The follow's tail was killed when the reader stopped.
  expect(handle.children.filter((c) => c.command.includes('exec tail') && !c.killed)).toEqual([])
})

it('a follow ends when its journal is renamed over or becomes a link, and the reader gives up journal-stalled instead of waiting forever', async () => {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  for (const how of ['renamed over', 'a link'] as const) {
    const paths = journalPaths(`replaced-${how.replace(' ', '-')}`, dir)
    writeFileSync(paths.journal, `${journalHeaderLine('a'.repeat(32))}\n{"a":1}\n`)
    const other = join(root, `other-${how.replace(' ', '-')}`)
    const texts: string[] = []
    const started = Date.now()
    const failure = await (async () => {
      for await (const line of readJournal(handle, { paths, strategy: 'follow', stallMs: 1_500, pollMs: 50, signal: AbortSignal.timeout(20_000) })) {
        texts.push(line.line)
        writeFileSync(other, '{"b":2}\n')
        if (how === 'renamed over') renameSync(other, paths.journal)
        else {
          rmSync(paths.journal)
          symlinkSync(other, paths.journal)
        }
      }
    })().then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(texts, how).toEqual(['{"a":1}'])
    expect(JournalAttachUnavailableError.isInstance(failure) ? failure.reason : failure, how).toBe('journal-stalled')
    expect(Date.now() - started, `${how}: bounded by stallMs and the watchdog's grace, not the 20 s guard`).toBeLessThan(15_000)
  }
})

it('a follow ends once the run has no waiting shell left (killed, or unable to write the sentinel), and the reader gives up journal-stalled', async () => {
  const runId = 'waiter-killed'
  const paths = await startJournaledAgent(handle, `echo '{"a":1}'; sleep 59.75`, { journal: { runId, dir } })
  await until(() => readFileSync(paths.journal, 'utf8').includes('{"a":1}'))
  // The waiting shell and its forks: the processes whose command line holds the journal's path and the header's key.
  const waiters = execFileSync('/bin/sh', ['-c', `grep -lF -- ${JSON.stringify(paths.journal)} $(grep -lF __nonceHash /proc/[0-9]*/cmdline 2>/dev/null) </dev/null 2>/dev/null | cut -d/ -f3`], { encoding: 'utf8' }).split('\n').filter(Boolean)
  expect(waiters.length, 'the run has a waiting shell').toBeGreaterThan(0)
  for (const pid of waiters) {
    try {
      process.kill(Number(pid), 'SIGKILL')
    } catch {
      // The listing's own shell matched too, and is gone.
    }
  }
  const texts: string[] = []
  const started = Date.now()
  const failure = await (async () => {
    for await (const line of readJournal(handle, { runId, dir, strategy: 'follow', stallMs: 2_000, signal: AbortSignal.timeout(40_000) })) texts.push(line.line)
  })().then(
    () => undefined,
    (error: unknown) => error,
  )
  execFileSync('/bin/sh', ['-c', `pkill -KILL -f 'sleep 59[.]75' || true`])
  expect(texts).toEqual(['{"a":1}'])
  expect(JournalAttachUnavailableError.isInstance(failure) ? failure.reason : failure).toBe('journal-stalled')
  expect(Date.now() - started, 'bounded by the waiter looks, the grace and stallMs, not the 40 s guard').toBeLessThan(30_000)
})
