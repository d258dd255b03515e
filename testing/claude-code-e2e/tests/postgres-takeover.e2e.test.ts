/**
 * Takeover across OS processes on PostgreSQL (issue 17) with the real Claude
 * Code CLI against aimock: four run servers (`src/run-server.ts`, each its own
 * Node process) share one PostgreSQL schema (`@tanstack/ai-sandbox-postgres`:
 * runs, leased locks, sandbox instances, the NOTIFY-tailed event log with the
 * engine-enforced epoch fence). A trial POSTs a run to a fresh server and
 * SIGKILLs it once the client has read K events (K drawn from a printed seed;
 * trial 1 kills at the first event, before the agent launched); the client
 * reconnects to one of the three standing servers while the other two attach
 * at the same moment, so all three compete for the claim. Exactly one drives;
 * every client's transcript equals a control run chunk for chunk (0 lost, 0
 * duplicated, 0 false terminals); the record is `completed` at `driverEpoch`
 * 1; one CLI ran (five model requests); no process, sandbox or journal is
 * left (the journal lives in the sandbox folder).
 *
 * `PG_TAKEOVER_TRIALS` (CI and default 3, full 20) and `TAKEOVER_SEED`
 * (replays a printed run) tune it; `pnpm soak` runs the full count and the
 * 200-kill soak (`testing/bench/src/postgres-takeover-soak.ts`). PostgreSQL comes from
 * `TANSTACK_SANDBOX_PG_URL` or is started with `scripts/postgres/start.sh`;
 * without one the suite skips naming why, or fails under `REQUIRE_POSTGRES=1`.
 */
import { randomInt, randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventType } from '@tanstack/ai'
import { journalPaths } from '@tanstack/ai-sandbox'
import { transcriptOf } from '@testing/support/sse-client'
import { claudeBinary, makeClaudeHome, startFakeModel, type FakeModel } from '../src/aimock.js'
import { suitePostgres, type SuitePostgres } from '../src/postgres-server.js'
import type { RunServerConfig } from '../src/run-server.js'
import { killAndTakeOver, normalizedFingerprints, postRun, seededRandom, startRunServer, stopRunServer, type RunServer } from '../src/takeover-trial.js'
import { processesMatching, processesWithHome, waitFor } from './helpers/run-claude.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/durable-takeover.json', import.meta.url))
const PROMPT = 'Run the durable job in four steps.'
const TRIALS = Number(process.env.PG_TAKEOVER_TRIALS ?? 3)
/** Servers that stay up and compete for every run; the fourth process is each trial's first server. */
const STANDING = 3
const BASE_SEED = Number(process.env.TAKEOVER_SEED ?? randomInt(2 ** 30))
console.info(`[postgres-takeover] base seed ${BASE_SEED}: TAKEOVER_SEED=${BASE_SEED} replays these kill points`)

const postgres = await suitePostgres('e2e_takeover')

