/**
 * Filesystem conformance, part three: confinement that holds while the agent
 * fights it (a directory flipped to an outside symlink under every `fs` call;
 * the canary must stay untouched), plus special files, hard links and the read
 * bound. A pass is evidence, not proof. One file: every race case shares one
 * swapper, canary and time budget. Design notes: docs/design/testkit.md
 */
import { describe, expect } from 'vitest'
import { SandboxError } from '../../contracts/errors.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import { annotateForeignError, describeError, expectSandboxPathError, isForeignError, SANDBOX_ERROR_RULE, stackTop, violation, violationError, within } from './assert.js'
import { conformanceCase, skippedCase } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { q, scratch, sh } from './io.js'
import { hostProbe, hostRaceFolder, startHostSwapper } from './host-swap.js'
import { changedLines, emptyFilesLoop, HOST_COPY_MARKER, HOST_COPY_SUFFIX, plantOutsideFolder } from './outside.js'
import type { OutsideFolder } from './outside.js'

/** The host operations raced against a directory swap. */
export type FsRaceOperation = 'read' | 'write' | 'list' | 'remove' | 'mkdir' | 'exec-cwd'

/** Every {@link FsRaceOperation}, in the order the kit runs them. */
export const FS_RACE_OPERATIONS: readonly FsRaceOperation[] = ['read', 'write', 'list', 'remove', 'mkdir', 'exec-cwd']

/** What one race run counted. */
export interface FsRaceOutcome {
  /** Calls that reached the outside folder, either copy: returned its data, or changed it. Must be 0. */
  readonly escapes: number
  /** Of {@link FsRaceOutcome.escapes}: those that reached the copy inside the sandbox (planted through `exec`). */
  readonly sandboxEscapes: number
  /** Of {@link FsRaceOutcome.escapes}: those that reached the copy on the host where the kit runs (planted with `node:fs`). */
  readonly hostEscapes: number
  /** `true` when the sandbox and the host see one outside folder (its `/tmp` is the host's); then every escape counts as a host one. */
  readonly sharedOutside: boolean
  /** The outside folder's absolute path (both copies), e.g. `/tmp/conformance-canary-1a2b3c4d`; removed by the time this is returned. */
  readonly outsidePath: string
  /** Calls made: at least the minimum, more while the calls so far took less than the budget, at most the maximum. */
  readonly calls: number
  /** Calls that resolved (inside the workspace). */
  readonly succeeded: number
  /** Calls refused with a sandbox error (the path was mid-swap). */
  readonly refused: number
  /**
   * Who swapped the folder: `'host'` when the race folder is visible from the
   * host where the kit runs at the same path (a worker thread of the kit
   * swapped it in a tight loop), `'sandbox'` otherwise (a shell loop spawned
   * in the sandbox).
   */
  readonly swapper: 'host' | 'sandbox'
}

/** How long {@link raceFsOperation} keeps racing after its minimum number of calls. */
export interface FsRaceOptions {
  /**
   * Keep making calls after the minimum while the calls so far took less
   * than this, ms. Default 2 000: a few hundred tries for an `fs` whose calls
   * take a millisecond or a few, about the minimum for one whose calls take
   * 50 to 100 ms (a container round trip), so it adds almost no time there.
   * Raise it for a soak (`{ budgetMs: 60_000, maxIterations: 100_000 }`).
   */
  readonly budgetMs?: number
  /** Never make more calls than this (a `remove` race makes one file per possible call beforehand). Default 1 000; never below the minimum. */
  readonly maxIterations?: number
  /**
   * Calls in flight at once. Default 4: a container provider's call is mostly
   * a round trip, so four at a time make the minimum in about a third of the
   * time, and the swapper (a busy loop) runs that much less. Every call still
   * goes through the swapped folder. 1 makes them one after another.
   */
  readonly concurrency?: number
}

/** The kit's default minimum number of raced calls per operation (`runSandboxProviderConformance({ fsRaceCalls })` lowers it). */
export const FS_RACE_MIN_CALLS = 30

/** The highest `fsRaceCalls` the runner accepts: the default {@link FsRaceOptions.maxIterations}. */
export const FS_RACE_MAX_MIN_CALLS = 1_000

const RACE_MIN_CALLS = FS_RACE_MIN_CALLS

