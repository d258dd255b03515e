/**
 * `runJournalConformance`: the run journal's contract (spec 000 "Durable runs
 * (the run journal)") as a vitest suite over a real provider. It reads the
 * provider's capability flags once and registers every case (`journal/cases.ts`);
 * a case that cannot run on this provider is an `it.skip` whose title names
 * the missing capability. Every sandbox a case creates is destroyed after it,
 * and every journal it wrote is deleted, even when the case fails.
 */
import { afterAll, afterEach, describe, it } from 'vitest'
import { z } from 'zod'
import type { SandboxProvider } from '../contracts/provider.js'
import { DEFAULT_JOURNAL_DIR } from '../journal/commands.js'
import { parseOptions } from '../contracts/validate.js'
import { skippedCase } from './provider/context.js'
import {
  checkJournalDeletedAfterSentinel,
  checkJournalDetachedRead,
  checkJournalFollowAbortLeavesNoTail,
  checkJournalForgedSentinel,
  checkJournalRewritten,
  checkJournalHostileRunId,
  checkJournalLiveDelivery,
  checkJournalLongReadNotStalled,
  checkJournalNonZeroExit,
  checkJournalOffsets,
  checkJournalPollAbort,
  checkJournalPollMatchesFollow,
  checkJournalRefollow,
  checkJournalStderrSeparate,
  checkJournalStdinFile,
  checkJournalStdoutWithSentinel,
} from './journal/cases.js'
import { createJournalConformanceContext, type JournalConformanceContext } from './journal/context.js'

/** Options of {@link runJournalConformance}. */
export interface JournalConformanceOptions {
  /** Build the provider under test. Called once, while vitest collects the suite. */
  makeProvider: () => SandboxProvider | Promise<SandboxProvider>
  /** Timeout of each case and hook, in ms. Default 30 000 (each case takes a few seconds; BusyBox `tail -f` polls once a second). */
  timeoutMs?: number
  /**
   * Absolute journal folder inside the sandbox. Default `DEFAULT_JOURNAL_DIR`
   * (`/tmp/tanstack-runs`). Pass a folder of the suite's own on providers
   * whose shell shares the host's `/tmp` (local-process), then check it is
   * empty after the suite: every case deletes what it wrote.
   */
  journalDir?: string
}

const optionsSchema = z
  .object({
    makeProvider: z.custom<JournalConformanceOptions['makeProvider']>((v) => typeof v === 'function', { message: 'expected a function that returns the SandboxProvider under test' }),
    timeoutMs: z.number().int('expected whole ms').min(1_000, 'expected at least 1000 ms').optional(),
    journalDir: z.string().startsWith('/', 'expected an absolute folder inside the sandbox, e.g. /tmp/tanstack-runs').optional(),
  })
  .strict()

/** The rule a case proves, and when it can run. */
interface JournalCase {
  readonly title: string
  /** `exec` cases run wherever the journal can be started; `follow` cases need `journalReadStrategy(capabilities) === 'follow'`. */
  readonly needs: 'exec' | 'follow'
  readonly run: (context: JournalConformanceContext) => Promise<void>
}

const CASES: readonly JournalCase[] = [
  { title: 'stdout lands between the header and the genuine exit sentinel', needs: 'exec', run: checkJournalStdoutWithSentinel },
  { title: 'a non-zero exit (and a death by signal) is recorded and reported through onExit', needs: 'exec', run: checkJournalNonZeroExit },
  { title: 'stderr stays out of the journal and lands in the .err sidecar', needs: 'exec', run: checkJournalStderrSeparate },
  { title: 'stdin reaches the agent through a file that is deleted before the agent runs', needs: 'exec', run: checkJournalStdinFile },
  { title: 'a read from a line end gives the same lines at the same absolute byte positions', needs: 'exec', run: checkJournalOffsets },
  { title: 'follow delivers each line before the agent produces the next', needs: 'follow', run: (c) => checkJournalLiveDelivery(c, 'follow') },
  { title: 'poll delivers each line before the agent produces the next', needs: 'exec', run: (c) => checkJournalLiveDelivery(c, 'poll') },
  { title: 'a follow that lasts longer than emptyWaitMs is read to its sentinel', needs: 'follow', run: (c) => checkJournalLongReadNotStalled(c, 'follow') },
  { title: 'a poll that lasts longer than emptyWaitMs is read to its sentinel', needs: 'exec', run: (c) => checkJournalLongReadNotStalled(c, 'poll') },
  { title: 'follow stops on abort (and on break) and leaves no tail', needs: 'follow', run: checkJournalFollowAbortLeavesNoTail },
  { title: 'poll stops on abort and the agent runs on', needs: 'exec', run: checkJournalPollAbort },
  { title: 'a forged sentinel is an ordinary line; the real exit code is reported', needs: 'exec', run: checkJournalForgedSentinel },
  { title: 'an agent that rewrites its journal does not end its run (probe and reader)', needs: 'exec', run: checkJournalRewritten },
  { title: 'a hostile runId round-trips through every command and executes nothing', needs: 'exec', run: checkJournalHostileRunId },
  { title: 'a journal written with no reader attached is read completely later from byte 0', needs: 'exec', run: checkJournalDetachedRead },
  { title: 'readJournalNdjson deletes both files after the sentinel; an observer keeps them', needs: 'exec', run: checkJournalDeletedAfterSentinel },
  { title: 'a follow that ends without the sentinel is followed again: every line once, then the sentinel', needs: 'follow', run: checkJournalRefollow },
  { title: 'the poll strategy gives the same lines as follow', needs: 'follow', run: checkJournalPollMatchesFollow },
]

