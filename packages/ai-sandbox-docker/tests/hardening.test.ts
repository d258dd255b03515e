// Issue 16, the Docker defaults: each attack from the report is run twice,
// against a provider loosened back to the old behaviour (root, Docker's 14
// capabilities, no no-new-privileges, no limits, the default bridge), where it
// succeeds, and against the defaults, where it fails. The counts are the
// figures of the issue. Then what must keep working: the host reached from a
// sandbox (the tool bridge and model endpoint path), published ports, a
// writable workspace and HOME for the non-root user, and the managed network
// created once under concurrent creates.
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import Docker from 'dockerode'
import { expect, it } from 'vitest'
import type { SandboxHandle } from '@tanstack/ai-sandbox'
import { DEFAULT_RESOURCES, DOCKER_ENGINE_DEFAULT_CAPABILITIES, dockerHostAccess, SANDBOX_NETWORK } from '../src/index.js'
import type { DockerSandboxConfig } from '../src/index.js'
import { ICC_OPTION, ensureSandboxNetwork } from '../src/network.js'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { rejectionOf, useDockerSandboxes } from './helpers/sandboxes.js'

/** The old defaults, spelled out: what every sandbox was before issue 16. */
const LOOSENED: Omit<DockerSandboxConfig, 'image'> = {
  user: null,
  network: 'bridge',
  capAdd: [...DOCKER_ENGINE_DEFAULT_CAPABILITIES],
  noNewPrivileges: false,
  resources: { memory: null, cpus: null, pids: null },
}

const ATTEMPTS = 3

/** One line of `/proc/self/status` (e.g. `CapEff`), as the sandbox user sees it. */
async function status(handle: SandboxHandle, field: string): Promise<string> {
  const { stdout } = await handle.process.exec(`grep '^${field}:' /proc/self/status`)
  return stdout.split(':')[1]!.trim()
}

/** Run `cmd` as uid 0 through the engine (as an attacker who got root in the container would); its exit code. */
async function asRoot(docker: Docker, id: string, cmd: string): Promise<number> {
  const exec = await docker.getContainer(id).exec({ Cmd: ['/bin/sh', '-c', cmd], User: '0', AttachStdout: true, AttachStderr: true })
  const stream = await exec.start({})
  stream.resume()
  await new Promise((resolve) => stream.on('end', resolve))
  return (await exec.inspect()).ExitCode ?? -1
}

