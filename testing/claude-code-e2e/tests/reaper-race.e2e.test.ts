/**
 * The reaper never terminalizes a run that is still producing, over
 * randomized sweeps racing live runs (spec 000 "The reaper ships as a
 * function, not a scheduler", spec 002: the sweep never drives a run to
 * learn whether it finished). No CLI here: each run is a real journaled
 * agent (core's `runHarness` with `journal: true`, a shell that writes NDJSON
 * lines slowly, some with a forged sentinel line) in its own local-process
 * sandbox, started durably through `withSandbox` over the SQLite stores and
 * left by its client at a seeded point. Sweeps (`hasFinished` over
 * `probeRunExit`, `sandboxReclaimer`) come at seeded random times with
 * random TTLs, quiet windows and `maxRuns`, sometimes two at once, while
 * runs start, write and exit. Before each sweep the suite notes which
 * detached runs are producing (the agent alive and not at its end: its exit
 * marker, written just before it exits and so before the journal's
 * sentinel, is absent); after it, such a run may only be terminal because
 * its TTL passed (`expired`) or because its agent exited during the sweep
 * (`finalized`, with the agent's exit marker older than the sweep's drive).
 * Every finalized log holds the whole transcript once. Seeds are printed;
 * `REAPER_SEED` replays them; `REAPER_SWEEPS` is the count (CI and default
 * 40; `pnpm soak` runs 100).
 * Everything is cleaned up and checked: 0 sandbox folders, 0 journals, 0 agents.
 */