/** Default {@link FsRaceOptions.budgetMs}, ms. */
const RACE_BUDGET_MS = 2_000

/** Default {@link FsRaceOptions.maxIterations}. */
const RACE_MAX_CALLS = 1_000

/** Default {@link FsRaceOptions.concurrency}. */
const RACE_CONCURRENCY = 4

/** How long one raced call may take before it counts as a hang, ms. */
const RACE_CALL_BOUND_MS = 15_000

/** Content of the outside folder's `f.txt`; the host's copy reads `outside (host copy)`. */
const OUTSIDE_TEXT = 'outside'

/**
 * Race `operation` against a loop that swaps the directory the calls go
 * through for a symlink to an outside canary folder: at least `iterations`
 * calls, then more while the calls so far took less than `budgetMs` (default
 * 2 s), at most `maxIterations` (default 1 000). A fast `fs` (a millisecond a
 * call) gets hundreds of tries, a slow one (a container round trip) about
 * the minimum. A race that finds no escape is evidence, not proof: an escape
 * that needs unlucky timing may take thousands of tries, so run a longer one
 * yourself, e.g. `raceFsOperation(handle, 'write', 30, { budgetMs: 60_000,
 * maxIterations: 100_000 })`.
 * Needs `exec` and background processes (`spawn`).
 *
 * The swapper: when the race folder the kit made through `exec` is visible
 * from the host where the kit runs at the same absolute path (a probe file
 * written through `exec` reads back with `node:fs`), a worker thread of the
 * kit swaps it in a tight synchronous loop, every few dozen microseconds,
 * so a check-then-act `fs` on the host is caught; otherwise a shell loop
 * spawned in the sandbox swaps it (each swap forks `mv`/`ln`, far slower).
 * `swapper` in the outcome says which.
 *
 * The canary is one absolute path (`/tmp/conformance-canary-<hex>`) made
 * twice: inside the sandbox through `exec`, and on the host where the kit
 * runs through `node:fs` (see `plantOutsideFolder`). The link the swapper
 * plants leads to the sandbox's copy for an `fs` that resolves paths inside
 * the sandbox, and to the host's copy for one that resolves them on the host
 * (a bind-mount provider), so an escape is seen wherever the provider's `fs`
 * runs, with no extra round. Both copies are removed afterwards.
 *
 * A call that throws an error that is not a `SandboxError` does not stop the
 * race: the first one is kept, and after the race the canary copies are
 * looked at first, since an escape can surface as a raw error (a temp file
 * written through the link, then a rename that fails with `ENOENT`). With
 * an escape, the escape is what is reported, the foreign error as context;
 * without one, the foreign error is reported as the `SandboxError` rule it
 * breaks. A hang stops the race at once.
 *
 * @param handle - A sandbox with `exec` and `spawn`.
 * @param operation - The host call to race.
 * @param iterations - The minimum number of calls (the kit uses 30). Default 30.
 * @param options - `budgetMs` (default 2 000) and `maxIterations` (default 1 000): how long to keep racing after the minimum; `concurrency` (default 4): calls in flight at once.
 * @returns Calls made, escapes (must be 0; split by copy), successes and refusals.
 * @throws AssertionError when a call hangs longer than 15 s; when a call threw an error that is not a `SandboxError`: the escape rule if the race also reached the canary (the first such error as `cause`), else `SANDBOX_ERROR_RULE`.
 */
