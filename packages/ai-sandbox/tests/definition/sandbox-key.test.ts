import { describe, expect, it } from 'vitest'
import { computeSandboxKey, createSecrets, defineWorkspace, parseDuration, SandboxConfigError } from '../../src/index.js'

const base = { definitionId: 'agent', provider: 'local-process', workspaceHash: 'abc', threadId: 't1', runId: 'r1' }

describe('computeSandboxKey', () => {
  it('is stable and readable', () => {
    expect(computeSandboxKey(base)).toBe(computeSandboxKey({ ...base }))
    expect(computeSandboxKey(base)).toMatch(/^sbx:-:agent:local-process:[0-9a-f]{32}$/)
  })

  it('ignores the run with reuse thread and includes it with reuse none', () => {
    expect(computeSandboxKey(base)).toBe(computeSandboxKey({ ...base, runId: 'r2' }))
    expect(computeSandboxKey({ ...base, reuse: 'none' })).not.toBe(computeSandboxKey({ ...base, reuse: 'none', runId: 'r2' }))
  })

  it('changes with every component', () => {
    const key = computeSandboxKey(base)
    for (const change of [{ threadId: 't2' }, { definitionId: 'other' }, { provider: 'docker' }, { workspaceHash: 'def' }, { tenant: 'acme' }, { providerFingerprint: 'img2' }]) {
      expect(computeSandboxKey({ ...base, ...change })).not.toBe(key)
    }
  })

  it('never gives a tenant named "-" the key of no tenant', () => {
    expect(computeSandboxKey({ ...base, tenant: '-' })).not.toBe(computeSandboxKey(base))
    expect(computeSandboxKey({ ...base, tenant: '-' })).toMatch(/^sbx:%2D:agent:/)
  })

  it('refuses a missing or mistyped input with a SandboxConfigError naming the field', () => {
    const bad = (input: unknown) => () => computeSandboxKey(input as Parameters<typeof computeSandboxKey>[0])
    expect(bad({})).toThrow(SandboxConfigError)
    expect(bad({ ...base, definitionId: undefined })).toThrow(/computeSandboxKey\.definitionId/)
    expect(bad({ ...base, tenant: 42 })).toThrow(/computeSandboxKey\.tenant/)
    expect(bad({ ...base, reuse: 'always' })).toThrow(/computeSandboxKey\.reuse/)
  })

  it('escapes colons so components cannot collide', () => {
    expect(computeSandboxKey({ ...base, tenant: 'a:b' })).not.toBe(computeSandboxKey({ ...base, tenant: 'a', definitionId: 'b:agent' }))
  })
})

describe('workspace hash', () => {
  it('depends on secret names, not values', () => {
    const a = defineWorkspace({ secrets: createSecrets({ K: 'one' }) })
    const b = defineWorkspace({ secrets: createSecrets({ K: 'two' }) })
    const c = defineWorkspace({ secrets: createSecrets({ L: 'one' }) })
    expect(a.hash).toBe(b.hash)
    expect(a.hash).not.toBe(c.hash)
    expect(defineWorkspace({ setup: ['a'] }).hash).not.toBe(defineWorkspace({ setup: ['b'] }).hash)
  })
})

describe('parseDuration', () => {
  it('parses units and numbers', () => {
    expect(parseDuration('30m')).toBe(1_800_000)
    expect(parseDuration('24h')).toBe(86_400_000)
    expect(parseDuration('500ms')).toBe(500)
    expect(parseDuration(42)).toBe(42)
    expect(parseDuration('soon')).toBeUndefined()
  })
})
