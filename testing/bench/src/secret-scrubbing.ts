/**
 * What the secret scrubber costs (issue 16): a harness run's chunks pass
 * `guardHarnessRun`, which scrubs every string field of every chunk and
 * holds back delta tails that could start a secret; `redactSecrets` scrubs a
 * `file.changed` diff. Measured with no secret, and with 3 secrets (each
 * looked for in ~15 forms), on chunks that hold none of them: the common case.
 */
import { createSecrets, guardHarnessRun, redactSecrets } from '@tanstack/ai-sandbox'
import { median } from './stats.js'

/** A stream chunk as the guard sees it (the bench does not depend on `@tanstack/ai` itself). */
type StreamChunk = Record<string, unknown>

/** One row of the table. */
export interface SecretScrubbingRow {
  readonly case: string
  readonly secrets: number
  readonly medianMs: number
  readonly perSecond: number
  readonly unit: string
}

const SECRET_VALUES = { API_KEY: 'sk-live-0f1e2d3c4b5a69788796a5b4', GH_TOKEN: 'ghp_Zx81kQm2Lw9Vn3Bc7Hd4Jf6Ps0Tg5Ry1', DB_PASS: 'correct/horse+battery=staple' }

/** A run's worth of chunks: text deltas, tool arguments and 2 KiB tool results. */
function runChunks(count: number): StreamChunk[] {
  const out: StreamChunk[] = []
  for (let i = 0; i < count; i++) {
    if (i % 10 === 9) out.push({ type: 'TOOL_CALL_RESULT', toolCallId: `t${i}`, messageId: `r${i}`, content: `line ${i} of the build output, nothing secret here\n`.repeat(40) })
    else if (i % 10 === 8) out.push({ type: 'TOOL_CALL_ARGS', toolCallId: `t${i + 1}`, delta: '{"command":"pnpm test --filter @app/web"}' })
    else out.push({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: `Token ${i}: the agent keeps talking about the code. ` })
  }
  return out
}

async function scrubRun(chunks: StreamChunk[], hostEnv: Record<string, string>): Promise<number> {
  let seen = 0
  const guarded = guardHarnessRun({
    harness: 'bench',
    options: { logger: { errors: () => undefined } } as never,
    secrets: { forwardedHostEnv: Object.keys(hostEnv), hostEnv },
    run: async function* () {
      yield* chunks as never[]
    },
  })
  for await (const _ of guarded) seen++
  return seen
}

/**
 * Time the scrubbing of `chunkCount` chunks through `guardHarnessRun` and of
 * a `diffKiB` diff through `redactSecrets`, `runs` times each.
 * @returns One row per case, medians in ms.
 */
export async function benchSecretScrubbing(chunkCount: number, diffKiB: number, runs: number): Promise<SecretScrubbingRow[]> {
  const chunks = runChunks(chunkCount)
  const rows: SecretScrubbingRow[] = []
  for (const hostEnv of [{}, SECRET_VALUES] as Record<string, string>[]) {
    const samples: number[] = []
    for (let r = 0; r < runs; r++) {
      const start = performance.now()
      await scrubRun(chunks, hostEnv)
      samples.push(performance.now() - start)
    }
    const ms = median(samples)
    rows.push({ case: `guardHarnessRun, ${chunkCount} chunks`, secrets: Object.keys(hostEnv).length, medianMs: ms, perSecond: Math.round((chunkCount / ms) * 1000), unit: 'chunks/s' })
  }
  const refs = Object.values(createSecrets(SECRET_VALUES))
  const diff = `+ a line of a changed file, with nothing secret in it at all\n`.repeat(Math.ceil((diffKiB * 1024) / 62))
  const samples: number[] = []
  for (let r = 0; r < runs; r++) {
    const start = performance.now()
    redactSecrets(diff, refs)
    samples.push(performance.now() - start)
  }
  const ms = median(samples)
  rows.push({ case: `redactSecrets, ${diffKiB} KiB diff`, secrets: refs.length, medianMs: ms, perSecond: Math.round((diffKiB / 1024 / ms) * 1000), unit: 'MiB/s' })
  return rows
}
