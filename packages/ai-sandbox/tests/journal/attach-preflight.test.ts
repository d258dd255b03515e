/**
 * awaitAttachableJournal over real `sh -c` children (tests/helpers/fake-handle.ts:
 * the probe is the journal's `test -f`, run through `process.exec`; the
 * handle's `fs` is unsupported, which also proves the probe never uses it)
 * and core's real `InMemoryRunStore`. Every row of spec 004's decision table,
 * a journal that appears mid-wait, a probe that throws (re-polled, never
 * fail-open), a store that throws, and abort.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InMemoryRunStore, type RunStatus, type RunStore } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxError } from '../../src/contracts/errors.js'
import type { SandboxHandle } from '../../src/contracts/handle.js'
import { awaitAttachableJournal, DEFAULT_ATTACH_JOURNAL_WAIT_MS, DEFAULT_ATTACH_PROBE_INTERVAL_MS, JournalAttachUnavailableError, type AttachUnavailableReason } from '../../src/journal/attach-preflight.js'
import { journalPaths } from '../../src/journal/commands.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const root = mkdtempSync(join(tmpdir(), 'attach-preflight-test-'))
const handle = createFakeHandle(root)
let dir: string
let runs: InMemoryRunStore

beforeEach(() => {
  dir = mkdtempSync(join(root, 'runs-'))
  runs = new InMemoryRunStore()
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

afterAll(async () => {
  await handle.destroy()
  rmSync(root, { recursive: true, force: true })
  // Every probe was an exec that ran to its end: no child is left.
  const states = await Promise.all(handle.children.map((c) => Promise.race([c.closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('running'), 1_000))])))
  expect(states.filter((s) => s !== 'closed')).toEqual([])
})

/** The handle with its exec calls counted, and optionally failing for the first `failures` calls (or all with Infinity). */
function probing(failures = 0): { handle: SandboxHandle; calls: () => number; commands: string[] } {
  const commands: string[] = []
  const exec: SandboxHandle['process']['exec'] = async (command, options) => {
    commands.push(command)
    if (commands.length <= failures) throw new Error(`exec transport down (call ${commands.length})`)
    return handle.process.exec(command, options)
  }
  return { handle: { ...handle, process: { ...handle.process, exec } }, calls: () => commands.length, commands }
}

/** A run store whose `get` calls are counted. */
function counted(store: RunStore): { runs: RunStore; gets: () => number } {
  let gets = 0
  return {
    runs: { ...store, createOrResume: (i) => store.createOrResume(i), update: (id, p) => store.update(id, p), findActiveRun: (t) => store.findActiveRun(t), get: (id) => (gets++, store.get(id)) },
    gets: () => gets,
  }
}

async function record(runId: string, status: RunStatus, detachedSince?: number): Promise<void> {
  await runs.createOrResume({ runId, threadId: `thread-of-${runId}`, startedAt: Date.now() })
  await runs.update(runId, { status, ...(detachedSince === undefined ? {} : { detachedSince }) })
}

/** Write the journal the way the agent's shell does: through the sandbox, not the host. */
async function writeJournal(journal: string): Promise<void> {
  const result = await handle.process.exec(`printf '%s\\n' '{"type":"system"}' >> '${journal}'`)
  expect(result.exitCode).toBe(0)
}

async function unavailable(promise: Promise<void>, reason: AttachUnavailableReason): Promise<JournalAttachUnavailableError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(JournalAttachUnavailableError)
  expect((error as JournalAttachUnavailableError).reason).toBe(reason)
  return error as JournalAttachUnavailableError
}

