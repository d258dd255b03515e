/**
 * `sandbox.destroy`: validated input, the store it uses is the definition's
 * (`defineSandbox({ instances })`, shown as `sandbox.instances`) unless the
 * call names one, and a key with no record is reported, not ignored.
 */
import { describe, expect, it } from 'vitest'
import { defineSandbox, InMemorySandboxInstanceStore, SandboxConfigError, type SandboxDefinition } from '../../src/index.js'
import { memoryProvider } from '../testkit/memory-provider.js'

const run = { threadId: 't1', runId: 'r1' }

/** The error `fn` throws (synchronously or as a rejection). */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

describe('sandbox.destroy input', () => {
  const sandbox = defineSandbox({ id: 'destroy-input', provider: memoryProvider() })

  it('refuses a call without a key, naming the field', async () => {
    const error = await thrown(() => (sandbox.destroy as (input?: unknown) => Promise<unknown>)({}))
    expect(SandboxConfigError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ reason: 'invalid-option', field: 'sandbox.destroy.key' })
    expect((error as Error).message).toMatch(/Invalid option sandbox\.destroy\.key: expected the compound key of a sandbox: sandbox\.key\(\{ threadId, runId, tenant\? \}\)/)
  })

  it('refuses a call without an argument', async () => {
    const error = await thrown(() => (sandbox.destroy as (input?: unknown) => Promise<unknown>)())
    expect(error).toMatchObject({ reason: 'invalid-option', field: 'sandbox.destroy' })
    expect((error as Error).message).toMatch(/expected \{ key \}/)
  })

  it("refuses a key that is not one of this definition's (another definition, a snapshot record, any string)", async () => {
    const other = defineSandbox({ id: 'someone-else', provider: memoryProvider() })
    for (const key of [other.key(run), sandbox.key(run).replace(/^sbx:/, 'sbx-snapshot:'), 'thread-1', '']) {
      const error = await thrown(() => sandbox.destroy({ key }))
      expect(error, key).toMatchObject({ field: 'sandbox.destroy.key' })
      expect((error as Error).message).toMatch(/expected a key of this definition \(sbx:<tenant>:destroy-input:memory:<digest>\)/)
    }
  })

  it('refuses an unknown option and a store without get/upsert/delete', async () => {
    const key = sandbox.key(run)
    expect(await thrown(() => sandbox.destroy({ key, store: {} } as never))).toMatchObject({ field: 'sandbox.destroy.store' })
    expect(await thrown(() => sandbox.destroy({ key, instances: {} as never }))).toMatchObject({ field: 'sandbox.destroy.instances' })
  })

  it('validates release the same way', () => {
    expect(() => sandbox.release({} as never)).toThrow(expect.objectContaining({ field: 'sandbox.release.key' }))
  })
})

describe('sandbox.destroy result', () => {
  it('reports the sandbox it destroyed', async () => {
    const provider = memoryProvider()
    const sandbox = defineSandbox({ id: 'destroy-known', provider })
    const handle = await sandbox.ensure(run)
    expect(await sandbox.destroy({ key: sandbox.key(run) })).toEqual({ destroyed: true, providerSandboxId: handle.id })
    expect(await provider.resume({ id: handle.id })).toBeNull()
  })

  it('reports a key with no record instead of ignoring it, and says which store it looked in', async () => {
    const sandbox = defineSandbox({ id: 'destroy-unknown', provider: memoryProvider() })
    const result = await sandbox.destroy({ key: sandbox.key(run) })
    expect(result).toMatchObject({ destroyed: false, reason: 'unknown-key' })
    expect(result.destroyed === false && result.message).toMatch(/no sandbox is recorded for key sbx:-:destroy-unknown:memory:[0-9a-f]{32} in this definition's in-memory instance store; nothing was destroyed\. If it was ensured with another store .*defineSandbox\(\{ instances \}\)/)
  })

  it('says so when the runs of this process used another store', async () => {
    const sandbox = defineSandbox({ id: 'destroy-elsewhere', provider: memoryProvider() })
    const elsewhere = new InMemorySandboxInstanceStore()
    await sandbox.ensure({ ...run, instances: elsewhere })
    const result = await sandbox.destroy({ key: sandbox.key(run) })
    expect(result.destroyed === false && result.message).toMatch(/as runs of this process were/)
    expect(await sandbox.destroy({ key: sandbox.key(run), instances: elsewhere })).toMatchObject({ destroyed: true })
  })

  it('a second destroy of one key reports unknown-key (safe to repeat)', async () => {
    const sandbox = defineSandbox({ id: 'destroy-twice', provider: memoryProvider() })
    await sandbox.ensure(run)
    const key = sandbox.key(run)
    expect((await sandbox.destroy({ key })).destroyed).toBe(true)
    expect(await sandbox.destroy({ key })).toMatchObject({ destroyed: false, reason: 'unknown-key' })
  })
})

describe('defineSandbox({ instances })', () => {
  it('is the store in use: sandbox.instances shows it, ensure records there, and destroy({ key }) from another process finds it', async () => {
    const provider = memoryProvider()
    const durable = new InMemorySandboxInstanceStore() // stands for a database both processes reach
    const processA: SandboxDefinition = defineSandbox({ id: 'bound', provider, instances: durable })
    const processB: SandboxDefinition = defineSandbox({ id: 'bound', provider, instances: durable })
    expect(processA.instances).toBe(durable)
    expect(processA.fallbackInstances, 'the earlier name is the same store').toBe(durable)
    const handle = await processA.ensure(run)
    expect((await durable.get(processA.key(run)))?.providerSandboxId).toBe(handle.id)
    expect(await processB.destroy({ key: processB.key(run) })).toEqual({ destroyed: true, providerSandboxId: handle.id })
    expect(await durable.get(processA.key(run))).toBeNull()
  })

  it('refuses a value that is not a store, naming the field', () => {
    expect(() => defineSandbox({ id: 'bad-store', provider: memoryProvider(), instances: { get: () => null } as never })).toThrow(expect.objectContaining({ field: 'defineSandbox.instances' }))
  })

  it('without it, sandbox.instances is an in-memory store', () => {
    expect(defineSandbox({ id: 'default-store', provider: memoryProvider() }).instances).toBeInstanceOf(InMemorySandboxInstanceStore)
  })
})
