/**
 * `probeRunExit`: whether a detached run's agent exited, read OUT OF BAND from
 * its journal inside the sandbox (one bounded `exec`), never by driving the
 * run. Owns the `RunExitProbe` answer and the rule that anything it cannot
 * answer is `unknown`, never `finished`: only a genuine sentinel (its nonce
 * matches the journal header) is a finish. Source: spec 000 "The reaper ships
 * as a function, not a scheduler", spec 002 (the unforgeable exit sentinel).
 */
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import { parseOptions } from '../contracts/validate.js'
import { DEFAULT_EXIT_PROBE_BYTES, DEFAULT_JOURNAL_DIR, journalDirOf, journalExitProbeCommand, journalPaths, parseJournalExit } from '../journal/commands.js'
import { journalTrustOf } from '../journal/sentinel.js'

/**
 * What a probe learned about a detached run's agent.
 *
 * - `finished`: the journal ends with a GENUINE exit sentinel; `exitCode` is the agent's exit status.
 * - `producing`: the journal is there and has no genuine sentinel yet (the agent runs, or died without one: the TTL covers that).
 * - `unknown`: nothing could be proved (no journal, no `exec`, a failing command, an unreadable answer); `error` / `detail` say why.
 */
export type RunExitProbe =
  | { readonly state: 'finished'; readonly exitCode: number }
  | { readonly state: 'producing' }
  | { readonly state: 'unknown'; readonly error?: unknown; readonly detail?: string }

/** Options of {@link probeRunExit}. */
export interface ProbeRunExitOptions {
  /** The run's sandbox, resumed (e.g. `provider.resume({ id })`); needs capability `exec`. */
  handle: SandboxHandle
  /** The run's id (`RunRecord.runId`). */
  runId: string
  /** Absolute journal folder inside the sandbox, as given to `withSandbox`'s `durability.journalDir`. Default: the handle's own `journalDir` (a provider's choice), else `DEFAULT_JOURNAL_DIR` (`/tmp/tanstack-runs`); see `journalDirOf`. */
  journalDir?: string
  /** How many bytes of the journal's end to read, in bytes. Default `DEFAULT_EXIT_PROBE_BYTES` (64 KiB). */
  bytes?: number
}

const optionsSchema = z
  .object({
    handle: z.custom<SandboxHandle>((v) => typeof v === 'object' && v !== null && typeof (v as { process?: { exec?: unknown } }).process?.exec === 'function', {
      message: 'expected the run\'s SandboxHandle (e.g. await provider.resume({ id: instance.providerSandboxId })), an object with process.exec',
    }),
    runId: z.string('expected the run id as a string').min(1, 'expected a non-empty run id'),
    journalDir: z.string('expected an absolute folder inside the sandbox').startsWith('/', `expected an absolute folder inside the sandbox, e.g. ${DEFAULT_JOURNAL_DIR}`).optional(),
    bytes: z.number('expected a number of bytes').int('expected whole bytes').min(256, 'expected at least 256 bytes (a sentinel and the line before it)').optional(),
  })
  .strict()

/**
 * Probe a run's journal for its exit sentinel, out of band: one `exec` of
 * `journalExitProbeCommand` (the journal's first line and its last `bytes`),
 * parsed by `parseJournalExit`, which accepts a sentinel only when its nonce
 * matches the header, so an agent that prints a sentinel-shaped line cannot
 * get its run finalized. Reads nothing else and changes nothing. Resolves for
 * every runtime failure: a missing journal, a sandbox without `exec`, a
 * command that fails or prints something unexpected are all `unknown`.
 *
 * @param options - {@link ProbeRunExitOptions}.
 * @returns `finished` (with the exit code), `producing`, or `unknown` (with `detail`, and `error` when something threw).
 * @throws SandboxConfigError `probeRunExit.<field>` (as a rejection) for a missing or mistyped option.
 * @example
 * ```ts
 * const handle = await sandbox.provider.resume({ id: instance.providerSandboxId })
 * const probe = handle ? await probeRunExit({ handle, runId: record.runId }) : { state: 'unknown' }
 * if (probe.state === 'finished') console.log('agent exited with', probe.exitCode)
 * ```
 */
export async function probeRunExit(options: ProbeRunExitOptions): Promise<RunExitProbe> {
  const { handle, runId, journalDir: givenDir, bytes = DEFAULT_EXIT_PROBE_BYTES } = parseOptions(optionsSchema, options, 'probeRunExit')
  const journalDir = journalDirOf(handle, givenDir)
  if (handle.capabilities?.exec === false) return { state: 'unknown', detail: `the sandbox ${handle.id} has no exec capability, so its journal cannot be read` }
  try {
    const result = await handle.process.exec(journalExitProbeCommand(journalPaths(runId, journalDir), bytes))
    if (result.exitCode !== 0) return { state: 'unknown', detail: `the exit probe exited ${result.exitCode}: ${result.stderr.trim().slice(0, 200) || 'no stderr'}` }
    const exit = parseJournalExit(result.stdout, journalTrustOf(handle, runId))
    if (exit.state === 'exited') return { state: 'finished', exitCode: exit.exitCode }
    if (exit.state === 'running') return { state: 'producing' }
    return { state: 'unknown', detail: `run ${runId} has no journal in ${journalDir} (never started there, already read to its end, or the sandbox was replaced)` }
  } catch (error) {
    return { state: 'unknown', error, detail: `probing the journal of run ${runId} failed` }
  }
}

/** The zod shape a `hasFinished` answer must have; anything else counts as `unknown`. Internal. */
export const runExitProbeSchema = z.union([
  z.object({ state: z.literal('finished'), exitCode: z.number().int() }),
  z.object({ state: z.literal('producing') }),
  z.object({ state: z.literal('unknown'), error: z.unknown().optional(), detail: z.string().optional() }),
])