describe('awaitAttachableJournal', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_ATTACH_JOURNAL_WAIT_MS).toBe(10_000)
    expect(DEFAULT_ATTACH_PROBE_INTERVAL_MS).toBe(100)
  })

  it('resolves for an existing journal without reading the store, even when the store has no record', async () => {
    const paths = journalPaths('run-exists', dir)
    await writeJournal(paths.journal)
    const store = counted(runs)
    const probe = probing()
    await awaitAttachableJournal(probe.handle, { paths, runId: 'run-exists', runs: store.runs })
    expect(store.gets()).toBe(0)
    expect(probe.calls()).toBe(1)
    expect(probe.commands[0]).toMatch(/^test -f /)
  })

  it('fails fast with unknown-run when there is no journal and no record', async () => {
    const paths = journalPaths('run-unknown', dir)
    const probe = probing()
    const error = await unavailable(awaitAttachableJournal(probe.handle, { paths, runId: 'run-unknown', runs, waitMs: 60_000 }), 'unknown-run')
    expect(probe.calls()).toBe(1) // no wait at all
    expect(error.runId).toBe('run-unknown')
    expect(error.message).toContain(paths.journal)
    expect(error.message).toContain('"run-unknown"')
    expect(SandboxError.isInstance(error)).toBe(true)
    expect(JournalAttachUnavailableError.isInstance(error)).toBe(true)
    expect(existsSync(paths.journal)).toBe(false)
  })

  it.each(['completed', 'failed', 'aborted'] as const)('fails fast with terminal-run for a %s run without a journal', async (status) => {
    const runId = `run-${status}`
    await record(runId, status)
    const probe = probing()
    const error = await unavailable(awaitAttachableJournal(probe.handle, { paths: journalPaths(runId, dir), runId, runs, waitMs: 60_000 }), 'terminal-run')
    expect(probe.calls()).toBe(1)
    expect(error.message).toContain(`'${status}'`)
    expect(error.message).toContain('event log')
  })

  it('waits for a running run whose journal appears mid-wait, and resolves', async () => {
    await record('run-late', 'running')
    const paths = journalPaths('run-late', dir)
    const probe = probing()
    const late = new Promise<void>((resolve, reject) => setTimeout(() => writeJournal(paths.journal).then(resolve, reject), 300))
    await awaitAttachableJournal(probe.handle, { paths, runId: 'run-late', runs, waitMs: 20_000, probeIntervalMs: 20 })
    await late
    expect(probe.calls()).toBeGreaterThan(1)
  })

  it('times out with journal-timeout when a running run never writes its journal', async () => {
    await record('run-silent', 'running')
    const paths = journalPaths('run-silent', dir)
    const probe = probing()
    const error = await unavailable(awaitAttachableJournal(probe.handle, { paths, runId: 'run-silent', runs, waitMs: 300, probeIntervalMs: 25 }), 'journal-timeout')
    expect(probe.calls()).toBeGreaterThan(2)
    expect(error.message).toContain("status 'running' with a viewer attached")
    expect(error.message).toContain('did not appear within 300 ms')
    expect(existsSync(paths.journal)).toBe(false)
  })

  it('waits the same for an interrupted, detached run, and says since when it is detached', async () => {
    const since = Date.UTC(2026, 0, 2, 3, 4, 5)
    await record('run-detached', 'interrupted', since)
    const error = await unavailable(awaitAttachableJournal(handle, { paths: journalPaths('run-detached', dir), runId: 'run-detached', runs, waitMs: 150, probeIntervalMs: 25 }), 'journal-timeout')
    expect(error.message).toContain("status 'interrupted', detached since 2026-01-02T03:04:05.000Z")
  })

  it('re-polls a probe that throws instead of attaching blind, then times out with journal-timeout', async () => {
    await record('run-probe-down', 'running')
    const paths = journalPaths('run-probe-down', dir)
    const probe = probing(Infinity)
    const lines: string[] = []
    const sink = (message: string) => void lines.push(message)
    const logger = resolveDebugOption({ logger: { debug: sink, info: sink, warn: sink, error: sink } })
    const error = await unavailable(awaitAttachableJournal(probe.handle, { paths, runId: 'run-probe-down', runs, waitMs: 300, probeIntervalMs: 25, logger }), 'journal-timeout')
    expect(probe.calls()).toBeGreaterThan(2)
    expect(error.message).toContain('could not be probed')
    expect((error.cause as Error).message).toMatch(/exec transport down/)
    expect(lines.filter((l) => l.includes('journal probe failed')).length).toBe(probe.calls())
    expect(existsSync(paths.journal)).toBe(false) // never created by a fail-open reader
  })

  it('resolves once a failing probe recovers and finds the journal', async () => {
    await record('run-probe-back', 'running')
    const paths = journalPaths('run-probe-back', dir)
    await writeJournal(paths.journal)
    const probe = probing(3)
    await awaitAttachableJournal(probe.handle, { paths, runId: 'run-probe-back', runs, waitMs: 20_000, probeIntervalMs: 10 })
    expect(probe.calls()).toBe(4)
  })

  it('still fails fast for an unknown run when the probe throws: the store check needs no probe', async () => {
    const probe = probing(Infinity)
    await unavailable(awaitAttachableJournal(probe.handle, { paths: journalPaths('run-nobody', dir), runId: 'run-nobody', runs, waitMs: 60_000 }), 'unknown-run')
    expect(probe.calls()).toBe(1)
  })

  it('treats a store that throws, or no store, as no answer: the bounded wait', async () => {
    const broken: RunStore = { ...runs, createOrResume: (i) => runs.createOrResume(i), update: (id, p) => runs.update(id, p), findActiveRun: (t) => runs.findActiveRun(t), get: () => Promise.reject(new Error('store offline')) }
    const lines: string[] = []
    const sink = (message: string) => void lines.push(message)
    const logger = resolveDebugOption({ logger: { debug: sink, info: sink, warn: sink, error: sink } })
    const error = await unavailable(awaitAttachableJournal(handle, { paths: journalPaths('run-x', dir), runId: 'run-x', runs: broken, waitMs: 100, probeIntervalMs: 25, logger }), 'journal-timeout')
    expect(error.message).toContain('the run record is not available')
    expect(lines.some((l) => l.includes('reading the run record'))).toBe(true)

    const paths = journalPaths('run-no-store', dir)
    const late = new Promise<void>((resolve, reject) => setTimeout(() => writeJournal(paths.journal).then(resolve, reject), 100))
    await awaitAttachableJournal(handle, { paths, runId: 'run-no-store', waitMs: 20_000, probeIntervalMs: 20 })
    await late
  })

  it('returns when the caller aborts mid-wait, and at once when already aborted', async () => {
    await record('run-abort', 'running')
    const paths = journalPaths('run-abort', dir)
    const controller = new AbortController()
    const probe = probing()
    setTimeout(() => controller.abort(), 150)
    await expect(awaitAttachableJournal(probe.handle, { paths, runId: 'run-abort', runs, waitMs: 60_000, probeIntervalMs: 10_000, signal: controller.signal })).resolves.toBeUndefined()
    expect(probe.calls()).toBe(1) // the abort cut the 10 s pause short

    const aborted = probing()
    await expect(awaitAttachableJournal(aborted.handle, { paths, runId: 'run-abort', runs, waitMs: 60_000, signal: AbortSignal.abort() })).resolves.toBeUndefined()
    expect(aborted.calls()).toBe(1)
  })

  it('probes a hostile run id without running any of it', async () => {
    const runId = `x'; touch pwned; echo "$(touch pwned2)" \`touch pwned3\` ../.. \\ %0A z`
    await unavailable(awaitAttachableJournal(handle, { paths: journalPaths(runId, dir), runId, runs }), 'unknown-run')
    expect(readdirSync(root).filter((name) => name.startsWith('pwned'))).toEqual([])
  })

  it('refuses bad options with a SandboxConfigError naming the field', async () => {
    const paths = journalPaths('run-bad', dir)
    const call = (options: unknown) => awaitAttachableJournal(handle, options as never)
    await expect(call({ paths, runId: '' })).rejects.toThrow(/awaitAttachableJournal\.runId/)
    await expect(call({ paths: { ...paths, journal: 'relative.ndjson' }, runId: 'r' })).rejects.toThrow(/awaitAttachableJournal\.paths\.journal: expected an absolute path/)
    await expect(call({ paths, runId: 'r', waitMs: -1 })).rejects.toThrow(/awaitAttachableJournal\.waitMs/)
    await expect(call({ paths, runId: 'r', probeIntervalMs: 0 })).rejects.toThrow(/awaitAttachableJournal\.probeIntervalMs/)
    await expect(call({ paths, runId: 'r', runs: {} })).rejects.toThrow(/awaitAttachableJournal\.runs/)
    await expect(call({ paths, runId: 'r', signal: 'abort' })).rejects.toThrow(/awaitAttachableJournal\.signal: expected an AbortSignal/)
    await expect(call({ paths, runId: 'r', wait: 5 })).rejects.toThrow(SandboxConfigError)
  })
})
