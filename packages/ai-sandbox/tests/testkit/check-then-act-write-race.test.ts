// Finding M1: a provider whose processes and fs both run on the host (the
// sandbox is a host folder) and whose fs.write checks then acts (realpath of
// the parent, lstat of the target, then writeFile of a temp file and rename,
// by path string) passed the kit's write race: the swapper was a shell loop
// inside the sandbox, forking mv and ln milliseconds apart, so the write's
// window (a few event-loop turns) was rarely hit. A 25-line swapper in Node
// in the same process hit it within a few hundred calls. When the race folder
// is visible from the host at the same path, the kit now swaps it from its
// own process, in a worker thread's tight loop, and this write must fail.
import { existsSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import type { SandboxHandle } from '../../src/contracts/index.js'
import { checkFsRace } from '../../src/testkit/index.js'
import { checkThenActProvider } from './check-then-act-provider.js'

describe.skipIf(process.platform !== 'linux')('a host-side check-then-act fs.write over a host folder sandbox (finding M1)', () => {
  const provider = checkThenActProvider(`check-then-act-${randomUUID()}`)
  const handles: SandboxHandle[] = []
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.destroy()))
  })

  it('write: the kit swaps the race folder from the host, a temp file lands in the outside folder, and checkFsRace says so', async () => {
    const handle = await provider.create()
    handles.push(handle)
    const error = await checkFsRace(handle, 'write').then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    )
    expect(error?.message).toMatch(
      /^Contract violated: fs\.write under a directory swapped for a symlink to an outside folder never reaches that folder\n\s+\d+ of \d+ calls reached the outside folder \/tmp\/conformance-canary-[0-9a-f]+ \(the sandbox and the host where the kit runs share it\)/,
    )
    expect(error?.message).toMatch(/; the folder swapped from the host where the kit runs\)/)
    const canary = /(\/tmp\/conformance-canary-[0-9a-f]+)/.exec(error?.message ?? '')?.[1]
    expect(canary && existsSync(canary), `the kit removed its canary ${canary}`).toBe(false)
  })
})
