/**
 * Hostile run ids (issue 27): one rule, checked where an id enters, before
 * anything is created under it, and no promise the library starts may reject
 * unhandled. Through the public API: `isValidRunId` / `assertValidRunId`,
 * `encodeRunId`, `resolveStreamSource`, and chat() + withSandbox durable runs
 * over the naive host provider (real temp directories, real `sh`) with core's
 * InMemoryRunStore, which accepts any id, so only withSandbox can refuse it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { InMemoryRunStore, memoryStream } from '@tanstack/ai'
import { assertValidRunId, encodeRunId, InvalidRunIdError, isValidRunId, JournalError, MAX_RUN_ID_LENGTH, resolveStreamSource, runIdProblem, withSandbox } from '../../src/index.js'
import { endJournaledRun, finishJournal } from '../../src/journal/run-end.js'
import { naiveHostProvider } from '../testkit/naive-host-provider.js'
import { agentAdapter, alive, drive, probe, sandboxLab, waitFor, warnings, type Probed } from './durability-helpers.js'

vi.setConfig({ testTimeout: 15_000 })

/** Ids every boundary must refuse, by what is wrong with them. */
const HOSTILE: Record<string, string> = {
  'one code unit too long (513)': 'r'.repeat(MAX_RUN_ID_LENGTH + 1),
  'a lone high surrogate': 'run-\ud800',
  'a lone low surrogate': '\udc00-run',
  'CR/LF': 'run-1\r\nX-Injected: 1',
  NUL: 'run\u0000x',
  DEL: 'run\u007f',
  'a C1 control (U+0085)': 'run\u0085',
}

describe('the run-id rule', () => {
  it.each(Object.entries(HOSTILE))('refuses %s everywhere with reason invalid-run-id', (_, runId) => {
    expect(isValidRunId(runId)).toBe(false)
    expect(() => assertValidRunId(runId, '?runId')).toThrow(InvalidRunIdError)
    try {
      assertValidRunId(runId, '?runId')
    } catch (error) {
      expect((error as InvalidRunIdError).reason).toBe('invalid-run-id')
      expect((error as InvalidRunIdError).field).toBe('?runId')
      expect((error as Error).message, 'the message names the field and the fix').toMatch(/^\?runId .*Use a UUID/)
    }
    expect(() => encodeRunId(runId)).toThrow(JournalError)
    expect(() => resolveStreamSource({ runId }, (id, message) => new InvalidRunIdError('runId', message))).toThrow(InvalidRunIdError)
  })

  it('accepts a UUID, 512 code units and a surrogate pair; refuses the empty string and non-strings', () => {
    for (const runId of [crypto.randomUUID(), 'r'.repeat(MAX_RUN_ID_LENGTH), 'run-\u{1f600}', '../x y']) {
      expect(runIdProblem(runId), JSON.stringify(runId.slice(0, 20))).toBeUndefined()
      expect(() => encodeRunId(runId)).not.toThrow()
    }
    for (const runId of ['', undefined, null, 7, {}]) expect(isValidRunId(runId)).toBe(false)
  })
})

describe('chat() + withSandbox with a hostile run id', () => {
  const lab = sandboxLab('hostile-run-ids')
  const started: number[] = []
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)

  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(async () => {
    process.off('unhandledRejection', onUnhandled)
    expect(await lab.cleanup(), 'no sandbox directory is left').toEqual([])
    expect(await waitFor(() => started.every((pid) => !alive(pid))), 'no agent process is left').toBe(true)
    started.length = 0
  })

  it.each(Object.entries(HOSTILE))('%s: the run fails at setup with InvalidRunIdError, starts nothing, and nothing rejects unhandled', async (name, runId) => {
    const runs = new InMemoryRunStore()
    const threadId = `thread-hostile-${Object.keys(HOSTILE).indexOf(name)}`
    await runs.createOrResume({ runId, threadId, startedAt: Date.now() })
    const sandbox = lab.sandbox('hostile', { lifecycle: { reuse: 'thread', destroyOnComplete: true } })
    const agent = agentAdapter({ turns: ['text'] })
    const seen: Probed = {}
    const out = await drive({ adapter: agent.adapter, logger: warnings().logger, middleware: [withSandbox(sandbox, { runs, durability: { adapter: memoryStream({ runId: 'log-of-hostile-run' }) } }), probe(seen)], runId, threadId })
    started.push(...agent.pids)
    // Let every background promise of the run settle (end-of-run cleanup waits up to 3 s for a sentinel).
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(unhandled.map(String), 'no promise rejected unhandled').toEqual([])
    expect(InvalidRunIdError.isInstance(out.thrown), `the run throws InvalidRunIdError; got ${String(out.thrown)}`).toBe(true)
    expect(agent.calls(), 'the agent never ran').toBe(0)
    expect(seen.handle, 'no sandbox was provided').toBeUndefined()
  })
})

describe('end-of-run cleanup with an id the journal refuses', () => {
  it.each(Object.entries(HOSTILE))('%s: finishJournal and endJournaledRun resolve and log instead of rejecting', async (_, runId) => {
    const handle = await naiveHostProvider('hostile-run-ids-cleanup').create({})
    try {
      const logged: string[] = []
      const log = (message: string) => void logged.push(message)
      await expect(finishJournal(handle, { runId }, log)).resolves.toBeUndefined()
      await expect(endJournaledRun(handle, { runId }, log)).resolves.toBeUndefined()
      expect(logged.filter((line) => line.startsWith('could not delete the journal')), 'each refusal is logged').toHaveLength(2)
    } finally {
      await handle.destroy()
    }
  })
})