export async function raceFsOperation(handle: SandboxHandle, operation: FsRaceOperation, iterations = RACE_MIN_CALLS, options: FsRaceOptions = {}): Promise<FsRaceOutcome> {
  const minimum = Math.max(0, Math.floor(iterations))
  const maximum = Math.max(minimum, Math.floor(options.maxIterations ?? RACE_MAX_CALLS))
  const budgetMs = options.budgetMs ?? RACE_BUDGET_MS
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? RACE_CONCURRENCY))
  const root = scratch('fs-race')
  // Only `remove` needs a file per possible call (`v<i>`), here and in the canary copies, where a remove through the link deletes one; one loop of builtins each.
  const numbered = { prefix: 'v', count: operation === 'remove' ? maximum : 0 }
  const probe = hostProbe(root)
  await sh(handle, `mkdir -p ${q(`${root}/d`)} && ${probe.command} && printf inside > ${q(`${root}/d/f.txt`)} && cd ${q(`${root}/d`)} && ${emptyFilesLoop(numbered.prefix, numbered.count)}`)
  // The race folder seen from the host at the same path: the kit swaps it from there, far faster than a shell loop can.
  const hostFolder = hostRaceFolder(handle, root, probe.token)
  let canary: OutsideFolder | undefined
  let reachedSandbox = 0
  let reachedHost = 0
  let succeeded = 0
  let refused = 0
  let calls = 0
  let foreign: ForeignErrors | undefined
  try {
    canary = await plantOutsideFolder(handle, 'conformance-canary', { text: { 'f.txt': OUTSIDE_TEXT }, empty: ['canary-only'], numbered })
    const outside = canary
    const before = { sandbox: await outside.sandboxSnapshot(), host: outside.hostSnapshot() }
    const stopSwapper = await startSwapper(handle, root, hostFolder, outside.path)
    try {
      const started = performance.now()
      // Calls run `concurrency` at a time: each claims the next index while the minimum is not reached or the budget lasts.
      let next = 0
      let verdict: { error: unknown } | undefined
      const claim = (): number | undefined => {
        if (verdict || next >= maximum || (next >= minimum && performance.now() - started >= budgetMs)) return undefined
        calls++
        return next++
      }
      const lane = async () => {
        for (let i = claim(); i !== undefined; i = claim()) {
          try {
            const reached = await within(raceCall(handle, operation, `${root}/d`, i), `fs race: ${operation} #${i} under a directory being swapped for a symlink settles (no hang)`, RACE_CALL_BOUND_MS)
            succeeded++
            if (reached === 'sandbox' && !outside.shared) reachedSandbox++
            else if (reached !== undefined) reachedHost++
          } catch (error) {
            if (SandboxError.isInstance(error)) refused++
            // The kit's own verdict (the hang from `within`) stops the race at once.
            else if (!isForeignError(error)) verdict ??= { error }
            // A raw error may be the tail of an escape (a temp file written outside, then a failed rename): keep racing, look at the canary first.
            else if (foreign) foreign.count++
            else foreign = { error, call: i, count: 1 }
          }
        }
      }
      // Every lane settles before the swapper stops and the folders go, so no call outlives the race.
      await Promise.all(Array.from({ length: concurrency }, lane))
      if (verdict) throw verdict.error
    } finally {
      await stopSwapper()
    }
    if (!outside.shared) reachedSandbox += changedLines(before.sandbox, await outside.sandboxSnapshot())
    reachedHost += changedLines(before.host, outside.hostSnapshot())
  } finally {
    // Also after a failed check: the canary copies and the planted link never outlive the case.
    await handle.process.exec(`rm -rf ${q(root)}`).catch(() => undefined)
    await canary?.remove()
  }
  const outcome: FsRaceOutcome = {
    escapes: reachedSandbox + reachedHost,
    sandboxEscapes: reachedSandbox,
    hostEscapes: reachedHost,
    sharedOutside: canary?.shared ?? false,
    outsidePath: canary?.path ?? '',
    calls,
    succeeded,
    refused,
    swapper: hostFolder === undefined ? 'sandbox' : 'host',
  }
  if (foreign) {
    if (outcome.escapes > 0) throw escapeViolation(operation, outcome, foreign)
    throw annotateForeignError(
      foreign.error,
      `fs.${operationLabel(operation)} (raced against a directory swapped for a symlink) resolves or is refused (call #${foreign.call}; ${foreign.count} of ${calls} calls threw such an error, none reached the outside folder)`,
    )
  }
  return outcome
}

/** Start the swapper of race folder `root`: the host one when the host sees the folder, else the shell loop in the sandbox. Resolves with its stop. */
async function startSwapper(handle: SandboxHandle, root: string, hostFolder: string | undefined, canary: string): Promise<() => Promise<void>> {
  if (hostFolder !== undefined) {
    const swapper = await startHostSwapper(hostFolder, canary)
    return async () => void (await swapper.stop())
  }
  const swapper = await handle.process.spawn(swapLoop(root, canary))
  return () => swapper.kill('SIGKILL').catch(() => undefined)
}

/** The errors of a race that were not `SandboxError`s: the first one, the call that threw it, and how many calls threw one. */
interface ForeignErrors {
  readonly error: unknown
  readonly call: number
  count: number
}

