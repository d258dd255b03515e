// Faults a fresh-user review of the journal found, each reproduced through the
// public API on real host processes (the naive host provider: `sh`, `tail`):
// follow positions after invalid UTF-8, a reader left waiting forever once
// another reader deleted the journal, an empty journal left behind by a read
// of a deleted one, and resume offsets that are not a line's start.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { journalPaths, readJournal, readJournalNdjson, SandboxConfigError, startJournaledAgent, JournalAttachUnavailableError, type JournalLine, type SandboxHandle } from '../../src/index.js'
import { naiveHostProvider } from '../testkit/naive-host-provider.js'

const root = mkdtempSync(join(tmpdir(), 'journal-review-'))
const provider = naiveHostProvider(`journal-review-${randomUUID()}`)
const handles: SandboxHandle[] = []
afterAll(async () => {
  await Promise.all(handles.map((handle) => handle.destroy()))
  rmSync(root, { recursive: true, force: true })
})

async function newRun(name: string): Promise<{ handle: SandboxHandle; runId: string; dir: string }> {
  const handle = await provider.create()
  handles.push(handle)
  return { handle, runId: `${name}-${randomUUID()}`, dir: join(root, name) }
}

async function collect(lines: AsyncIterable<JournalLine>): Promise<JournalLine[]> {
  const out: JournalLine[] = []
  for await (const line of lines) out.push(line)
  return out
}

describe('journal faults found in review', () => {
  it('follow gives the same byte positions as poll when a line holds invalid UTF-8, and resuming at a line end loses nothing', async () => {
    const { handle, runId, dir } = await newRun('utf8')
    await startJournaledAgent(handle, `printf '\\377\\376 bad\\n{"a":1}\\n\\377x\\n{"b":2}\\n'`, { journal: { runId, dir } })
    const paths = journalPaths(runId, dir)
    const follow = await collect(readJournal(handle, { paths, strategy: 'follow' }))
    const poll = await collect(readJournal(handle, { paths, strategy: 'poll' }))
    expect(follow.map((line) => line.endPosition)).toEqual(poll.map((line) => line.endPosition))
    const resumed = await collect(readJournal(handle, { paths, strategy: 'follow', fromByte: follow[0]!.endPosition }))
    expect(resumed.map((line) => line.line)).toEqual(follow.slice(1).map((line) => line.line))
  })

  it.each(['poll', 'follow'] as const)('%s: a reader behind the run\'s own reader ends with journal-stalled once the journal is deleted, instead of waiting forever', async (strategy) => {
    const { handle, runId, dir } = await newRun(`deleted-${strategy}`)
    await startJournaledAgent(handle, `printf '{"a":1}\\n'; sleep 1; printf '{"b":2}\\n'`, { journal: { runId, dir } })
    const observer = collect(readJournal(handle, { runId, dir, strategy, pollMs: 100, stallMs: 30_000 }))
    // The owner deletes the journal right after the sentinel; the observer may or may not have seen it first.
    for await (const _ of readJournalNdjson(handle, { journal: { runId, dir } })) void _
    const outcome = await Promise.race([observer.then((lines) => ({ lines }), (error: unknown) => ({ error })), new Promise((resolve) => setTimeout(() => resolve('hung'), 15_000))])
    expect(outcome).not.toBe('hung')
    if (typeof outcome === 'object' && outcome !== null && 'error' in outcome) {
      expect(JournalAttachUnavailableError.isInstance(outcome.error) && outcome.error.reason).toBe('journal-stalled')
    }
  })

  it('a read of a journal that no longer exists fails and leaves no empty journal behind', async () => {
    const { handle, runId, dir } = await newRun('gone')
    const paths = journalPaths(runId, dir)
    await expect(collect(readJournal(handle, { paths, emptyWaitMs: 500 }))).rejects.toMatchObject({ reason: 'journal-stalled' })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(existsSync(paths.journal)).toBe(false)
  })

  it('an invalid fromByte, or one in the middle of a line, is refused at once with SandboxConfigError', async () => {
    const { handle, runId, dir } = await newRun('from')
    await startJournaledAgent(handle, `printf '{"a":1}\\n'`, { journal: { runId, dir } })
    const paths = journalPaths(runId, dir)
    const lines = await collect(readJournal(handle, { paths }))
    for (const fromByte of [-1, 1.5, Number.NaN, lines[0]!.endPosition - 3, lines[0]!.endPosition + 100]) {
      await expect(collect(readJournal(handle, { paths, fromByte })), String(fromByte)).rejects.toBeInstanceOf(SandboxConfigError)
    }
    expect(() => journalPaths(runId, 'relative/dir')).toThrow(SandboxConfigError)
  })
})
