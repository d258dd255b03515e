// The cancel checks of the provider kit catch a provider whose abort, timeout,
// kill() and destroy() reach only the process group (a naive host provider with
// real processes), and the kit cleans up after such a failing case: every
// process it started is killed before the failure is reported, so nothing
// carrying the provider's tag is left on the host afterwards.
import { randomUUID } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  checkDestroyStopsEscapedChildren,
  checkExecAbortStopsEscapedChild,
  checkExecTimeoutStopsEscapedChild,
  checkSpawnKillSetsidChild,
  checkSpawnKillStopsEscapedChild,
  createProviderConformanceContext,
} from '../../src/testkit/index.js'
import { NAIVE_TAG_ENV, naiveHostProvider } from './naive-host-provider.js'

/** Live host processes whose environment holds `NAIVE_HOST_RUN=<tag>` (zombies have no environment). */
function tagged(tag: string): number[] {
  const needle = Buffer.from(`\0${NAIVE_TAG_ENV}=${tag}\0`)
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`)]).includes(needle)) pids.push(Number(name))
    } catch {
      // exited meanwhile
    }
  }
  return pids
}

/** Tagged processes still running after a short settle (SIGKILL is delivered at once, teardown is not); each is then killed. */
async function leftovers(tag: string): Promise<number[]> {
  for (let i = 0; i < 50 && tagged(tag).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  const left = tagged(tag)
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  return left
}

const onLinux = process.platform === 'linux' ? describe : describe.skip

onLinux('the kit catches cancels that leave a setsid child, and cleans up after the failing case', () => {
  const cases = [
    ['exec abort', checkExecAbortStopsEscapedChild, /aborting process\.exec stops every process the command started/],
    ['exec timeoutMs', checkExecTimeoutStopsEscapedChild, /process\.exec\(\{ timeoutMs \}\) stops every process the command started/],
    ['spawn kill()', checkSpawnKillStopsEscapedChild, /SpawnedProcess\.kill\(\) stops every process the job started/],
    ['kill() of a setsid child (recorded pids)', checkSpawnKillSetsidChild, /not even one that called setsid/],
  ] as const
  for (const [name, check, rule] of cases) {
    it(`${name}: the check fails naming the rule, and nothing the case started is left`, async () => {
      const tag = randomUUID()
      const provider = naiveHostProvider(tag)
      const handle = await provider.create()
      try {
        const error = await check(handle).then(
          () => undefined,
          (e: unknown) => e as Error,
        )
        expect(error?.message).toMatch(rule)
        expect(await leftovers(tag), 'the kit killed what the failing case started before reporting it').toEqual([])
      } finally {
        await handle.destroy()
      }
    })
  }

  it('handle.destroy(): the check fails naming the rule, and nothing the case started is left', async () => {
    const tag = randomUUID()
    const ctx = await createProviderConformanceContext(naiveHostProvider(tag), { probeTools: false })
    const error = await checkDestroyStopsEscapedChildren(ctx)
      .finally(() => ctx.destroyTracked())
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      )
    expect(error?.message).toMatch(/handle\.destroy\(\) stops every process of the sandbox/)
    expect(await leftovers(tag), 'the kit killed what the failing case started before reporting it').toEqual([])
  })
})