/** Which copy of the canary a call's result shows it reached. */
type Reached = 'sandbox' | 'host' | undefined

/** One raced host call; resolves with the canary copy its result shows it read, if any. */
async function raceCall(handle: SandboxHandle, operation: FsRaceOperation, dir: string, i: number): Promise<Reached> {
  switch (operation) {
    case 'read': {
      const text = await handle.fs.read(`${dir}/f.txt`)
      return text === OUTSIDE_TEXT ? 'sandbox' : text === `${OUTSIDE_TEXT}${HOST_COPY_SUFFIX}` ? 'host' : undefined
    }
    case 'write':
      await handle.fs.write(`${dir}/w${i}.txt`, 'written by the host')
      return undefined
    case 'list':
      return fromNames((await handle.fs.list(dir)).map((entry) => entry.name))
    case 'remove':
      await handle.fs.remove(`${dir}/v${i}`)
      return undefined
    case 'mkdir':
      await handle.fs.mkdir(`${dir}/m${i}`)
      return undefined
    case 'exec-cwd': {
      // Name only the canary's marker files it sees, not the whole folder: a long race leaves thousands of `e<i>`.
      const result = await handle.process.exec(`touch e${i} && for f in canary-only ${HOST_COPY_MARKER}; do if [ -e "$f" ]; then echo "$f"; fi; done`, { cwd: dir })
      return fromNames(result.stdout.split('\n'))
    }
  }
}

/** A listing of the canary: the host's copy has the marker file. */
function fromNames(names: readonly string[]): Reached {
  if (!names.includes('canary-only')) return undefined
  return names.includes(HOST_COPY_MARKER) ? 'host' : 'sandbox'
}

function operationLabel(operation: FsRaceOperation): string {
  return operation === 'exec-cwd' ? 'exec({ cwd })' : operation
}

/**
 * With exec and spawn: raced calls of `operation` (at least `minCalls`,
 * default 30, more while they took under 2 s, see {@link raceFsOperation})
 * leave both copies of the outside canary untouched and never return their data.
 *
 * @param options - How long to race beyond the minimum (default 2 s, at most 1 000 calls); raise `budgetMs` and `maxIterations` for a soak.
 * @param minCalls - The minimum number of calls. Default 30.
 */
export async function checkFsRace(handle: SandboxHandle, operation: FsRaceOperation, options: FsRaceOptions = {}, minCalls = RACE_MIN_CALLS): Promise<void> {
  const outcome = await raceFsOperation(handle, operation, minCalls, options)
  if (outcome.escapes !== 0) throw escapeViolation(operation, outcome)
  expect(outcome.succeeded + outcome.refused, `every raced call settled (${outcome.calls} calls)`).toBe(outcome.calls)
}

/** The escape rule's failure: which copy was reached by how many of the calls, and the first foreign error of the race, if any, as context and `cause`. */
function escapeViolation(operation: FsRaceOperation, outcome: FsRaceOutcome, foreign?: ForeignErrors): Error {
  const { calls } = outcome
  const where: string[] = []
  if (outcome.sandboxEscapes > 0) where.push(`${outcome.sandboxEscapes} of ${calls} calls reached the outside folder inside the sandbox (${outcome.outsidePath}, planted through exec)`)
  if (outcome.hostEscapes > 0) {
    where.push(
      outcome.sharedOutside
        ? `${outcome.hostEscapes} of ${calls} calls reached the outside folder ${outcome.outsidePath} (the sandbox and the host where the kit runs share it)`
        : `${outcome.hostEscapes} of ${calls} calls reached the outside folder on the host where the kit runs (${outcome.outsidePath}, made there with node:fs: the provider's fs resolved the symlink on the host)`,
    )
  }
  const swapped = outcome.swapper === 'host' ? 'the folder swapped from the host where the kit runs' : 'the folder swapped by a shell loop in the sandbox'
  const settled = `${outcome.succeeded} resolved, ${outcome.refused} refused${foreign ? `, ${foreign.count} threw` : ''}; ${swapped}`
  const also = foreign
    ? `\n  the provider also broke "${SANDBOX_ERROR_RULE}": ${foreign.count} of ${calls} calls threw an error that is not a SandboxError (an escape may end in one: a temp file written outside, then a rename that fails); the first, call #${foreign.call}: ${describeError(foreign.error)}${stackTop(foreign.error)}`
    : ''
  const error = violationError(`fs.${operationLabel(operation)} under a directory swapped for a symlink to an outside folder never reaches that folder`, `${where.join('; ')} (${settled})${also}`)
  if (foreign) (error as Error & { cause?: unknown }).cause = foreign.error
  return error
}