function takeoverSuite(pg: SuitePostgres): void {
  const root = mkdtempSync(join(tmpdir(), 'pg-takeover-sandboxes-'))
  let model: FakeModel
  let config: RunServerConfig
  let control: string[]
  let home: ReturnType<typeof makeClaudeHome>
  let standing: RunServer[] = []
  /** The next trial's first server, started while the previous trial's takeover runs. */
  let spare: Promise<RunServer> | undefined
  const servers: RunServer[] = []
  const suiteStart = performance.now()

  const startServer = async (): Promise<RunServer> => {
    const server = await startRunServer(config)
    servers.push(server)
    return server
  }

  beforeAll(async () => {
    model = await startFakeModel(FIXTURE, { vars: { stepSeconds: '1' } })
    home = makeClaudeHome('pg-takeover-home')
    config = {
      stores: { kind: 'postgres', url: pg.url, schema: pg.schema },
      provider: { kind: 'local-process', root },
      claude: { executable: claudeBinary(), env: home.env(model.url) },
      prompt: PROMPT,
      fenceQuietMs: 1000,
      leaseMs: 2500,
      cancelPollMs: 500,
      attachWaitMs: 3000,
    }
    standing = await Promise.all(Array.from({ length: STANDING }, startServer))
    spare = startServer()
    // The control: the same turn, uninterrupted, on a standing server.
    const runId = `control-${randomUUID()}`
    const threadId = `thread-${randomUUID()}`
    const chunks = transcriptOf(await postRun(standing[0]!, runId, threadId))
    expect(chunks.at(-1)?.type, `the control run finished:\n${standing[0]!.output()}`).toBe(EventType.RUN_FINISHED)
    control = normalizedFingerprints(chunks, { runId, threadId })
    console.info(`[postgres-takeover] control run: ${control.length} chunks; schema ${pg.schema}`)
  }, 240_000)

  afterAll(async () => {
    await spare?.catch(() => undefined)
    for (const server of servers) await stopRunServer(server)
    await model?.stop()
    home?.cleanup()
    await pg.release()
    const left = readdirSync(root)
    rmSync(root, { recursive: true, force: true })
    console.info(`[postgres-takeover] ${TRIALS} trials and set-up took ${Math.round((performance.now() - suiteStart) / 1000)} s`)
    expect(left, 'every local-process sandbox folder is removed').toEqual([])
  }, 60_000)

  for (let i = 1; i <= TRIALS; i++) {
    it(`trial ${i}: the server driving the run is SIGKILLed${i === 1 ? ' at its first event' : ''}; ${STANDING} processes attach at once; exactly one takes over; every transcript equals the control`, async () => {
      const seed = BASE_SEED + i
      const draws = seededRandom(seed)
      draws() // the kill point (killAndTakeOver draws it from the same seed)
      const pick = Math.floor(draws() * STANDING)
      const successor = standing[pick]!
      const bystanders = standing.filter((_, j) => j !== pick)
      const first = await spare!
      const runId = `pg-takeover-${randomUUID()}`
      const threadId = `thread-${randomUUID()}`
      const requestsBefore = model.requests().length
      const trial = await killAndTakeOver({
        first,
        successor,
        bystanders,
        runId,
        threadId,
        seed,
        minKill: 1,
        maxKill: i === 1 ? 1 : control.length - 4,
        control,
        // At most four server processes live at once: the replacement starts once the killed one is gone.
        onKilled: () => void (spare = i < TRIALS ? startServer() : undefined),
      })
      const drivers = standing.filter((server) => server.drives().includes(runId))
      const drives = standing.reduce((n, server) => n + server.drives().filter((id) => id === runId).length, 0)
      const equal = [trial.tally, ...trial.bystanderTallies].filter((t) => t.equal).length
      console.info(
        `[postgres-takeover #${i}] seed ${seed}: killed after ${trial.killAt} of ${control.length} events; client on server ${pick + 1}, ${bystanders.length} more attached; ${drives} drive(s) (server ${drivers.map((s) => standing.indexOf(s) + 1).join(', ')}); ${equal}/${STANDING} transcripts equal; client lost ${trial.tally.lost}, duplicated ${trial.tally.duplicated}, false terminals ${trial.tally.falseTerminal}`,
      )

      expect(trial.killed, `the first server was killed:\n${first.output()}`).toBe(true)
      expect(drives, `exactly one process drives (seed ${seed})`).toBe(1)
      expect(trial.tally, `the client's transcript equals the control (seed ${seed}):\n${drivers[0]?.output().slice(-4000)}`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
      for (const tally of trial.bystanderTallies) expect(tally, `every other client sees the run once (seed ${seed})`).toEqual({ equal: true, lost: 0, duplicated: 0, falseTerminal: 0 })
      expect(await waitFor(async () => (await pg.stores.runs.get(runId))?.status === 'completed', 10_000), 'the record is settled').toBe(true)
      expect(await pg.stores.runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
      expect(model.requests().length - requestsBefore, 'one CLI ran the turn (five model requests)').toBe(5)
      // The journal's file name: its folder is the sandbox's own on local-process (handle.journalDir).
      const journal = `/${posix.basename(journalPaths(runId).journal)}`
      expect(await waitFor(() => processesMatching(journal).length === 0 && processesWithHome(home.dir).length === 0, 15_000), 'no CLI, tool or tail process of the run is left').toBe(true)
      expect(await waitFor(() => readdirSync(root).length === 0, 15_000), 'the sandbox (and its journal) is destroyed').toBe(true)
    }, 180_000)
  }
}

describe('takeover across 4 processes on PostgreSQL with the real claude CLI (local-process)', () => {
  if (!('missing' in postgres)) {
    takeoverSuite(postgres)
  } else if (process.env.REQUIRE_POSTGRES === '1') {
    it(`needs PostgreSQL (REQUIRE_POSTGRES=1): ${postgres.missing}`, () => {
      throw new Error(`REQUIRE_POSTGRES=1 but ${postgres.missing}`)
    })
  } else {
    it.skip(`skipped: ${postgres.missing}`, () => undefined)
  }
})
