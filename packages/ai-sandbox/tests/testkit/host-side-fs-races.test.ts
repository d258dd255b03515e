// The fs race and symlink-escape checks of the provider kit catch a provider
// whose `fs` runs on the host while its processes see another /tmp (a
// bind-mount provider): the naive provider of bind-mount-provider.ts checks a
// path with realpath and then writes to it. Its processes have a /tmp of their
// own, so a canary planted only through exec is somewhere its fs never looks;
// the kit therefore also makes the same outside folder on the host, and these
// cases prove that host copy is what reports the escapes (before it, all six
// race cases passed this provider).
import { existsSync } from 'node:fs'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { SandboxHandle } from '../../src/contracts/index.js'
import { checkFsRace, checkFsSymlinkEscape } from '../../src/testkit/index.js'
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
        new RegExp(`^Contract violated: fs\\.${operation} under a directory swapped for a symlink to an outside folder never reaches that folder\\n\\s+\\d+ of 30 calls reached the outside folder on the host where the kit runs`),
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
})