/** Whether the sandbox can make `kind` (`fifo`, `device`); the device needs CAP_MKNOD. */
async function tryMake(handle: SandboxHandle, command: string): Promise<boolean> {
  return (await handle.process.exec(command)).exitCode === 0
}

const SPECIAL_BOUND_MS = 10_000

/** With exec: reading or writing a FIFO is refused with `special-file` at once (never waits for a writer or reader), and the FIFO stays. */
export async function checkFsFifoRefused(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-fifo')
  await sh(handle, `mkdir -p ${q(root)} && mkfifo ${q(`${root}/pipe`)}`)
  const rule = (what: string) => `${what} of a FIFO is refused with SandboxPathError "special-file" without blocking`
  await within(expectSandboxPathError(() => handle.fs.read(`${root}/pipe`), ['special-file'], rule('fs.read')), rule('fs.read'), SPECIAL_BOUND_MS)
  await within(expectSandboxPathError(() => handle.fs.readBytes(`${root}/pipe`), ['special-file'], rule('fs.readBytes')), rule('fs.readBytes'), SPECIAL_BOUND_MS)
  await within(expectSandboxPathError(() => handle.fs.write(`${root}/pipe`, 'x'), ['special-file'], rule('fs.write')), rule('fs.write'), SPECIAL_BOUND_MS)
  await sh(handle, `[ -p ${q(`${root}/pipe`)} ]`)
  await handle.fs.remove(root)
}

/** With exec: a character device (made with `mknod`, when the sandbox may) is refused for read and write with `special-file`. */
export async function checkFsDeviceRefused(handle: SandboxHandle, skip: (reason: string) => void): Promise<void> {
  const root = scratch('fs-device')
  await sh(handle, `mkdir -p ${q(root)}`)
  try {
    if (!(await tryMake(handle, `mknod ${q(`${root}/null`)} c 1 3`))) {
      skip('mknod is not permitted in this sandbox (needs CAP_MKNOD), so no device file can be planted')
      return
    }
    const rule = (what: string) => `${what} of a character device is refused with SandboxPathError "special-file"`
    await within(expectSandboxPathError(() => handle.fs.read(`${root}/null`), ['special-file'], rule('fs.read')), rule('fs.read'), SPECIAL_BOUND_MS)
    await within(expectSandboxPathError(() => handle.fs.write(`${root}/null`, 'x'), ['special-file'], rule('fs.write')), rule('fs.write'), SPECIAL_BOUND_MS)
    await sh(handle, `[ -c ${q(`${root}/null`)} ]`)
  } finally {
    await handle.fs.remove(root)
  }
}

/**
 * With exec: a regular file with a second hard link is not read (`hard-link`:
 * the other link may be a file outside the workspace), and `fs.write`
 * replaces its directory entry, so the other link keeps its content.
 */
export async function checkFsHardLink(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-hardlink')
  await sh(handle, `mkdir -p ${q(`${root}/a`)} ${q(`${root}/b`)} && printf original > ${q(`${root}/a/other.txt`)} && ln ${q(`${root}/a/other.txt`)} ${q(`${root}/b/linked.txt`)}`)
  const rule = (what: string) => `${what} of a file with another hard link is refused with SandboxPathError "hard-link"`
  await expectSandboxPathError(() => handle.fs.read(`${root}/b/linked.txt`), ['hard-link'], rule('fs.read'))
  await expectSandboxPathError(() => handle.fs.readBytes(`${root}/b/linked.txt`), ['hard-link'], rule('fs.readBytes'))
  await handle.fs.write(`${root}/b/linked.txt`, 'replaced')
  expect(await handle.fs.read(`${root}/b/linked.txt`), 'fs.write of a hard-linked file writes a new file under that name (readable: it has one link now)').toBe('replaced')
  const other = await sh(handle, `cat ${q(`${root}/a/other.txt`)}`)
  expect(other.stdout, 'fs.write of a hard-linked file never writes through the link: the other name keeps its content').toBe('original')
  await handle.fs.remove(root)
}