/**
 * Register the journal conformance suite in the current vitest file. Call it
 * at the top level of a test file; it adds one `describe` named after the
 * provider. Cases: stdout lands with the sentinel; a non-zero exit is
 * recorded; stderr stays out of the journal; stdin goes through a
 * file deleted before the agent runs; reads from a byte offset give
 * absolute positions; follow and poll deliver each line before the next is
 * produced; follow stops on abort and leaves no `tail`; a forged sentinel is
 * ignored; a journal the agent rewrote ends nothing; a hostile runId round-trips through every command and executes
 * nothing; a journal written with no reader is read completely later; both
 * files are deleted after the run's own reader saw the sentinel; a follow
 * that ends early is followed again; poll and follow agree.
 *
 * Needs capability `exec` (every case is skipped, naming it, without);
 * follow cases need `backgroundProcesses` and `killableProcesses` (the
 * follow strategy) and are skipped naming the missing one otherwise. The
 * sandbox needs POSIX `sh` with `od`, `tr`, `sha256sum`, `/dev/urandom`,
 * `base64`, `dd`, `head`, `tail`, `find`, `date`, `sed` and `grep` (GNU
 * coreutils or BusyBox).
 *
 * @param name - Shown in the suite title, e.g. `docker debian`.
 * @param options - {@link JournalConformanceOptions}.
 * @throws SandboxConfigError naming the field for invalid options; whatever `makeProvider` throws, as a collection error of the file.
 * @example
 * ```ts
 * import { runJournalConformance } from '@tanstack/ai-sandbox/testkit'
 * import { dockerSandbox } from '@acme/ai-sandbox-docker'
 *
 * runJournalConformance('docker', { makeProvider: () => dockerSandbox({ image: 'sandbox-base:latest' }) })
 * ```
 */
export function runJournalConformance(name: string, options: JournalConformanceOptions): void {
  const { makeProvider, timeoutMs = 30_000, journalDir = DEFAULT_JOURNAL_DIR } = parseOptions(optionsSchema, options, 'runJournalConformance')
  describe(`journal conformance: ${name}`, async () => {
    const provider = await makeProvider()
    const context = await createJournalConformanceContext(provider, { dir: journalDir, timeoutMs })
    // One sandbox for the suite while cases pass; a failed case takes its sandbox with it, so the next starts clean.
    afterEach((test) => context.cleanup({ keepSandbox: test.task.result?.state !== 'fail' }), timeoutMs)
    afterAll(() => context.cleanup(), timeoutMs)
    const missing = missingFor(context)
    for (const journalCase of CASES) {
      const reason = missing[journalCase.needs]
      if (reason) skippedCase(journalCase.title, reason)
      else it(journalCase.title, () => journalCase.run(context), timeoutMs)
    }
  })
}

/** Why each kind of case cannot run here (`undefined`: it can). */
function missingFor(context: JournalConformanceContext): Record<JournalCase['needs'], string | undefined> {
  const caps = context.capabilities
  const exec = caps.exec ? undefined : 'needs capability exec (the journal is started, read and deleted through handle.process.exec)'
  const flags = (['backgroundProcesses', 'killableProcesses'] as const).filter((flag) => !caps[flag])
  const follow = exec ?? (flags.length === 0 ? undefined : `needs the follow strategy: capability ${flags.join(' and ')} is false, so journalReadStrategy() picks poll`)
  return { exec, follow }
}