describeWithDocker('docker hardening defaults (issue 16)', await dockerMissing([DEBIAN_IMAGE, BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const sandboxes = useDockerSandboxes('hardening')

  /** How many of ATTEMPTS connections from `client` to a listener in `server` get its answer. */
  async function crossSandboxConnections(config: Omit<DockerSandboxConfig, 'image'>): Promise<number> {
    const server = await sandboxes.create({ image: BUSYBOX_IMAGE, ...config })
    const client = await sandboxes.create({ image: BUSYBOX_IMAGE, ...config })
    const listener = await server.process.spawn('mkdir -p /tmp/www && echo pong > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www')
    try {
      // The host reaches the listener at the container's address (ports.connect): the service is up before B tries.
      const { hostname } = await server.ports.connect(8080)
      let fromHost = ''
      for (let attempt = 0; attempt < 50 && fromHost !== 'pong'; attempt++) {
        fromHost = await fetch(`http://${hostname}:8080/index.html`).then((response) => response.text().then((text) => text.trim()), () => '')
        if (fromHost !== 'pong') await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(fromHost, 'the host reaches the service').toBe('pong')
      let reached = 0
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const { stdout } = await client.process.exec(`printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | timeout 2 nc -w 1 ${hostname} 8080 || true`)
        if (stdout.includes('pong')) reached++
      }
      return reached
    } finally {
      await listener.kill()
    }
  }

  it(`sandbox B cannot connect to a service in sandbox A on the default network (the old default bridge: ${ATTEMPTS} of ${ATTEMPTS})`, async () => {
    expect(await crossSandboxConnections(LOOSENED), 'default bridge: every connection gets through').toBe(ATTEMPTS)
    expect(await crossSandboxConnections({}), `the ${SANDBOX_NETWORK} network: none does`).toBe(0)
  }, 60_000)

  it('drops every capability: NET_RAW is gone even for root, so no raw (ARP) socket can be opened', async () => {
    const arping = 'gw=$(ip route | awk \'/^default/ {print $3}\'); arping -c 1 -w 1 -I eth0 "$gw" 2>&1; echo "exit $?"'
    const old = await sandboxes.create({ image: BUSYBOX_IMAGE, ...LOOSENED })
    expect(await status(old, 'CapEff'), 'the old default: Docker’s 14 capabilities').toBe('00000000a80425fb')
    expect((await old.process.exec(arping)).stdout, 'the old default opens a raw socket').not.toMatch(/Operation not permitted/)

    const hardened = await sandboxes.create({ image: BUSYBOX_IMAGE })
    expect(await status(hardened, 'CapEff')).toBe('0000000000000000')
    expect(await status(hardened, 'CapBnd'), 'not even a setuid binary can gain one').toBe('0000000000000000')
    const root = await sandboxes.create({ image: BUSYBOX_IMAGE, user: 'root' })
    expect((await root.process.exec('id -u')).stdout.trim()).toBe('0')
    expect(await status(root, 'CapEff'), 'root holds none either').toBe('0000000000000000')
    expect((await root.process.exec(arping)).stdout).toMatch(/Operation not permitted/)

    const added = await sandboxes.create({ image: BUSYBOX_IMAGE, user: 'root', capAdd: ['NET_BIND_SERVICE'] })
    expect(await status(added, 'CapEff'), 'capAdd gives back exactly what it names (bit 10)').toBe('0000000000000400')
  }, 60_000)

  it('sets no-new-privileges: a setuid-root binary no longer makes the sandbox user root', async () => {
    // Root (as an attacker who got it) plants a setuid copy of id; root owns /usr/local/bin, so no capability is needed.
    const plant = 'cp /usr/bin/id /usr/local/bin/id-suid && chmod 4755 /usr/local/bin/id-suid'
    const escalations = async (config: Omit<DockerSandboxConfig, 'image'>): Promise<number> => {
      const handle = await sandboxes.create({ image: DEBIAN_IMAGE, ...config })
      expect(await asRoot(sandboxes.docker, handle.id, plant)).toBe(0)
      expect((await handle.process.exec('id -u')).stdout.trim()).toBe('1000')
      return (await handle.process.exec('/usr/local/bin/id-suid -u')).stdout.trim() === '0' ? 1 : 0
    }
    expect(await escalations({ noNewPrivileges: false }), 'without no-new-privileges the setuid bit works').toBe(1)
    expect(await escalations({}), 'with it, it does not').toBe(0)

    const hardened = await sandboxes.create({ image: BUSYBOX_IMAGE })
    expect(await status(hardened, 'NoNewPrivs')).toBe('1')
    const root = await sandboxes.create({ image: BUSYBOX_IMAGE, user: 'root', network: 'none' })
    expect(await status(root, 'NoNewPrivs'), 'also for root on network none').toBe('1')
    const old = await sandboxes.create({ image: BUSYBOX_IMAGE, ...LOOSENED })
    expect(await status(old, 'NoNewPrivs')).toBe('0')
  }, 60_000)

  it('limits memory (no extra swap), CPU and processes by default', async () => {
    const old = await sandboxes.create({ image: BUSYBOX_IMAGE, ...LOOSENED })
    expect((await sandboxes.docker.getContainer(old.id).inspect()).HostConfig).toMatchObject({ Memory: 0, CpuQuota: 0, NanoCpus: 0 })

    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    const info = await sandboxes.docker.getContainer(handle.id).inspect()
    expect(info.HostConfig).toMatchObject({
      Memory: DEFAULT_RESOURCES.memory,
      MemorySwap: DEFAULT_RESOURCES.memory,
      CpuPeriod: 100_000,
      CpuQuota: DEFAULT_RESOURCES.cpus * 100_000,
      PidsLimit: DEFAULT_RESOURCES.pids,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      ReadonlyRootfs: false,
    })
    const cgroup = await handle.process.exec('cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max')
    expect(cgroup.stdout.split('\n').slice(0, 2)).toEqual([String(DEFAULT_RESOURCES.memory), String(DEFAULT_RESOURCES.pids)])
  })

  it('stops a fork bomb at the default pids limit (without one, every process starts)', async () => {
    const tries = DEFAULT_RESOURCES.pids + 200
    const live = async (config: Omit<DockerSandboxConfig, 'image'>): Promise<number> => {
      const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, ...config })
      // The bomb runs in a child shell (ash exits when a fork fails); `read` and `echo` are builtins, so they still work at the limit.
      const bomb = await handle.process.exec(
        `sh -c 'i=0; while [ $i -lt ${tries} ]; do sleep 60 >/dev/null 2>&1 & i=$((i+1)); done' 2>/dev/null; read n < /sys/fs/cgroup/pids/pids.current 2>/dev/null || read n < /sys/fs/cgroup/pids.current; echo "live $n"`,
      )
      await handle.destroy()
      return Number(/live (\d+)/.exec(bomb.stdout)?.[1])
    }
    expect(await live(LOOSENED), `no limit: all ${tries} sleeps start`).toBeGreaterThan(tries)
    const limited = await live({})
    expect(limited, `at most ${DEFAULT_RESOURCES.pids} of ${tries} processes live`).toBeLessThanOrEqual(DEFAULT_RESOURCES.pids)
    expect(limited).toBeGreaterThan(DEFAULT_RESOURCES.pids / 2)
  }, 60_000)

  it('kills a process that allocates past an explicit memory limit', async () => {
    const handle = await sandboxes.create({ image: DEBIAN_IMAGE, resources: { memory: '64m' } })
    const result = await handle.process.exec("node -e 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))'")
    expect(result.exitCode).toBe(137) // SIGKILL from the OOM killer
    expect((await handle.process.exec('echo alive')).stdout).toBe('alive\n')
  }, 60_000)

  it.each([
    ['Debian', DEBIAN_IMAGE],
    ['BusyBox', BUSYBOX_IMAGE],
  ])('runs as uid 1000 with a workspace and HOME it owns, and /tmp writable (%s)', async (_name, image) => {
    const handle = await sandboxes.create({ image })
    const { stdout } = await handle.process.exec('id -u; id -g; id -un; echo "$HOME"; stat -c %u:%g /workspace "$HOME"; touch /workspace/w "$HOME/h" /tmp/t && echo writable')
    expect(stdout.split('\n')).toEqual(['1000', '1000', 'sandbox', '/home/sandbox', '1000:1000', '1000:1000', 'writable', ''])
    await handle.fs.mkdir('notes')
    await handle.fs.write('notes/a.txt', 'hi')
    expect(await handle.fs.read('notes/a.txt')).toBe('hi')
    expect((await handle.process.exec('cat /.tanstack-sandbox/env 2>&1; ls /.tanstack-sandbox 2>&1')).stdout, 'the provider state stays root-only').toMatch(/Permission denied/)
    // A fork keeps the owner (a commit keeps files and /etc/passwd).
    const fork = sandboxes.track(await handle.fork!())
    expect((await fork.process.exec('id -un; stat -c %u /workspace/notes/a.txt')).stdout).toBe('sandbox\n1000\n')
  }, 60_000)

  it("keeps root and the image's user possible explicitly", async () => {
    const root = await sandboxes.create({ image: BUSYBOX_IMAGE, user: 'root' })
    expect((await root.process.exec('id -u; stat -c %u /workspace')).stdout).toBe('0\n0\n')
    const image = await sandboxes.create({ image: BUSYBOX_IMAGE, user: null })
    expect((await image.process.exec('id -u')).stdout).toBe('0\n')
    const other = await sandboxes.create({ image: DEBIAN_IMAGE, user: '4242:4343', workspaceDir: '/srv/project' })
    expect((await other.process.exec('id -u; id -g; echo "$HOME"; stat -c %u:%g /srv/project "$HOME"')).stdout).toBe('4242\n4343\n/home/sandbox\n4242:4343\n4242:4343\n')
  }, 60_000)

  it('says before any sandbox exists where a host server must listen for one: dockerHostAccess matches handle.hostAccess (issue 30)', async () => {
    const before = await dockerHostAccess({ docker: sandboxes.docker })
    expect(before).toMatchObject({ hostname: 'host.docker.internal', listenAddress: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/) })
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    expect(await handle.hostAccess!()).toEqual(before)
    const bridged = await sandboxes.create({ image: BUSYBOX_IMAGE, network: 'bridge' })
    expect(await bridged.hostAccess!()).toEqual(await dockerHostAccess({ docker: sandboxes.docker, network: 'bridge' }))
    expect(await dockerHostAccess({ docker: sandboxes.docker, network: 'none' })).toBeUndefined()
    expect(await dockerHostAccess({ docker: sandboxes.docker, network: 'host' })).toEqual({ hostname: '127.0.0.1', listenAddress: '127.0.0.1' })
    const missing = await rejectionOf(dockerHostAccess({ docker: sandboxes.docker, network: `tanstack-no-such-${randomUUID().slice(0, 8)}` }))
    expect(missing).toMatchObject({ reason: 'not-found', message: expect.stringMatching(/does not exist.*docker network create/) })
    await expect(dockerHostAccess({ netwrok: 'bridge' } as never)).rejects.toThrow(/Did you mean dockerHostAccess\.network\?/)
  }, 60_000)

  it('still reaches the host from the default network (tool bridge, model endpoint) and publishes ports', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, publishPorts: [8080] })
    const access = (await handle.hostAccess!())!
    expect(access.hostname).toBe('host.docker.internal')
    // A tiny HTTP server on the host, listening only on the address the sandbox reaches the host at.
    const server = createServer((_request, response) => response.end('from the host'))
    await new Promise<void>((resolve) => server.listen(0, access.listenAddress, resolve))
    try {
      const port = (server.address() as AddressInfo).port
      const { stdout } = await handle.process.exec(`printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 5 nc ${access.hostname} ${port}`)
      expect(stdout).toMatch(/200 OK[\s\S]*from the host/)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    const listener = await handle.process.spawn('echo published > /tmp/index.html && httpd -f -p 8080 -h /tmp')
    try {
      const connection = await handle.ports.connect(8080)
      expect(connection.hostname).toBe('127.0.0.1')
      let text = ''
      for (let attempt = 0; attempt < 50 && text === ''; attempt++) {
        text = await fetch(`${connection.url}/index.html`).then((response) => response.text(), () => '')
        if (text === '') await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(text).toBe('published\n')
    } finally {
      await listener.kill()
    }
  }, 60_000)

  it('creates the managed network once under concurrent creates, with inter-container communication off', async () => {
    const name = `tanstack-sandbox-test-${randomUUID().slice(0, 8)}`
    try {
      // Separate clients, as separate processes would be.
      const ids = await Promise.all(Array.from({ length: 6 }, () => ensureSandboxNetwork(new Docker(), name, 'test')))
      expect(new Set(ids).size).toBe(1)
      const named = (await sandboxes.docker.listNetworks({ filters: { name: [name] } })).filter((network) => network.Name === name)
      expect(named.map((network) => network.Id)).toEqual([ids[0]])
      expect(named[0]!.Options?.[ICC_OPTION]).toBe('false')
      expect(await ensureSandboxNetwork(sandboxes.docker, name, 'test'), 'idempotent').toBe(ids[0])
    } finally {
      for (const network of await sandboxes.docker.listNetworks({ filters: { name: [name] } })) await sandboxes.docker.getNetwork(network.Id).remove()
    }
  })

  it('refuses a network of that name that lets containers talk to each other', async () => {
    const name = `tanstack-sandbox-test-${randomUUID().slice(0, 8)}`
    const network = await sandboxes.docker.createNetwork({ Name: name, Driver: 'bridge' })
    try {
      const error = await rejectionOf(ensureSandboxNetwork(sandboxes.docker, name, 'test'))
      expect(error.reason).toBe('create-failed')
      expect(error.message).toContain(`${ICC_OPTION}=false`)
      expect(error.message).toContain(`docker network rm ${name}`)
    } finally {
      await network.remove()
    }
  })
})