/**
 * With exec: a 600 MiB sparse file (what an agent can plant in a blink) is
 * refused by `fs.readBytes` and `fs.read` with `SandboxLimitError`
 * `file-too-large` instead of being loaded. Assumes the provider's read bound
 * is below 600 MiB (the default of both bundled providers is 64 MiB).
 */
export async function checkFsReadLimit(handle: SandboxHandle): Promise<void> {
  const root = scratch('fs-read-limit')
  const big = `${root}/sparse.bin`
  await sh(handle, `mkdir -p ${q(root)} && dd if=/dev/null of=${q(big)} bs=1048576 seek=600 count=0 2>/dev/null`)
  try {
    for (const method of ['readBytes', 'read'] as const) {
      const rule = `fs.${method} of a 600 MiB file throws SandboxLimitError "file-too-large" (a documented size bound) instead of loading it`
      let error: unknown
      try {
        const value: string | Uint8Array = await within<string | Uint8Array>(method === 'read' ? handle.fs.read(big) : handle.fs.readBytes(big), rule)
        violation(rule, `it resolved with ${typeof value === 'string' ? value.length : value.byteLength} bytes`)
      } catch (thrown) {
        error = thrown
      }
      const limit = error as { reason?: unknown; limitBytes?: unknown; option?: unknown }
      if (!SandboxError.isInstance(error) || limit.reason !== 'file-too-large' || typeof limit.limitBytes !== 'number' || typeof limit.option !== 'string') {
        violation(rule, `got ${describeError(error)}`)
      }
    }
  } finally {
    await handle.fs.remove(root)
  }
}

/** Register the race and special-file checks inside the fs group, on the group's shared sandbox. */
export function registerFsRaceConformance(getContext: () => ProviderConformanceContext, sandbox: () => SandboxHandle): void {
  const ctx = getContext()
  describe('races and special files', () => {
    const run = (title: string, check: (h: SandboxHandle) => Promise<void>) => conformanceCase(ctx, title, () => check(sandbox()))
    if (!ctx.capabilities.exec) {
      skippedCase('fs: races and special files', 'needs exec to plant links, FIFOs and hard links (capabilities().exec is false)')
      return
    }
    if (ctx.capabilities.backgroundProcesses) {
      for (const operation of FS_RACE_OPERATIONS) {
        run(`${operation} under a directory swapped for an outward symlink never reaches outside (at least ${ctx.fsRaceCalls} races)`, (h) => checkFsRace(h, operation, ctx.fsRaceBudgetMs === undefined ? {} : { budgetMs: ctx.fsRaceBudgetMs }, ctx.fsRaceCalls))
      }
    } else {
      skippedCase('fs: symlink-swap races', 'needs a background swapper process (capabilities().backgroundProcesses is false)')
    }
    run('a FIFO is refused for read and write without blocking (special-file)', checkFsFifoRefused)
    conformanceCase(ctx, 'a device file is refused for read and write (special-file)', (test) => checkFsDeviceRefused(sandbox(), (reason) => test.skip(reason)))
    run('a hard-linked file is not read, and a write replaces it without touching the other link', checkFsHardLink)
    run('a read over the size bound throws SandboxLimitError file-too-large', checkFsReadLimit)
  })
}

/**
 * The swapper: flips `<dir>/d` between the real folder and a symlink to
 * `canary`, forever. A host call that creates `d` while it is briefly missing
 * (write and mkdir create parents) would jam a plain `mv` loop, so such a
 * folder is moved aside (`stray<n>`) and the flipping goes on. Each state is
 * held for a short builtin-only spin, so the link and the folder are each in
 * place about a third of the time (the rest, `d` is briefly missing).
 */
const SPIN = 'i=0; while [ "$i" -lt 300 ]; do i=$((i + 1)); done;'

function swapLoop(dir: string, canary: string): string {
  return (
    `cd ${q(dir)} && n=0; while :; do n=$((n + 1)); mv -T d real 2>/dev/null; ln -s ${q(canary)} d 2>/dev/null; ${SPIN} rm d 2>/dev/null; ` +
    `if ! mv -T real d 2>/dev/null; then mv -T d stray$n 2>/dev/null; mv -T real d 2>/dev/null; fi; ${SPIN} done`
  )
}
