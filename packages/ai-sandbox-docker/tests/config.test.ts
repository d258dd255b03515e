// The pure half of the provider: config defaults and validation, the
// container-create body (init, keep-alive, labels that callers cannot
// override, network, limits, mounts, published ports), the fingerprint and
// the capability flags per network. No engine needed.
import { describe, expect, it } from 'vitest'
import { resolveConfig, fingerprintOf } from '../src/config.js'
import { containerCreateOptions } from '../src/container-spec.js'
import { dockerCapabilities } from '../src/capabilities.js'
import { LABEL } from '../src/labels.js'

const request = { image: 'img:1', workspaceDir: '/workspace', key: 'sbx:k', labels: { app: 'x', [LABEL.sandbox]: 'spoofed' }, env: { B: '2' } }

describe('resolveConfig', () => {
  it('fills in the defaults', () => {
    expect(resolveConfig({ image: 'img:1' })).toMatchObject({
      image: 'img:1',
      user: undefined,
      network: 'bridge',
      workspaceDir: '/workspace',
      killGraceMs: 2000,
      maxExecOutputBytes: 64 * 1024 * 1024,
      mounts: [],
    })
  })

  it('parses memory sizes with units and normalises the workspace path', () => {
    expect(resolveConfig({ image: 'i', resources: { memory: '512m' } }).resources.memory).toBe(512 * 1024 * 1024)
    expect(resolveConfig({ image: 'i', resources: { memory: '1.5g' } }).resources.memory).toBe(1.5 * 1024 ** 3)
    expect(resolveConfig({ image: 'i', resources: { memory: 8_000_000 } }).resources.memory).toBe(8_000_000)
    expect(resolveConfig({ image: 'i', workspaceDir: '/home//me/project/' }).workspaceDir).toBe('/home/me/project')
  })
})

describe('containerCreateOptions', () => {
  it('runs an init process with a BusyBox-safe keep-alive in the workspace, with the provider labels winning', () => {
    const options = containerCreateOptions(resolveConfig({ image: 'img:1', env: { A: '1', B: '1' }, labels: { team: 't' } }), request, 1234)
    expect(options).toMatchObject({ Image: 'img:1', Entrypoint: ['tail'], Cmd: ['-f', '/dev/null'], WorkingDir: '/workspace', Env: ['A=1', 'B=2'] })
    expect(options.HostConfig).toMatchObject({ Init: true, NetworkMode: 'bridge', ExtraHosts: ['host.docker.internal:host-gateway'] })
    expect(options.Labels).toMatchObject({ team: 't', app: 'x', [LABEL.sandbox]: '1', [LABEL.key]: 'sbx:k', [LABEL.createdAt]: '1234', [LABEL.workspace]: '/workspace', [LABEL.image]: 'img:1' })
    expect(options.name).toMatch(/^tanstack-sandbox-[0-9a-f-]{12}$/)
  })

  it("maps network 'none', limits, mounts, a user and published ports", () => {
    const config = resolveConfig({
      image: 'i',
      network: 'none',
      user: '1000:1000',
      resources: { memory: '64m', cpus: 1.5, pids: 100 },
      mounts: [{ source: '/opt/claude', target: '/usr/local/bin/claude', readOnly: true }],
      publishPorts: [3000],
      extraHosts: ['db:10.0.0.5'],
    })
    const options = containerCreateOptions(config, request)
    expect(options.User).toBe('1000:1000')
    expect(options.HostConfig).toMatchObject({
      NetworkMode: 'none',
      Memory: 64 * 1024 * 1024,
      NanoCpus: 1_500_000_000,
      PidsLimit: 100,
      Mounts: [{ Type: 'bind', Source: '/opt/claude', Target: '/usr/local/bin/claude', ReadOnly: true }],
      PortBindings: { '3000/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
    })
    expect(options.HostConfig?.ExtraHosts, 'no host-gateway entry without a network').toBeUndefined()
    expect(options.ExposedPorts).toEqual({ '3000/tcp': {} })
  })
})

describe('fingerprint and capabilities', () => {
  it('changes with what shapes a sandbox and not with tuning knobs', () => {
    const base = fingerprintOf(resolveConfig({ image: 'i' }))
    expect(fingerprintOf(resolveConfig({ image: 'i', killGraceMs: 10 }))).toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'j' }))).not.toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'i', user: '1000' }))).not.toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'i', resources: { pids: 5 } }))).not.toBe(base)
  })

  it("turns ports off only for network 'none'", () => {
    expect(dockerCapabilities('bridge').ports).toBe(true)
    expect(dockerCapabilities('host').ports).toBe(true)
    expect(dockerCapabilities('none')).toMatchObject({ ports: false, networkPolicy: true, snapshots: true, fork: true, killableProcesses: true })
  })
})