import { randomInt, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { chat, EventType, isTerminalRunStatus, toServerSentEventsResponse, type RunRecord, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { defineSandbox, probeRunExit, reapDetachedRuns, runHarness, sandboxReclaimer, SandboxCapability, shellQuote, withSandbox, EXIT_SENTINEL_KEY, EXIT_SENTINEL_NONCE_KEY, type HarnessTranslator, type ReapResult, type RunExitProbe } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { isRunAcceptedMarker, readSseEvents, transcriptOf } from '@testing/support/sse-client'
import { seededRandom } from '../src/takeover-trial.js'
import { waitFor } from './helpers/run-claude.js'

const SWEEPS = Number(process.env.REAPER_SWEEPS ?? 40)
/** Live runs kept going while the sweeps race them (no new ones for the last 10 sweeps), and the most started in all. */
const LIVE = 4
const MAX_RUNS_STARTED = 40
const SEED = Number(process.env.REAPER_SEED ?? randomInt(2 ** 30))
console.info(`[reaper race] seed ${SEED}: REAPER_SEED=${SEED} replays these runs, detach points, sweep times and TTLs (REAPER_SWEEPS=${SWEEPS})`)
/** The driver lease's key prefix (`runDriverLockKey`, internal to @tanstack/ai-sandbox). */
const DRIVER_LEASE_PREFIX = 'tanstack-ai-sandbox:run-driver:'

/** How one run's agent behaves. */
interface Script {
  lines: number
  /** Seconds between two lines. */
  delay: string
  /** Print a sentinel-shaped line with a made-up nonce halfway: it must not count as an exit. */
  forge: boolean
  /** Host files the agent writes: its pid first, an exit marker just before it exits. */
  pidFile: string
  exitFile: string
}

const lineText = (i: number): string => `line ${i}. `
const safe = (runId: string): string => runId.replace(/[^A-Za-z0-9_-]/g, '_')

function agentCommand(script: Script): string {
  const forged = `{"${EXIT_SENTINEL_KEY}":0,"${EXIT_SENTINEL_NONCE_KEY}":"${'0'.repeat(32)}"}`
  const half = Math.ceil(script.lines / 2)
  const body = [
    `echo $$ > ${shellQuote(script.pidFile)}`,
    `i=1; while [ $i -le ${script.lines} ]; do printf '{"type":"text","text":"line %d. "}\\n' $i; ${script.forge ? `if [ $i -eq ${half} ]; then printf '%s\\n' ${shellQuote(forged)}; fi; ` : ''}sleep ${script.delay}; i=$((i+1)); done`,
    `printf '{"type":"done"}\\n'`,
    `touch ${shellQuote(script.exitFile)}`,
  ].join('; ')
  return `exec sh -c ${shellQuote(body)}`
}

/** Text events to chunks; ids from the run-scoped `genId`, so a replay re-translates to the same chunks. */
function translator(ids: { runId: string; threadId: string; genId: () => string }): HarnessTranslator {
  let messageId: string | undefined
  let ended = false
  const at = (chunk: Record<string, unknown>): StreamChunk => ({ timestamp: Date.now(), ...chunk }) as unknown as StreamChunk
  return {
    start: () => [at({ type: EventType.RUN_STARTED, runId: ids.runId, threadId: ids.threadId })],
    push: (event) => {
      const e = event as { type?: string; text?: string }
      if (e.type === 'text' && typeof e.text === 'string') {
        const open = messageId === undefined ? [at({ type: EventType.TEXT_MESSAGE_START, messageId: (messageId = ids.genId()), role: 'assistant' })] : []
        return [...open, at({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: e.text })]
      }
      if (e.type !== 'done') return []
      ended = true
      return [...(messageId === undefined ? [] : [at({ type: EventType.TEXT_MESSAGE_END, messageId })]), at({ type: EventType.RUN_FINISHED, runId: ids.runId, threadId: ids.threadId, finishReason: 'stop' })]
    },
    finish: (exit) => (ended ? [] : [at({ type: EventType.RUN_ERROR, message: `the agent exited ${exit.exitCode} without its final event`, code: 'agent-exit' })]),
  }
}

/** A `chat()` adapter whose runs are the slow agent of `scripts[runId]` (journaled; an attach replays the journal). */
function slowAgentAdapter(scripts: Map<string, Script>): TextAdapter<any, any, any, any> {
  return {
    kind: 'text',
    name: 'reaper-race-agent',
    model: 'scripted',
    requires: [SandboxCapability],
    '~types': undefined as never,
    chatStream: (options: any) =>
      runHarness({
        harness: 'reaper-race-agent',
        journal: true,
        model: 'scripted',
        options,
        exitGraceMs: 500,
        translator,
        prepare: async (run) => ({ command: agentCommand(scripts.get(run.runId)!), cwd: run.handle.workspaceRoot, env: {} }),
      }),
    structuredOutput: () => Promise.reject(new TypeError('no structured output')),
  } as unknown as TextAdapter<any, any, any, any>
}

/** What the suite counts. */
interface Tally {
  sweeps: number
  overlapping: number
  started: number
  detached: number
  endedBeforeDetach: number
  entries: number
  seen: Set<string>
  producingLeftAlone: number
  finalized: number
  finishedDuringSweep: number
  expired: number
  expiredWhileProducing: number
  unknown: number
  notClaimed: number
  forged: number
}

const dir = mkdtempSync(join(tmpdir(), 'reaper-race-'))
const root = join(dir, 'sandboxes')
const journalDir = join(dir, 'journals')
const marks = join(dir, 'marks')
for (const folder of [root, journalDir, marks]) mkdirSync(folder)
afterAll(() => {
  const left = { sandboxes: readdirSync(root), journals: readdirSync(journalDir) }
  rmSync(dir, { recursive: true, force: true })
  expect(left, 'every sandbox folder and journal is removed').toEqual({ sandboxes: [], journals: [] })
})

describe('the reaper racing live journaled runs on local-process', () => {
  it(`${SWEEPS} randomized sweeps racing live runs never terminalize a run that is still producing`, async () => {
    const random = seededRandom(SEED)
    const between = (low: number, high: number): number => low + Math.floor(random() * (high - low + 1))
    const stores = createSqliteStores({ path: join(dir, 'runs.db'), leaseMs: 3000 })
    const provider = localProcessSandbox({ root })
    const sandbox = defineSandbox({ id: 'reaper-race', provider, fileEvents: false, lifecycle: { reuse: 'thread' } })
    const scripts = new Map<string, Script>()
    const adapter = slowAgentAdapter(scripts)
    const errors: string[] = []
    const logger = resolveDebugOption({ logger: { debug: () => {}, info: () => {}, warn: () => {}, error: (message: string, meta?: unknown) => void errors.push(`${message} ${JSON.stringify(meta ?? '').slice(0, 300)}`) } })
    const tally: Tally = { sweeps: 0, overlapping: 0, started: 0, detached: 0, endedBeforeDetach: 0, entries: 0, seen: new Set(), producingLeftAlone: 0, finalized: 0, finishedDuringSweep: 0, expired: 0, expiredWhileProducing: 0, unknown: 0, notClaimed: 0, forged: 0 }
    const violations: string[] = []
    /** Each run's outcomes, sweep by sweep, for the failure messages. */
    const history = new Map<string, string[]>()
    /** Detached runs not yet terminal, by run id. */
    const live = new Map<string, { threadId: string; sandboxKey: string }>()
    const all: string[] = []
    const starting = new Set<Promise<void>>()
    let stillOpen: string[] | undefined

    const agentRun = (runId: string, threadId: string, attach: boolean, abortController: AbortController) =>
      chat({
        adapter,
        runId,
        threadId,
        messages: [{ role: 'user', content: 'Write your lines.' }],
        middleware: [withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability: { adapter: stores.stream({ runId }), attach, journalDir } })],
        abortController,
      } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>

    /** Start a run, leave it after a seeded number of chunks (client gone, host stops without a cancel), and wait until its host let it go. */
    async function startAndAbandon(): Promise<void> {
      const runId = `race-${randomUUID()}`
      const threadId = `thread-${randomUUID()}`
      const lines = between(12, 45)
      const script: Script = { lines, delay: (between(10, 35) / 100).toFixed(2), forge: random() < 0.3, pidFile: join(marks, `${safe(runId)}.pid`), exitFile: join(marks, `${safe(runId)}.exit`) }
      const detachAfter = between(2, 4)
      scripts.set(runId, script)
      all.push(runId)
      tally.started++
      if (script.forge) tally.forged++
      await stores.runs.createOrResume({ runId, threadId, startedAt: Date.now() })
      const host = new AbortController()
      const response = toServerSentEventsResponse(agentRun(runId, threadId, false, host), { abortController: host, durability: { adapter: stores.stream({ runId }), batch: 1 } })
      await readSseEvents(response.body!, (_event, seen) => transcriptOf(seen).length >= detachAfter)
      host.abort()
      await stores.locks.withLock(`${DRIVER_LEASE_PREFIX}${runId}`, async () => undefined)
      const record = await stores.runs.get(runId)
      if (record?.status === 'running' && record.detachedSince !== undefined && record.sandboxKey !== undefined) {
        tally.detached++
        live.set(runId, { threadId, sandboxKey: record.sandboxKey })
      } else {
        tally.endedBeforeDetach++
        violations.push(`run ${runId} was not detached after ${detachAfter} chunks: ${JSON.stringify(record)}`)
      }
    }

    function topUp(sweepsLeft: number): void {
      while (live.size + starting.size < LIVE && tally.started < MAX_RUNS_STARTED && sweepsLeft > 10) {
        const start: Promise<void> = startAndAbandon().finally(() => starting.delete(start))
        starting.add(start)
      }
    }

    const handleOf = async (sandboxKey: string) => {
      const instance = await stores.instances.get(sandboxKey)
      return instance ? provider.resume({ id: instance.providerSandboxId }) : null
    }
    async function hasFinished(record: RunRecord): Promise<RunExitProbe> {
      if (record.sandboxKey === undefined) return { state: 'unknown' }
      try {
        const handle = await handleOf(record.sandboxKey)
        return handle ? await probeRunExit({ handle, runId: record.runId, journalDir }) : { state: 'unknown' }
      } catch (error) {
        return { state: 'unknown', error }
      }
    }
    const pidAlive = (runId: string): boolean => {
      const file = scripts.get(runId)!.pidFile
      if (!existsSync(file)) return false
      try {
        process.kill(Number(readFileSync(file, 'utf8').trim()), 0)
        return true
      } catch {
        return false
      }
    }
    const exited = (runId: string): boolean => existsSync(scripts.get(runId)!.exitFile)

    const reclaim = sandboxReclaimer({ provider, instances: stores.instances, journalDir })
    let drives = 0
    /** When the sweep began to drive each run (its finalizing replay). */
    const drivenAt = new Map<string, number>()
    const sweep = (detachedRunTtlMs: number, fenceQuietMs: number, maxRuns: number): Promise<ReapResult> =>
      reapDetachedRuns({
        runs: stores.runs,
        locks: stores.locks,
        durability: (runId) => stores.stream({ runId }),
        hasFinished,
        drive: ({ runId, threadId, signal }) => {
          drives++
          drivenAt.set(runId, Date.now())
          const abortController = new AbortController()
          if (signal.aborted) abortController.abort(signal.reason)
          else signal.addEventListener('abort', () => abortController.abort(signal.reason), { once: true })
          return agentRun(runId, threadId, true, abortController)
        },
        now: Date.now(),
        detachedRunTtlMs,
        fenceQuietMs,
        maxRuns,
        runBudgetMs: 15_000,
        reclaim,
        logger,
      })

    /** The whole transcript, once: every line in order, one RUN_STARTED, RUN_FINISHED last. */
    async function expectComplete(runId: string): Promise<void> {
      const chunks = (await stores.stream({ runId }).snapshot()).map((entry) => entry.chunk).filter((chunk) => !isRunAcceptedMarker(chunk))
      const text = chunks.flatMap((c) => (c.type === EventType.TEXT_MESSAGE_CONTENT ? [c.delta] : [])).join('')
      const expected = Array.from({ length: scripts.get(runId)!.lines }, (_, i) => lineText(i + 1)).join('')
      if (text !== expected || chunks.filter((c) => c.type === EventType.RUN_STARTED).length !== 1 || chunks.at(-1)?.type !== EventType.RUN_FINISHED) {
        violations.push(`finalized run ${runId} has an incomplete or doubled transcript: ${JSON.stringify(text)} vs ${JSON.stringify(expected)}, last ${chunks.at(-1)?.type}`)
      }
    }

    const began = Date.now()
    let sweepMs = 0
    try {
      topUp(SWEEPS)
      await waitFor(() => live.size > 0, 30_000)
      for (let i = 0; i < SWEEPS; i++) {
        topUp(SWEEPS - i)
        await new Promise((resolve) => setTimeout(resolve, between(0, 120)))
        // Mostly a TTL no run reaches; sometimes one short enough to expire live runs.
        const ttl = random() < 0.05 ? between(1000, 8000) : 120_000
        const quietMs = between(20, 250)
        const maxRuns = between(1, 8)
        const overlap = random() < 0.15
        // What each detached run was at the sweep's start: whether its agent had reached its end (its exit marker, written
        // before it exits and so before the journal's sentinel), and whether its process was alive.
        const before = new Map([...live.keys()].map((runId) => [runId, { ended: exited(runId), alive: pidAlive(runId) }] as const))
        const sweepStart = Date.now()
        const results = await Promise.all(Array.from({ length: overlap ? 2 : 1 }, () => sweep(ttl, quietMs, maxRuns)))
        sweepMs += Date.now() - sweepStart
        tally.sweeps += results.length
        if (overlap) tally.overlapping++
        const entries = results.flatMap((result) => result.entries)
        for (const entry of entries) {
          tally.entries++
          history.set(entry.runId, [...(history.get(entry.runId) ?? []), `${i}:${entry.outcome}/${entry.probe.state}`])
          tally.seen.add(entry.runId)
          if (entry.outcome === 'unknown') tally.unknown++
          if (entry.outcome === 'not-claimed') tally.notClaimed++
          if (entry.outcome === 'budget-exceeded' || entry.outcome === 'reclaim-failed') violations.push(`sweep ${i}: run ${entry.runId} ended ${entry.outcome}: ${String(entry.error)}`)
          if (entry.outcome === 'finalized' && !exited(entry.runId)) violations.push(`sweep ${i}: run ${entry.runId} was finalized but its agent never exited`)
          // Independent of what the sweep reports: a run is only ever driven once its agent had exited (a drive on a live run would wait for it).
          if (entry.outcome === 'finalized' && exited(entry.runId) && statSync(scripts.get(entry.runId)!.exitFile).mtimeMs > drivenAt.get(entry.runId)!) violations.push(`sweep ${i}: run ${entry.runId} was driven before its agent exited`)
          if (entry.outcome === 'finalized' && entry.probe.state !== 'finished') violations.push(`sweep ${i}: run ${entry.runId} was finalized on a ${entry.probe.state} probe`)
        }
        // The runs noted before the sweep, and any it saw that were detached meanwhile (their state at its start is not known).
        for (const runId of new Set([...before.keys(), ...entries.map((e) => e.runId)])) {
          const was = before.get(runId) ?? { ended: false, alive: false }
          const record = await stores.runs.get(runId)
          const mine = entries.filter((e) => e.runId === runId)
          const producing = !was.ended && was.alive
          if (!record || !isTerminalRunStatus(record.status)) {
            if (producing && mine.length > 0) tally.producingLeftAlone++
            continue
          }
          live.delete(runId)
          const final = mine.find((e) => e.outcome === 'finalized' || e.outcome === 'expired')
          if (final?.outcome === 'finalized') {
            tally.finalized++
            if (producing) tally.finishedDuringSweep++
            if (record.status !== 'completed') violations.push(`sweep ${i}: finalized run ${runId} is ${record.status}`)
            await expectComplete(runId)
          } else if (final?.outcome === 'expired' && final.expired) {
            tally.expired++
            if (producing) tally.expiredWhileProducing++
            if (final.probe.state === 'finished') violations.push(`sweep ${i}: run ${runId} had finished, yet it was expired instead of finalized`)
          } else {
            violations.push(`sweep ${i}: run ${runId} (${!before.has(runId) ? 'detached during the sweep' : producing ? 'producing' : was.ended ? 'finished' : 'agent gone'} at the start, TTL ${ttl} ms) became ${record.status} without an outcome that allows it: ${JSON.stringify(mine.map((e) => e.outcome))}; its sweeps ${JSON.stringify(history.get(runId) ?? [])}; record ${JSON.stringify(record)}; log ${(await stores.stream({ runId }).snapshot()).map((e) => e.chunk.type).join(' ')}`)
          }
        }
        if (violations.length > 0) break
      }
      expect(violations, `seed ${SEED}`).toEqual([])
    } finally {
      // Close out: no more runs; every run left is expired (TTL 0) and its sandbox reclaimed.
      await Promise.allSettled([...starting])
      for (let round = 0; round < 5 && (await sweep(0, 20, 25)).entries.length > 0; round++);
      console.info(
        `[reaper race] seed ${SEED}: ${tally.sweeps} sweeps (${tally.overlapping} times two at once) over ${tally.started} runs (${tally.detached} detached, ${tally.forged} with a forged sentinel); ${tally.seen.size} runs seen in ${tally.entries} entries; producing and left alone ${tally.producingLeftAlone}; finalized ${tally.finalized} (${tally.finishedDuringSweep} of them finished during the sweep); expired by TTL ${tally.expired} (${tally.expiredWhileProducing} while producing); unknown ${tally.unknown}; not-claimed ${tally.notClaimed}; ${drives} drives; violations ${violations.length}; ${Math.round((Date.now() - began) / 1000)} s, ${Math.round(sweepMs / 1000)} s of it in sweeps`,
      )
      stillOpen = (await Promise.all(all.map(async (runId) => [runId, await stores.runs.get(runId)] as const))).filter(([, record]) => !record || !isTerminalRunStatus(record.status)).map(([runId]) => runId)
      stores.close()
    }
    expect(tally.sweeps, 'the sweeps ran').toBeGreaterThanOrEqual(SWEEPS)
    expect(tally.producingLeftAlone, 'sweeps met producing runs').toBeGreaterThan(0)
    expect(tally.finalized, 'sweeps finalized runs that finished').toBeGreaterThan(0)
    expect(errors.filter((e) => !/aborted|detach|not claimed|superseded/i.test(e)), 'nothing failed on the way').toEqual([])
    expect(stillOpen, 'every run is closed out').toEqual([])
    expect(await waitFor(() => all.every((runId) => !pidAlive(runId)), 15_000), 'no agent is left').toBe(true)
    expect(await waitFor(() => readdirSync(root).length === 0 && readdirSync(journalDir).length === 0, 15_000), `0 sandbox folders (${readdirSync(root).length}) and 0 journals (${readdirSync(journalDir).length}) left`).toBe(true)
  }, 240_000)
})
