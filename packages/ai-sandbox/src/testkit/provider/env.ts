/**
 * `env.set` conformance: variables set on the sandbox reach later `exec` (and
 * `spawn`) calls, later sets merge, and per-call env wins. Observed through
 * `exec`, so the group needs that capability too.
 */
import { describe, expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import { conformanceCase, skippedCase, useSharedSandbox } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { readStream } from './io.js'

const read = async (handle: SandboxHandle, name: string) => (await handle.process.exec(`printf %s "\${${name}-unset}"`)).stdout

/** `env.set` reaches later exec calls; a later set merges (keeps, overrides, adds); per-call env wins. */
export async function checkEnvSetMerges(handle: SandboxHandle): Promise<void> {
  await handle.env.set({ CONF_A: 'one', CONF_B: 'two words' })
  expect(await read(handle, 'CONF_A'), 'env.set variables are visible to a later exec').toBe('one')
  expect(await read(handle, 'CONF_B'), 'env.set values arrive unchanged (spaces kept)').toBe('two words')
  await handle.env.set({ CONF_B: 'replaced', CONF_C: 'three' })
  expect(await read(handle, 'CONF_A'), 'a later env.set merges: variables it does not mention are kept').toBe('one')
  expect(await read(handle, 'CONF_B'), 'a later env.set overrides a variable it mentions').toBe('replaced')
  expect(await read(handle, 'CONF_C'), 'a later env.set adds new variables').toBe('three')
  const perCall = await handle.process.exec('printf %s "$CONF_A"', { env: { CONF_A: 'per-call' } })
  expect(perCall.stdout, 'exec({ env }) is merged over the sandbox env, so the per-call value wins').toBe('per-call')
}

/** With backgroundProcesses: `env.set` reaches spawned processes too. */
export async function checkEnvReachesSpawn(handle: SandboxHandle): Promise<void> {
  await handle.env.set({ CONF_SPAWN: 'spawned sees it' })
  const child = await handle.process.spawn('printf %s "$CONF_SPAWN"')
  const stdout = readStream(child.stdout, 'stdout')
  readStream(child.stderr, 'stderr')
  await child.wait()
  expect(await stdout.done, 'env.set variables are visible to a later spawn').toBe('spawned sees it')
}

/** Register the env group. */
export function registerEnvConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  describe('env', () => {
    if (!ctx.capabilities.exec) {
      skippedCase('env', 'env.set is observed through exec, and capabilities().exec is false')
      return
    }
    const sandbox = useSharedSandbox(getContext)
    conformanceCase(ctx, 'env.set reaches exec and later sets merge', () => checkEnvSetMerges(sandbox()))
    if (ctx.capabilities.backgroundProcesses) conformanceCase(ctx, 'env.set reaches spawn', () => checkEnvReachesSpawn(sandbox()))
  })
}
