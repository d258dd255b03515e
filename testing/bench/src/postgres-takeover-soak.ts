/**
 * The PostgreSQL takeover soak (part of `pnpm soak`): `SOAK_PG_TAKEOVER_KILLS` (200)
 * SIGKILLs of the server process driving a real Claude Code run (aimock on
 * 127.0.0.1, local-process sandboxes), four server processes sharing one
 * PostgreSQL schema (`@tanstack/ai-sandbox-postgres`). After each kill the
 * client reconnects to one of three standing servers while the other two
 * attach at the same moment, so all three compete for the claim. Per kill it
 * prints the seed and the kill point (`TAKEOVER_SEED=<base> PG_TAKEOVER_TRIALS=<n>
 * npx vitest run testing/claude-code-e2e/tests/postgres-takeover.e2e.test.ts`
 * draws the same kill point and client server for trial n >= 2). It never
 * stops at a failure: every trial counts.
 */
import { randomInt, randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EventType } from '@tanstack/ai'
import { claudeBinary, makeClaudeHome, startFakeModel } from '@testing/claude-code-e2e/aimock'
import { suitePostgres } from '@testing/claude-code-e2e/postgres-server'
import { killAndTakeOver, normalizedFingerprints, postRun, seededRandom, startRunServer, stopRunServer, type RunServer } from '@testing/claude-code-e2e/takeover-trial'
import { transcriptOf } from '@testing/support/sse-client'
import { BenchError, median, percentile, round } from './stats.js'

const FIXTURE = fileURLToPath(new URL('../../claude-code-e2e/fixtures/durable-takeover.json', import.meta.url))
const PROMPT = 'Run the durable job in four steps.'
const STANDING = 3

/** The soak's tally. */
export interface PostgresTakeoverSoakResult {
  readonly kills: number
  readonly baseSeed: number
  /** Trials where exactly one of the three attaching servers drove the run. */
  readonly takenOver: number
  /** Trials where every client transcript (three per trial) equals the control chunk for chunk. */
  readonly equal: number
  /** Summed over every client of every trial. */
  readonly lost: number
  readonly duplicated: number
  readonly falseTerminals: number
  /** Trials whose record did not end `completed` at `driverEpoch` 1. */
  readonly badRecords: number
  /** Trials that threw (a server that did not start, a broken attach); counted as failures. */
  readonly errors: number
  /** Seeds of the trials that failed any of the above, to replay them. */
  readonly failedSeeds: number[]
  /**
   * ms from the client's reconnect to the first chunk the new driver stored
   * (the first event past what the log held when the first server died):
   * lease expiry, the claim, the quiet window and the journal attach. Median / p95.
   */
  readonly firstNewChunkMedianMs: number
  readonly firstNewChunkP95Ms: number
  /** ms from the reconnect to the end of the run, median / p95. */
  readonly takeoverToEndMedianMs: number
  readonly takeoverToEndP95Ms: number
  /** Sandbox folders left behind at the end (goal 0). */
  readonly sandboxesLeft: number
}

/**
 * Run the soak on `TANSTACK_SANDBOX_PG_URL`, or on a server it starts with
 * `scripts/postgres/start.sh` (and stops); a fresh schema either way, dropped at the end.
 * @param input - `kills` (how many), `baseSeed` (default random, printed).
 * @throws BenchError when no PostgreSQL can be reached or the control run does not finish.
 */
