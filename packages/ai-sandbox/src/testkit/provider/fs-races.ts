/**
 * Filesystem conformance, part three: confinement that holds while the agent
 * fights it. A background loop in the sandbox flips a directory between a real
 * folder and a symlink to an outside canary folder while the host calls
 * `read`/`write`/`list`/`remove`/`mkdir`/`exec({ cwd })` under it; the canary
 * must come out untouched and no call may return outside data. Also: a FIFO
 * or device is refused (`special-file`) without hanging, a file with other
 * hard links is not read (`hard-link`) and a write replaces it without
 * touching the other link, and a read over the provider's size bound throws
 * `SandboxLimitError` `file-too-large`. The canary is a fresh
 * `/tmp/conformance-canary-<hex>` made both inside the sandbox (through
 * `exec`) and on the host where the kit runs (with `node:fs`), so an escape
 * is seen whether the provider's `fs` resolves paths inside the sandbox or on
 * the host (a bind-mount provider); both copies are removed afterwards, as is
 * every planted link.
 */
import { describe, expect } from 'vitest'
import { SandboxError } from '../../contracts/errors.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import { annotateForeignError, describeError, expectSandboxPathError, violation, within } from './assert.js'
import { conformanceCase, skippedCase } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { q, scratch, sh } from './io.js'
import { changedLines, HOST_COPY_MARKER, HOST_COPY_SUFFIX, plantOutsideFolder } from './outside.js'
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
  /** Calls that resolved (inside the workspace). */
  readonly succeeded: number
  /** Calls refused with a sandbox error (the path was mid-swap). */
  readonly refused: number
}

/** How long one raced call may take before it counts as a hang, ms. */
const RACE_CALL_BOUND_MS = 15_000

/** Content of the outside folder's `f.txt`; the host's copy reads `outside (host copy)`. */
const OUTSIDE_TEXT = 'outside'

/**
 * Race `operation` `iterations` times against a loop that swaps the directory
 * the calls go through for a symlink to an outside canary folder.
 * Needs `exec` and background processes (`spawn`).
 *
 * The canary is one absolute path (`/tmp/conformance-canary-<hex>`) made
 * twice: inside the sandbox through `exec`, and on the host where the kit
 * runs through `node:fs` (see `plantOutsideFolder`). The link the swapper
 * plants leads to the sandbox's copy for an `fs` that resolves paths inside
 * the sandbox, and to the host's copy for one that resolves them on the host
 * (a bind-mount provider), so an escape is seen wherever the provider's `fs`
 * runs, with no extra round. Both copies are removed afterwards.
 *
 * @param handle - A sandbox with `exec` and `spawn`.
 * @param operation - The host call to race.
 * @param iterations - Host calls to make (the kit uses 30). Default 30.
 * @returns Escapes (must be 0; split by copy), successes and refusals.
 * @throws AssertionError when a call hangs longer than 15 s, or throws an error that is not a `SandboxError` (named as the contract rule it breaks).
 */
export async function raceFsOperation(handle: SandboxHandle, operation: FsRaceOperation, iterations = 30): Promise<FsRaceOutcome> {
  const root = scratch('fs-race')
  const names = Array.from({ length: iterations }, (_, i) => `v${i}`)
  await sh(handle, `mkdir -p ${q(`${root}/d`)} && printf inside > ${q(`${root}/d/f.txt`)} && cd ${q(`${root}/d`)} && for f in ${names.join(' ')}; do : > "$f"; done`)
  let canary: OutsideFolder | undefined
  let reachedSandbox = 0
  let reachedHost = 0
  let succeeded = 0
  let refused = 0
  try {
    canary = await plantOutsideFolder(handle, 'conformance-canary', { text: { 'f.txt': OUTSIDE_TEXT }, empty: ['canary-only', ...names] })
    const outside = canary
    const before = { sandbox: await outside.sandboxSnapshot(), host: outside.hostSnapshot() }
    const swapper = await handle.process.spawn(swapLoop(root, outside.path))
    try {
      for (let i = 0; i < iterations; i++) {
        const call = raceCall(handle, operation, `${root}/d`, i)
        try {
          const reached = await within(call, `fs race: ${operation} #${i} under a directory being swapped for a symlink settles (no hang)`, RACE_CALL_BOUND_MS)
          succeeded++
          if (reached === 'sandbox' && !outside.shared) reachedSandbox++
          else if (reached !== undefined) reachedHost++
        } catch (error) {
          if (!SandboxError.isInstance(error)) {
            throw annotateForeignError(error, `fs.${operationLabel(operation)} (raced against a directory swapped for a symlink) resolves or is refused`)
          }
          refused++
        }
      }
    } finally {
      await swapper.kill('SIGKILL').catch(() => undefined)
    }
    if (!outside.shared) reachedSandbox += changedLines(before.sandbox, await outside.sandboxSnapshot())
    reachedHost += changedLines(before.host, outside.hostSnapshot())
  } finally {
    // Also after a failed check: the canary copies and the planted link never outlive the case.
    await handle.process.exec(`rm -rf ${q(root)}`).catch(() => undefined)
    await canary?.remove()
  }
  return { escapes: reachedSandbox + reachedHost, sandboxEscapes: reachedSandbox, hostEscapes: reachedHost, sharedOutside: canary?.shared ?? false, outsidePath: canary?.path ?? '', succeeded, refused }
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
      const result = await handle.process.exec(`touch e${i} && ls -A`, { cwd: dir })
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

/** With exec and spawn: 30 raced calls of `operation` leave both copies of the outside canary untouched and never return their data. */
export async function checkFsRace(handle: SandboxHandle, operation: FsRaceOperation): Promise<void> {
  const outcome = await raceFsOperation(handle, operation, 30)
  if (outcome.escapes !== 0) {
    const where: string[] = []
    if (outcome.sandboxEscapes > 0) where.push(`${outcome.sandboxEscapes} of 30 calls reached the outside folder inside the sandbox (${outcome.outsidePath}, planted through exec)`)
    if (outcome.hostEscapes > 0) {
      where.push(
        outcome.sharedOutside
          ? `${outcome.hostEscapes} of 30 calls reached the outside folder ${outcome.outsidePath} (the sandbox and the host where the kit runs share it)`
          : `${outcome.hostEscapes} of 30 calls reached the outside folder on the host where the kit runs (${outcome.outsidePath}, made there with node:fs: the provider's fs resolved the symlink on the host)`,
      )
    }
    violation(
      `fs.${operationLabel(operation)} under a directory swapped for a symlink to an outside folder never reaches that folder`,
      `${where.join('; ')} (${outcome.succeeded} resolved, ${outcome.refused} refused)`,
    )
  }
  expect(outcome.succeeded + outcome.refused, 'every raced call settled').toBe(30)
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
        run(`${operation} under a directory swapped for an outward symlink never reaches outside (30 races)`, (h) => checkFsRace(h, operation))
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
