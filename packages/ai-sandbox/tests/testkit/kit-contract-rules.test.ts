// Three rules the provider kit used to rely on without naming them: a failure
// must say which one broke. A provider error that is not a SandboxError is
// reported as such (not passed through raw); a spawn() that resolves before
// its process runs is named as a breach of that rule (not "conformance
// setup"); and, with the listResources hook, a destroy() that leaves its
// resources behind fails instead of passing.
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { SandboxProvider } from '../../src/contracts/index.js'
import {
  SANDBOX_ERROR_RULE,
  SPAWN_RUNNING_RULE,
  checkDestroyLeavesNoResources,
  checkDestroyStopsProcesses,
  checkFsReadMissing,
  checkFsTextRoundTrip,
  createProviderConformanceContext,
  reportForeignErrors,
} from '../../src/testkit/index.js'
import { failureOf } from '../helpers/kit-failure.js'
import { memoryProvider } from './memory-provider.js'
import { naiveHostProvider, naiveTaggedProcesses } from './naive-host-provider.js'

describe('the provider kit names the rule a provider broke', () => {
  it('an error that is not a SandboxError is reported as a breach of the error rule, with the original as cause', async () => {
    const provider = memoryProvider()
    const handle = await provider.create()
    const broken = { ...handle, fs: { ...handle.fs, read: async () => Promise.reject(new TypeError('cannot read properties of undefined')) } }
    // Raw, a round trip would fail with the bare TypeError.
    await expect(checkFsTextRoundTrip(broken)).rejects.toThrow(/^cannot read properties of undefined$/)
    const error = await reportForeignErrors('fs > text round trip', () => checkFsTextRoundTrip(broken)).then(
      () => undefined,
      (thrown: unknown) => thrown as Error & { cause?: unknown },
    )
    expect(error?.message).toContain(`Contract violated: ${SANDBOX_ERROR_RULE}`)
    expect(error?.message).toMatch(/got TypeError: cannot read properties of undefined\n\s+while: fs > text round trip/)
    expect(error?.cause).toBeInstanceOf(TypeError)
    // A provider that keeps the rule passes through unchanged, and the kit's own assertions are not rewrapped.
    await expect(reportForeignErrors('ok', () => checkFsTextRoundTrip(handle))).resolves.toBeUndefined()
    const lax = await memoryProvider({ readMissingAsEmpty: true }).create()
    expect(await failureOf(() => reportForeignErrors('x', () => checkFsReadMissing(lax)))).toMatch(/^Contract violated: fs\.read of a missing file/)
  })

  it.skipIf(process.platform !== 'linux')('a spawn() that resolves before its process runs is named as a breach of the spawn rule', async () => {
    const tag = randomUUID()
    const naive = naiveHostProvider(tag)
    // The process starts a second after spawn() resolved; the command travels in the environment, so no command line shows it early.
    const late: SandboxProvider = {
      ...naive,
      create: async (input) => {
        const handle = await naive.create(input)
        const spawn: typeof handle.process.spawn = (command, options = {}) =>
          handle.process.spawn('sleep 1; eval "$KIT_LATE_COMMAND"', { ...options, env: { ...options.env, KIT_LATE_COMMAND: command } })
        return { ...handle, process: { ...handle.process, spawn } }
      },
    }
    const ctx = await createProviderConformanceContext(late, { probeTools: false })
    const message = await failureOf(() => checkDestroyStopsProcesses(ctx).finally(ctx.destroyTracked))
    expect(message).toContain(`Contract violated: ${SPAWN_RUNNING_RULE}`)
    expect(message).not.toMatch(/conformance setup/)
    expect(await naiveTaggedProcesses(tag), 'destroying the sandboxes stopped the late loop').toEqual([])
  })

  it('with listResources, a destroy() that leaves its resource fails, and a clean one passes', async () => {
    const withResources = (leaky: boolean) => {
      const resources = new Set<string>()
      const inner = memoryProvider()
      const forget = (id: string) => {
        if (!leaky) resources.delete(`sandbox ${id}`)
      }
      const provider: SandboxProvider = {
        ...inner,
        create: async (input) => {
          const handle = await inner.create(input)
          resources.add(`sandbox ${handle.id}`)
          return { ...handle, destroy: async () => (await handle.destroy(), forget(handle.id)) }
        },
        destroy: async (input) => (await inner.destroy(input), forget(input.id)),
      }
      return { provider, listResources: () => [...resources] }
    }
    const clean = withResources(false)
    const good = await createProviderConformanceContext(clean.provider, { listResources: clean.listResources })
    await expect(checkDestroyLeavesNoResources(good).finally(good.destroyTracked)).resolves.toBeUndefined()

    const leaky = withResources(true)
    const bad = await createProviderConformanceContext(leaky.provider, { listResources: leaky.listResources })
    const message = await failureOf(() => checkDestroyLeavesNoResources(bad).finally(bad.destroyTracked))
    expect(message).toMatch(/handle\.destroy\(\) and provider\.destroy\(\{ id \}\) remove everything the provider made for the sandbox: listResources\(\) still lists these/)
    expect(message).toMatch(/sandbox /)

    const blind = await createProviderConformanceContext(memoryProvider(), { listResources: () => [] })
    expect(await failureOf(() => checkDestroyLeavesNoResources(blind).finally(blind.destroyTracked))).toMatch(/conformance setup: listResources\(\) lists the resources of a new sandbox/)
  })
})