export async function benchPostgresTakeoverSoak(input: { kills: number; baseSeed?: number }): Promise<PostgresTakeoverSoakResult> {
  const baseSeed = input.baseSeed ?? randomInt(2 ** 30)
  console.log(`\n(u) PostgreSQL takeover soak: ${input.kills} SIGKILLs of the driving server, ${STANDING} processes attach after each, base seed ${baseSeed}`)
  const pg = await suitePostgres('bench_takeover')
  if ('missing' in pg) throw new BenchError(`the PostgreSQL takeover soak needs PostgreSQL: ${pg.missing}`)
  const root = mkdtempSync(join(tmpdir(), 'bench-pg-soak-sandboxes-'))
  const model = await startFakeModel(FIXTURE, { vars: { stepSeconds: '1' } })
  const home = makeClaudeHome('bench-pg-soak-home')
  const servers: RunServer[] = []
  const config = {
    stores: { kind: 'postgres' as const, url: pg.url, schema: pg.schema },
    provider: { kind: 'local-process' as const, root },
    claude: { executable: claudeBinary(), env: home.env(model.url) },
    prompt: PROMPT,
    fenceQuietMs: 1000,
    leaseMs: 2500,
    cancelPollMs: 500,
    attachWaitMs: 3000,
  }
  const startServer = async (): Promise<RunServer> => {
    const server = await startRunServer(config)
    servers.push(server)
    return server
  }
  let spare: Promise<RunServer> | undefined
  try {
    const standing = await Promise.all(Array.from({ length: STANDING }, startServer))
    spare = startServer()
    const controlIds = { runId: `control-${randomUUID()}`, threadId: `thread-${randomUUID()}` }
    const controlChunks = transcriptOf(await postRun(standing[0]!, controlIds.runId, controlIds.threadId))
    if (controlChunks.at(-1)?.type !== EventType.RUN_FINISHED) throw new BenchError(`the control run did not finish:\n${standing[0]!.output()}`)
    const control = normalizedFingerprints(controlChunks, controlIds)

    let takenOver = 0
    let equal = 0
    let lost = 0
    let duplicated = 0
    let falseTerminals = 0
    let badRecords = 0
    let errors = 0
    const failedSeeds: number[] = []
    const takeoverMs: number[] = []
    const firstNewMs: number[] = []
    for (let i = 1; i <= input.kills; i++) {
      const seed = baseSeed + i
      const draws = seededRandom(seed)
      draws() // the kill point, drawn by killAndTakeOver from the same seed
      const pick = Math.floor(draws() * STANDING)
      let first: RunServer | undefined
      try {
        first = await spare!
        spare = undefined
        const runId = `soak-${randomUUID()}`
        const started = { at: 0, stored: 0 }
        const trial = await killAndTakeOver({
          first,
          successor: standing[pick]!,
          bystanders: standing.filter((_, j) => j !== pick),
          runId,
          threadId: `thread-${randomUUID()}`,
          seed,
          minKill: 1,
          maxKill: control.length - 4,
          control,
          onKilled: async () => {
            spare = i < input.kills ? startServer() : undefined
            started.stored = (await pg.stores.stream({ runId }).snapshot()).length
          },
          onReconnect: () => (started.at = performance.now()),
        })
        takeoverMs.push(performance.now() - started.at)
        const firstNew = trial.after.findIndex((event) => event.id !== undefined && Number(event.id) >= started.stored)
        if (firstNew >= 0) firstNewMs.push(trial.afterTimes[firstNew]! - started.at)
        const drives = standing.reduce((n, server) => n + server.drives().filter((id) => id === runId).length, 0)
        const tallies = [trial.tally, ...trial.bystanderTallies]
        for (const tally of tallies) {
          lost += tally.lost
          duplicated += tally.duplicated
          falseTerminals += tally.falseTerminal
        }
        const record = await pg.stores.runs.get(runId)
        const recordOk = record?.status === 'completed' && record.driverEpoch === 1
        const allEqual = tallies.every((t) => t.equal)
        if (drives === 1) takenOver++
        if (allEqual) equal++
        if (!recordOk) badRecords++
        if (drives !== 1 || !allEqual || !recordOk || !trial.killed) failedSeeds.push(seed)
        console.log(`  #${i} seed ${seed}: killed after ${trial.killAt} events; ${drives} drive(s); ${tallies.filter((t) => t.equal).length}/${tallies.length} transcripts equal; record ${record?.status} at epoch ${record?.driverEpoch}`)
      } catch (error) {
        errors++
        failedSeeds.push(seed)
        console.log(`  #${i} seed ${seed}: failed: ${error instanceof Error ? error.message : String(error)}`)
        if (spare === undefined && i < input.kills) spare = startServer()
      } finally {
        if (first) await stopRunServer(first)
      }
    }
    // The last run's sandbox is destroyed after its stream ended: give it a moment.
    for (let waited = 0; readdirSync(root).length > 0 && waited < 15_000; waited += 250) await new Promise((resolve) => setTimeout(resolve, 250))
    const sandboxesLeft = readdirSync(root).length
    return {
      kills: input.kills,
      baseSeed,
      takenOver,
      equal,
      lost,
      duplicated,
      falseTerminals,
      badRecords,
      errors,
      failedSeeds,
      firstNewChunkMedianMs: firstNewMs.length ? median(firstNewMs) : 0,
      firstNewChunkP95Ms: firstNewMs.length ? percentile(firstNewMs, 95) : 0,
      takeoverToEndMedianMs: takeoverMs.length ? median(takeoverMs) : 0,
      takeoverToEndP95Ms: takeoverMs.length ? percentile(takeoverMs, 95) : 0,
      sandboxesLeft,
    }
  } finally {
    await spare?.catch(() => undefined)
    for (const server of servers) await stopRunServer(server)
    await model.stop()
    home.cleanup()
    await pg.release()
    rmSync(root, { recursive: true, force: true })
  }
}

/** Print the soak's tally as a table, with the failed seeds. */
export function printPostgresTakeoverSoak(soak: PostgresTakeoverSoakResult): void {
  console.log(`\n(u) PostgreSQL takeover soak: ${soak.equal} of ${soak.kills} kills taken over with every transcript equal to the control (base seed ${soak.baseSeed}${soak.failedSeeds.length ? `; failed seeds ${soak.failedSeeds.join(', ')}` : ''})`)
  console.table([
    {
      ...soak,
      failedSeeds: soak.failedSeeds.length,
      firstNewChunkMedianMs: round(soak.firstNewChunkMedianMs, 0),
      firstNewChunkP95Ms: round(soak.firstNewChunkP95Ms, 0),
      takeoverToEndMedianMs: round(soak.takeoverToEndMedianMs, 0),
      takeoverToEndP95Ms: round(soak.takeoverToEndP95Ms, 0),
    },
  ])
}
