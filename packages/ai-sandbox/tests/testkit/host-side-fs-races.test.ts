// The fs race and symlink-escape checks of the provider kit catch a provider
// whose `fs` runs on the host while its processes see another /tmp (a
// bind-mount provider): the naive provider of bind-mount-provider.ts checks a
// path with realpath and then writes to it. Its processes have a /tmp of their
// own, so a canary planted only through exec is somewhere its fs never looks;
// the kit therefore also makes the same outside folder on the host, and these
// cases prove that host copy is what reports the escapes (before it, all six
// race cases passed this provider).
//
// Finding M2: a write that escapes and then fails with a raw Node error (the
// temp file of a temp-then-rename write landed outside, then the rename threw
// ENOENT) must be reported as the escape, not only as the error type; and the
// race runs for a time budget, so a fast provider gets hundreds of tries.
//
// Finding M1: the race folder of this provider is at its host path, so the kit
// swaps it from the host (a worker thread); with a workspaceRoot the host does
// not have, the shell loop in the sandbox swaps it instead.
import { existsSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { SandboxHandle } from '../../src/contracts/index.js'
import { checkFsRace, checkFsSymlinkEscape, raceFsOperation, SANDBOX_ERROR_RULE } from '../../src/testkit/index.js'
import type { FsRaceOperation } from '../../src/testkit/index.js'
import { bindMountSupport, naiveBindMountProvider } from './bind-mount-provider.js'

const support = bindMountSupport()

describe.skipIf(!support.ok)(`a host-side fs with its own check-then-act race is reported by the kit${support.ok ? '' : ` (skipped: ${support.reason})`}`, () => {
  const { provider, dispose } = naiveBindMountProvider()
  const handles: SandboxHandle[] = []
  const sandbox = async () => {
    const handle = await provider.create()
    handles.push(handle)
    return handle
  }
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.destroy()))
  })
  afterAll(() => dispose())

  for (const operation of ['write', 'mkdir', 'list', 'read', 'remove'] as const satisfies readonly FsRaceOperation[]) {
    it(`${operation}: the race reaches the host copy of the outside folder, and checkFsRace says so`, async () => {
      const error = await checkFsRace(await sandbox(), operation).then(
        () => undefined,
        (thrown: unknown) => thrown as Error,
      )
      expect(error?.message).toMatch(
        new RegExp(`^Contract violated: fs\\.${operation} under a directory swapped for a symlink to an outside folder never reaches that folder\\n\\s+\\d+ of \\d+ calls reached the outside folder on the host where the kit runs`),
      )
      // Its processes' /tmp is private: the copy planted there through exec is never reached.
      expect(error?.message).not.toMatch(/inside the sandbox/)
      const canary = /\((\/tmp\/conformance-canary-[0-9a-f]+), made there with node:fs/.exec(error?.message ?? '')?.[1]
      expect(canary && existsSync(canary), `the kit removed its host canary ${canary}`).toBe(false)
    })
  }

  it('a write through a dangling outward link lands on the host, and checkFsSymlinkEscape says so', async () => {
    const handle = await sandbox()
    await expect(checkFsSymlinkEscape(handle)).rejects.toThrow(/Contract violated: fs\.write to a dangling link through a symlink that points outside the workspace is refused/)
    expect(existsSync(handle.workspaceRoot)).toBe(true)
  })

  // A write that takes about a millisecond and touches nothing: the speed of a host-side fs, with nothing to escape.
  const fast = (handle: SandboxHandle): SandboxHandle => ({ ...handle, fs: { ...handle.fs, write: () => sleep(1) } })

  it('the race runs for a time budget: an fs whose calls take a millisecond is raced far more than 30 times, and every call is counted', async () => {
    const outcome = await raceFsOperation(fast(await sandbox()), 'write')
    expect(outcome.calls).toBeGreaterThan(100)
    expect(outcome.calls).toBeLessThanOrEqual(1000)
    expect(outcome.escapes).toBe(0)
    expect(outcome.succeeded + outcome.refused).toBe(outcome.calls)
  })

  it('the minimum is raced even with no budget left, and the maximum caps a long budget', async () => {
    const handle = fast(await sandbox())
    expect((await raceFsOperation(handle, 'write', 3, { budgetMs: 0 })).calls).toBe(3)
    expect((await raceFsOperation(handle, 'write', 5, { budgetMs: 60_000, maxIterations: 12 })).calls).toBe(12)
  })

  it('the race folder is swapped from the host when the host sees it, and by the shell loop in the sandbox when it does not', async () => {
    const handle = await sandbox()
    const host = await raceFsOperation(handle, 'write', 5, { budgetMs: 0 })
    expect(host.swapper).toBe('host')
    // The same sandbox with a workspaceRoot the host does not have: the kit cannot find the race folder, so the sandbox swaps it.
    const hidden = await raceFsOperation({ ...handle, workspaceRoot: `/nonexistent-${Date.now()}` }, 'write')
    expect(hidden.swapper).toBe('sandbox')
    expect(hidden.hostEscapes).toBeGreaterThan(0)
  })

  it('a raced call that only throws foreign errors (no escape) is reported as the SandboxError rule, with the count', async () => {
    const handle = await sandbox()
    const raw: SandboxHandle = {
      ...handle,
      fs: {
        ...handle.fs,
        write: async () => {
          throw new TypeError('not a sandbox error')
        },
      },
    }
    const error = await checkFsRace(raw, 'write').then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    )
    expect(error?.message).toContain(`Contract violated: ${SANDBOX_ERROR_RULE}`)
    expect(error?.message).toMatch(/got TypeError: not a sandbox error\n\s+while: fs\.write \(raced against a directory swapped for a symlink\) resolves or is refused \(call #0; \d+ of \d+ calls threw such an error, none reached the outside folder\)/)
    expect((error as Error & { cause?: unknown }).cause).toBeInstanceOf(TypeError)
  })
})

describe.skipIf(!support.ok)(`a temp-then-rename write whose temp file escapes and whose rename then throws a raw error is reported as the escape${support.ok ? '' : ` (skipped: ${support.reason})`}`, () => {
  const { provider, dispose } = naiveBindMountProvider({ write: 'temp-then-rename' })
  const handles: SandboxHandle[] = []
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.destroy()))
  })
  afterAll(() => dispose())

  it('write: checkFsRace names the escape on the host copy first, and the raw ENOENT (of the rename, mostly) as context', async () => {
    const handle = await provider.create()
    handles.push(handle)
    const error = await checkFsRace(handle, 'write').then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    )
    expect(error?.message).toMatch(
      /^Contract violated: fs\.write under a directory swapped for a symlink to an outside folder never reaches that folder\n\s+\d+ of \d+ calls reached the outside folder on the host where the kit runs/,
    )
    expect(error?.message).toMatch(/calls threw an error that is not a SandboxError/)
    // Mostly the rename's (the temp file is outside by then); a temp write that met the folder mid-swap (missing) fails the same way.
    expect(error?.message).toMatch(/the first, call #\d+: Error: ENOENT: no such file or directory, (rename|open) '[^']*\/d\/\.w-[0-9a-f]+'/)
    expect((error as Error & { cause?: { code?: unknown } }).cause?.code).toBe('ENOENT')
    const canary = /\((\/tmp\/conformance-canary-[0-9a-f]+), made there with node:fs/.exec(error?.message ?? '')?.[1]
    expect(canary && existsSync(canary), `the kit removed its host canary ${canary}`).toBe(false)
  })
})
