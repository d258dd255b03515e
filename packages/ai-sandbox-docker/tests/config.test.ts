// The pure half of the provider: config defaults and validation, the
// container-create body (init, keep-alive, labels that callers cannot
// override, network, limits, mounts, published ports), the fingerprint and
// the capability flags per network, and the hardened defaults (issue 16):
// uid 1000, every capability dropped, no-new-privileges, limits, the managed
// network, each loosened only explicitly. No engine needed.
import { describe, expect, it } from 'vitest'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { DEFAULT_RESOURCES, DOCKER_ENGINE_DEFAULT_CAPABILITIES, LINUX_CAPABILITIES, SANDBOX_NETWORK, resolveConfig, fingerprintOf } from '../src/config.js'
import { containerCreateOptions } from '../src/container-spec.js'
import { dockerCapabilities } from '../src/capabilities.js'
import { LABEL } from '../src/labels.js'

const request = { image: 'img:1', workspaceDir: '/workspace', key: 'sbx:k', labels: { app: 'x', [LABEL.sandbox]: 'spoofed' }, env: { B: '2' } }

describe('resolveConfig', () => {
  it('fills in the defaults, hardened', () => {
    expect(resolveConfig({ image: 'img:1' })).toMatchObject({
      image: 'img:1',
      user: '1000:1000',
      network: 'tanstack-sandbox',
      resources: { memory: 2 * 1024 ** 3, cpus: 2, pids: 1024 },
      capAdd: [],
      noNewPrivileges: true,
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

describe('loosening the hardened defaults', () => {
  it('takes null as "no limit" per resource and keeps the other defaults', () => {
    expect(resolveConfig({ image: 'i', resources: { memory: null } }).resources).toEqual({ memory: undefined, cpus: DEFAULT_RESOURCES.cpus, pids: DEFAULT_RESOURCES.pids })
    expect(resolveConfig({ image: 'i', resources: { memory: null, cpus: null, pids: null } }).resources).toEqual({ memory: undefined, cpus: undefined, pids: undefined })
    expect(resolveConfig({ image: 'i', resources: { pids: 4096 } }).resources).toEqual({ ...DEFAULT_RESOURCES, pids: 4096 })
  })

  it("takes user null as the image's user and 'root' as root", () => {
    expect(resolveConfig({ image: 'i', user: null }).user).toBeUndefined()
    expect(resolveConfig({ image: 'i', user: 'root' }).user).toBe('root')
  })

  it('canonicalises capAdd (CAP_ prefix, duplicates, order) and knows the engine defaults', () => {
    expect(resolveConfig({ image: 'i', capAdd: ['CAP_NET_BIND_SERVICE', 'CHOWN', 'NET_BIND_SERVICE'] }).capAdd).toEqual(['CHOWN', 'NET_BIND_SERVICE'])
    expect(resolveConfig({ image: 'i', capAdd: ['net_raw', 'cap_chown'] }).capAdd, 'lower case, as Docker accepts it').toEqual(['CHOWN', 'NET_RAW'])
    expect(DOCKER_ENGINE_DEFAULT_CAPABILITIES).toHaveLength(14)
    expect(DOCKER_ENGINE_DEFAULT_CAPABILITIES).toContain('NET_RAW')
    for (const name of DOCKER_ENGINE_DEFAULT_CAPABILITIES) expect(LINUX_CAPABILITIES).toContain(name)
    expect(LINUX_CAPABILITIES).toHaveLength(41) // CAP_CHOWN (0) to CAP_CHECKPOINT_RESTORE (40)
  })

  it.each([
    [{ image: 'i', capAdd: ['FOO_BAR'] }, 'dockerSandbox.capAdd.0', /unknown capability 'FOO_BAR'.*capabilities\(7\)/],
    [{ image: 'i', capAdd: ['NET_BIND_SERVICE', 'ALL'] }, 'dockerSandbox.capAdd.1', /'ALL' is not accepted/],
    [{ image: 'i', capAdd: ['CAP_SYS_EVERYTHING'] }, 'dockerSandbox.capAdd.0', /unknown capability 'SYS_EVERYTHING'.*NET_BIND_SERVICE/],
    [{ image: 'i', workspaceDir: '/usr/bin' }, 'dockerSandbox.workspaceDir', /system directory.*'\/workspace'/],
    [{ image: 'i', workspaceDir: '/etc' }, 'dockerSandbox.workspaceDir', /system directory/],
    [{ image: 'i', noNewPrivileges: 'no' }, 'dockerSandbox.noNewPrivileges', /true \(the default\) or false/],
    [{ image: 'i', resources: { cpus: 0 } }, 'dockerSandbox.resources.cpus', /at least 0.01 CPUs/],
    [{ image: 'i', resources: { pids: 0 } }, 'dockerSandbox.resources.pids', /at least 1 process/],
    [{ image: 'i', user: 'a b' }, 'dockerSandbox.user', /null for the image's user/],
    // Unknown keys say where the option lives (issue 30): a nested key, or a near spelling.
    [{ image: 'i', memory: '1g' }, 'dockerSandbox.memory', /Did you mean dockerSandbox\.resources\.memory\?/],
    [{ image: 'i', imgae: 'i' }, 'dockerSandbox.imgae', /Did you mean dockerSandbox\.image\?/],
    [{ image: 'i', resources: { memroy: 1 } }, 'dockerSandbox.resources.memroy', /Did you mean dockerSandbox\.resources\.memory\?/],
    [{ image: 'i', mounts: [{ source: '/a', target: '/b', readonly: true }] }, 'dockerSandbox.mounts.0.readonly', /Did you mean dockerSandbox\.mounts\.0\.readOnly\?/],
  ])('refuses %j naming %s', (config, field, message) => {
    let error: unknown
    try {
      resolveConfig(config as never)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect((error as SandboxConfigError).message).toContain(field)
    expect((error as SandboxConfigError).message).toMatch(message)
  })
})

describe('containerCreateOptions', () => {
  it('hardens by default: uid 1000, no capabilities, no-new-privileges, limits without extra swap, the managed network', () => {
    const options = containerCreateOptions(resolveConfig({ image: 'img:1' }), request, 1234, 'net-id-1')
    expect(options.User).toBe('1000:1000')
    expect(options.HostConfig).toMatchObject({
      NetworkMode: 'net-id-1',
      ExtraHosts: ['host.docker.internal:host-gateway'],
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Memory: 2 * 1024 ** 3,
      MemorySwap: 2 * 1024 ** 3,
      CpuPeriod: 100_000,
      CpuQuota: 200_000,
      PidsLimit: 1024,
    })
    expect(options.HostConfig?.CapAdd).toBeUndefined()
    expect(options.HostConfig?.Privileged).toBeUndefined()
    expect(options.Labels).toMatchObject({ [LABEL.user]: '1000:1000', [LABEL.network]: SANDBOX_NETWORK })
  })

  it('loosens each default only when asked', () => {
    const options = containerCreateOptions(
      resolveConfig({ image: 'i', user: null, network: 'bridge', capAdd: ['NET_BIND_SERVICE'], noNewPrivileges: false, resources: { memory: null, cpus: null, pids: null } }),
      request,
    )
    expect(options.User).toBeUndefined()
    expect(options.HostConfig).toMatchObject({ NetworkMode: 'bridge', CapDrop: ['ALL'], CapAdd: ['NET_BIND_SERVICE'] })
    for (const key of ['SecurityOpt', 'Memory', 'MemorySwap', 'CpuQuota', 'NanoCpus', 'PidsLimit'] as const) expect(options.HostConfig?.[key], key).toBeUndefined()
    expect(options.Labels).toMatchObject({ [LABEL.user]: '', [LABEL.network]: 'bridge' })
  })

  it('runs an init process with a BusyBox-safe keep-alive in the workspace, with the provider labels winning', () => {
    const options = containerCreateOptions(resolveConfig({ image: 'img:1', network: 'bridge', env: { A: '1', B: '1' }, labels: { team: 't' } }), request, 1234)
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
      CpuQuota: 150_000,
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
    expect(fingerprintOf(resolveConfig({ image: 'i', user: '1000:1000' })), 'the default user spelled out').toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'i', user: null }))).not.toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'i', capAdd: ['NET_RAW'] }))).not.toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'i', noNewPrivileges: false }))).not.toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'i', network: 'bridge' }))).not.toBe(base)
    expect(fingerprintOf(resolveConfig({ image: 'i', resources: { memory: null } }))).not.toBe(base)
  })

  it("turns ports off only for network 'none'", () => {
    expect(dockerCapabilities('bridge').ports).toBe(true)
    expect(dockerCapabilities(SANDBOX_NETWORK).ports).toBe(true)
    expect(dockerCapabilities('host').ports).toBe(true)
    expect(dockerCapabilities('none')).toMatchObject({ ports: false, networkPolicy: true, snapshots: true, fork: true, killableProcesses: true })
  })
})
