/**
 * The takeover soak (part of `pnpm soak`): `SOAK_TAKEOVER_KILLS` (200) kills of the
 * server process driving a real Claude Code run (aimock on 127.0.0.1,
 * local-process sandboxes, SQLite stores shared by every server process), each
 * followed by a takeover through `sandboxRunDriver` on another process. Per
 * kill it prints the seed and the kill point, so any failure can be replayed
 * (`TAKEOVER_SEED=<seed> TAKEOVER_TRIALS=1 pnpm vitest run --project
 * claude-code-e2e tests/driver-takeover.e2e.test.ts` draws the same point).
 * The tally counts trials whose transcript equals the control, and every
 * chunk lost, duplicated or terminal too many. It never stops at a failure:
 * the figure must be honest, so every trial counts.
 */
import { randomInt, randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EventType } from '@tanstack/ai'
import { claudeBinary, makeClaudeHome, startFakeModel } from '@testing/claude-code-e2e/aimock'
import { killAndTakeOver, normalizedFingerprints, postRun, startRunServer, stopRunServer, type RunServer } from '@testing/claude-code-e2e/takeover-trial'
import { transcriptOf } from '@testing/support/sse-client'
import { BenchError, median, percentile, round } from './stats.js'

const FIXTURE = fileURLToPath(new URL('../../claude-code-e2e/fixtures/durable-takeover.json', import.meta.url))
const PROMPT = 'Run the durable job in four steps.'

/** The soak's tally. */
export interface TakeoverSoakResult {
  readonly kills: number
  readonly baseSeed: number
  /** Trials whose client transcript equals the control chunk for chunk. */
  readonly equal: number
  readonly lost: number
  readonly duplicated: number
  readonly falseTerminals: number
  /** Trials that threw (a server that did not start, a broken attach); counted as failures. */
  readonly errors: number
  /** Seeds of the trials that were not equal, to replay them. */
  readonly failedSeeds: number[]
  /** ms from the client's reconnect to the end of the run, median / p95. */
  readonly takeoverToEndMedianMs: number
  readonly takeoverToEndP95Ms: number
}

/**
 * Run the soak.
 * @param input - `kills` (how many), `baseSeed` (default random, printed).
 */
export async function benchTakeoverSoak(input: { kills: number; baseSeed?: number }): Promise<TakeoverSoakResult> {
  const baseSeed = input.baseSeed ?? randomInt(2 ** 30)
  console.log(`\n(r) takeover soak: ${input.kills} SIGKILLs of the driving server, base seed ${baseSeed}`)
  const dir = mkdtempSync(join(tmpdir(), 'bench-takeover-soak-'))
  const root = mkdtempSync(join(tmpdir(), 'bench-takeover-soak-sandboxes-'))
  const model = await startFakeModel(FIXTURE, { vars: { stepSeconds: '1.5' } })
  const home = makeClaudeHome('bench-takeover-soak-home')
  const servers: RunServer[] = []
  try {
    const config = {
      stores: { kind: 'sqlite' as const, path: join(dir, 'runs.db') },
      provider: { kind: 'local-process' as const, root },
      claude: { executable: claudeBinary(), env: home.env(model.url) },
      prompt: PROMPT,
      fenceQuietMs: 1000,
      leaseMs: 3000,
      cancelPollMs: 500,
      attachWaitMs: 3000,
    }
    const successor = await startRunServer(config)
    servers.push(successor)
    const controlIds = { runId: `control-${randomUUID()}`, threadId: `thread-${randomUUID()}` }
    const controlChunks = transcriptOf(await postRun(successor, controlIds.runId, controlIds.threadId))
    if (controlChunks.at(-1)?.type !== EventType.RUN_FINISHED) throw new BenchError(`the control run did not finish:\n${successor.output()}`)
    const control = normalizedFingerprints(controlChunks, controlIds)

    let equal = 0
    let lost = 0
    let duplicated = 0
    let falseTerminals = 0
    let errors = 0
    const failedSeeds: number[] = []
    const takeoverMs: number[] = []
    for (let i = 1; i <= input.kills; i++) {
      const seed = baseSeed + i
      let first: RunServer | undefined
      try {
        first = await startRunServer(config)
        const started = { at: 0 }
        const trial = await killAndTakeOver({ first, successor, runId: `soak-${randomUUID()}`, threadId: `thread-${randomUUID()}`, seed, minKill: 1, maxKill: control.length - 4, control, onReconnect: () => (started.at = performance.now()) })
        takeoverMs.push(performance.now() - started.at)
        lost += trial.tally.lost
        duplicated += trial.tally.duplicated
        falseTerminals += trial.tally.falseTerminal
        if (trial.tally.equal) equal++
        else failedSeeds.push(seed)
        console.log(`  #${i} seed ${seed}: killed after ${trial.killAt} events; ${trial.tally.equal ? 'equal' : `NOT equal (lost ${trial.tally.lost}, duplicated ${trial.tally.duplicated}, false terminals ${trial.tally.falseTerminal})`}`)
      } catch (error) {
        errors++
        failedSeeds.push(seed)
        console.log(`  #${i} seed ${seed}: failed: ${error instanceof Error ? error.message : String(error)}`)
      } finally {
        if (first) await stopRunServer(first)
      }
    }
    const result: TakeoverSoakResult = {
      kills: input.kills,
      baseSeed,
      equal,
      lost,
      duplicated,
      falseTerminals,
      errors,
      failedSeeds,
      takeoverToEndMedianMs: takeoverMs.length ? median(takeoverMs) : 0,
      takeoverToEndP95Ms: takeoverMs.length ? percentile(takeoverMs, 95) : 0,
    }
    const left = readdirSync(root)
    if (left.length > 0) console.log(`  ${left.length} sandbox folder(s) were left behind: ${left.join(', ')}`)
    return result
  } finally {
    for (const server of servers) await stopRunServer(server)
    await model.stop()
    home.cleanup()
    rmSync(dir, { recursive: true, force: true })
    rmSync(root, { recursive: true, force: true })
  }
}

/** Print the soak's tally as one table row, with the seeds of the trials that failed. */
export function printTakeoverSoak(soak: TakeoverSoakResult): void {
  console.log(`\n(r) takeover soak: ${soak.equal} of ${soak.kills} kills taken over with a transcript equal to the control (base seed ${soak.baseSeed}${soak.failedSeeds.length ? `; failed seeds ${soak.failedSeeds.join(', ')}` : ''})`)
  console.table([{ ...soak, failedSeeds: soak.failedSeeds.length, takeoverToEndMedianMs: round(soak.takeoverToEndMedianMs, 0), takeoverToEndP95Ms: round(soak.takeoverToEndP95Ms, 0) }])
}
