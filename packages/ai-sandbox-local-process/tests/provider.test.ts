// The local-process provider's lifecycle: config validation, capabilities,
// on-disk layout, resume from a new provider instance, env persistence,
// destroy (processes and directory), ports, git over exec and watch.
import { existsSync, readFileSync } from 'node:fs'
import { readFile, readdir, realpath, rm, stat } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError, UnsupportedCapabilityError, forkSandbox, restoreSandboxSnapshot, snapshotSandbox } from '@tanstack/ai-sandbox'
import type { SandboxWatchEvent } from '@tanstack/ai-sandbox'
import { LOCAL_PROCESS_CAPABILITIES, localProcessSandbox } from '../src/index.js'
import { liveGroupMembers, rejectionOf, useTempRoot, waitFor } from './helpers/temp-root.js'

const temp = useTempRoot()

describe('localProcessSandbox config', () => {
  it.each([
    [{ killGraceMs: -1 }, 'localProcessSandbox.killGraceMs'],
    [{ killGraceMs: 1.5 }, 'localProcessSandbox.killGraceMs'],
    [{ root: '' }, 'localProcessSandbox.root'],
    [{ rooot: '/tmp' }, 'localProcessSandbox.rooot'],
  ])('refuses %j naming the field', (config, field) => {
    let error: unknown
    try {
      localProcessSandbox(config as never)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect((error as SandboxConfigError).field).toBe(field)
    expect((error as SandboxConfigError).message).toContain(field)
  })

  it('defaults the root to <tmpdir>/tanstack-ai-sandbox-<uid>, one per user of the machine', async () => {
    const defaultRoot = join(tmpdir(), `tanstack-ai-sandbox-${process.getuid!()}`)
    const existedBefore = existsSync(defaultRoot)
    const handle = await localProcessSandbox().create()
    try {
      expect(handle.workspaceRoot).toBe(join(await realpath(defaultRoot), handle.id, 'workspace'))
    } finally {
      await handle.destroy()
      if (!existedBefore && (await readdir(defaultRoot)).length === 0) await rm(defaultRoot, { recursive: true })
    }
  })
})

describe('provider', () => {
  it('advertises its capabilities; snapshot/fork/restoreSnapshot throw UnsupportedCapabilityError', async () => {
    const provider = temp.provider()
    expect(provider.name).toBe('local-process')
    expect(provider.capabilities()).toEqual({
      fs: true,
      exec: true,
      env: true,
      ports: true,
      backgroundProcesses: true,
      writableStdin: true,
      killableProcesses: true,
      snapshots: false,
      networkPolicy: false,
      durableFilesystem: true,
      fork: false,
      isolated: false,
    })
    expect(provider.capabilities()).toBe(LOCAL_PROCESS_CAPABILITIES)
    const handle = await temp.create()
    // Called directly (no TypeError) and through core's helpers alike.
    for (const [call, capability, method] of [
      [() => handle.snapshot!(), 'snapshots', 'snapshot'],
      [() => handle.fork!(), 'fork', 'fork'],
      [() => provider.restoreSnapshot!({ snapshotId: 'none' }), 'snapshots', 'restoreSnapshot'],
      [() => snapshotSandbox(handle), 'snapshots', 'snapshot'],
      [() => forkSandbox(handle), 'fork', 'fork'],
      [() => restoreSandboxSnapshot(provider, { snapshotId: 'none' }), 'snapshots', 'restoreSnapshot'],
    ] as const) {
      const error = await rejectionOf(call())
      expect(error).toBeInstanceOf(UnsupportedCapabilityError)
      expect(error).toMatchObject({ provider: 'local-process', capability, method, reason: 'unsupported-capability' })
      expect(error.message).toMatch(new RegExp(`does not support ${method}\\(\\) \\(capability "${capability}" is false\\)`))
      expect(error.message).toMatch(/use the Docker provider \(dockerSandbox\(\) from @tanstack\/ai-sandbox-docker\)/)
    }
  })

  it('creates <root>/<id>/workspace, empty, with metadata beside it', async () => {
    const handle = await temp.create()
    expect(handle.provider).toBe('local-process')
    expect(handle.workspaceRoot).toBe(join(temp.root, handle.id, 'workspace'))
    expect((await stat(handle.workspaceRoot)).isDirectory()).toBe(true)
    expect(await readdir(handle.workspaceRoot)).toEqual([])
    expect(await readdir(join(temp.root, handle.id))).toEqual(['sandbox.json', 'workspace'])
    const other = await temp.create()
    expect(other.id).not.toBe(handle.id)
  })

  it('resumes from a new provider instance, with files and env', async () => {
    const first = temp.provider()
    const handle = await first.create({ env: { FROM_CREATE: 'created' } })
    temp.track(handle)
    await handle.fs.write('notes.txt', 'kept')
    await handle.env.set({ FOO: 'bar' })
    await handle.env.set({ BAZ: 'qux' })

    const resumed = await temp.provider().resume({ id: handle.id })
    expect(resumed).not.toBeNull()
    expect(resumed!.id).toBe(handle.id)
    expect(resumed!.workspaceRoot).toBe(handle.workspaceRoot)
    expect(await resumed!.fs.read('notes.txt')).toBe('kept')
    expect((await resumed!.process.exec('printf "%s %s %s" "$FOO" "$BAZ" "$FROM_CREATE"')).stdout).toBe('bar qux created')
    expect(JSON.parse(await readFile(join(temp.root, handle.id, 'sandbox.json'), 'utf8')).env).toEqual({ FROM_CREATE: 'created', FOO: 'bar', BAZ: 'qux' })
    expect(await temp.provider().resume({ id: 'no-such-sandbox' })).toBeNull()
  })

  it('refuses ids that could leave the root', async () => {
    const provider = temp.provider()
    for (const id of ['../x', 'a/b', '..', '.', '', 'x\0y']) {
      const error = await rejectionOf(provider.resume({ id }))
      expect(error).toBeInstanceOf(SandboxConfigError)
      expect(error.field).toBe('resume.id')
      expect((await rejectionOf(provider.destroy({ id }))).field).toBe('destroy.id')
    }
  })

  it('destroy kills live process groups, removes the directory and is idempotent', async () => {
    const provider = temp.provider()
    const handle = await provider.create()
    const child = await handle.process.spawn('sleep 300 & sleep 300 & wait')
    const detached = await handle.process.exec('sleep 300 >/dev/null 2>&1 & echo $$')
    const pgids = [child.pid!, Number(detached.stdout.trim())]
    await waitFor(() => liveGroupMembers(pgids[0]!) >= 3 && liveGroupMembers(pgids[1]!) >= 1, 'the sleeps to start')

    await handle.destroy()
    expect(pgids.map(liveGroupMembers)).toEqual([0, 0])
    expect(existsSync(join(temp.root, handle.id))).toBe(false)
    expect((await child.wait()).signal).toBe('SIGTERM')

    await handle.destroy()
    await provider.destroy({ id: handle.id })
    expect(await provider.resume({ id: handle.id })).toBeNull()
    const error = await rejectionOf(handle.fs.read('x'))
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('destroyed')
    expect((await rejectionOf(handle.process.exec('true'))).reason).toBe('destroyed')
  })

  it('destroy also kills processes that left their group but work inside the sandbox (setsid)', async () => {
    const handle = await temp.create()
    const marker = `straggler-${process.pid}-${Date.now()}`
    await handle.process.exec(`setsid sh -c 'echo $$ > escaped.pid; exec sleep 300 # ${marker}' >/dev/null 2>&1 < /dev/null &`)
    // The shell creates the file before it writes the pid, so wait for a whole line, not for the file.
    const pidFile = join(handle.workspaceRoot, 'escaped.pid')
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 'the escaped process to start')
    const pid = Number((await readFile(pidFile, 'utf8')).trim())
    expect(pid).toBeGreaterThan(0)
    // The process is known by its pid and its start time: on a busy machine (pid_max 32768, test files side by side)
    // a pid is soon given to a new process, which a check by pid alone would take for the escaped one.
    const startOf = (stat: string): string => stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!
    const started = startOf(procStat(pid))
    const alive = () => {
      try {
        const stat = procStat(pid)
        return startOf(stat) === started && !stat.includes(') Z ')
      } catch {
        return false // gone
      }
    }
    expect(alive()).toBe(true)
    await handle.destroy()
    await waitFor(() => !alive(), `the escaped process to be killed (${existsSync(`/proc/${pid}/stat`) ? procStat(pid).trim() : 'gone'})`)
  })

  it('destroy removes a folder chain deeper than PATH_MAX and folders the agent chmod 000', async () => {
    const handle = await temp.create()
    // The way an agent can make it with short paths only: wrap the chain in a new top folder, 30 times
    // (`cd` into it fails past PATH_MAX). A locked folder sits at the bottom and the top is locked too.
    const name = 'd'.repeat(200)
    const made = await handle.process.exec(`mkdir -p c/locked && echo x > c/leaf && chmod 000 c/locked && for i in $(seq 1 30); do mkdir n && mv c n/${name} && mv n c || exit 1; done; chmod 000 c`)
    expect(made.exitCode).toBe(0)
    expect(30 * (name.length + 1)).toBeGreaterThan(5000)

    await handle.destroy()
    expect(existsSync(join(temp.root, handle.id))).toBe(false)
  })

  it('destroy through another provider instance removes the directory', async () => {
    const handle = await temp.create()
    await temp.provider().destroy({ id: handle.id })
    expect(existsSync(join(temp.root, handle.id))).toBe(false)
  })

  it('ports.connect returns a loopback URL the host can reach', async () => {
    const handle = await temp.create()
    const server = createServer((_request, response) => response.end('pong'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const connection = await handle.ports.connect(port)
      expect(connection).toEqual({ url: `http://127.0.0.1:${port}`, hostname: '127.0.0.1', port })
      expect(await (await fetch(connection.url)).text()).toBe('pong')
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    for (const bad of [0, 65536, 1.5, Number.NaN]) {
      expect(await rejectionOf(handle.ports.connect(bad))).toBeInstanceOf(SandboxConfigError)
    }
  })

  it('concurrent env.set calls all land', async () => {
    const handle = await temp.create()
    await Promise.all(Array.from({ length: 10 }, (_, i) => handle.env.set({ [`VAR_${i}`]: String(i) })))
    const resumed = await temp.provider().resume({ id: handle.id })
    expect((await resumed!.process.exec('env | grep -c "^VAR_"')).stdout.trim()).toBe('10')
  })

  it('resume returns null once the directory was removed behind its back', async () => {
    const provider = temp.provider()
    const handle = await provider.create()
    await rm(join(temp.root, handle.id), { recursive: true })
    expect(await provider.resume({ id: handle.id })).toBeNull()
    expect((await rejectionOf(handle.fs.read('x'))).reason).toBe('destroyed')
  })

  it('env.set validates its input', async () => {
    const handle = await temp.create()
    const error = await rejectionOf(handle.env.set({ GOOD: 'x', BAD: 42 as unknown as string }))
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect(error.field).toBe('env.set.BAD')
  })

  it('refuses variable names that are not shell identifiers, in env.set, exec and spawn', async () => {
    const handle = await temp.create()
    for (const name of ['A B', '$(touch X)', '1ST', 'A-B', '']) {
      const set = await rejectionOf(handle.env.set({ [name]: 'x' }))
      expect(set, `env.set({ ${JSON.stringify(name)} })`).toBeInstanceOf(SandboxConfigError)
      expect(set.field).toMatch(/^env\.set/)
      const exec = await rejectionOf(handle.process.exec('true', { env: { [name]: 'x' } }))
      expect(exec, `exec env ${JSON.stringify(name)}`).toBeInstanceOf(SandboxConfigError)
      expect(exec.field).toMatch(/^exec\.env/)
      expect(await rejectionOf(handle.process.spawn('true', { env: { [name]: 'x' } }))).toBeInstanceOf(SandboxConfigError)
    }
    expect(await handle.fs.exists('X')).toBe(false)
    await handle.env.set({ _ok: '1', Mixed_Case9: '2' })
    expect((await handle.process.exec('printf %s "$_ok$Mixed_Case9"')).stdout).toBe('12')
  })

  it('git runs the system git in the workspace', async () => {
    const handle = await temp.create()
    expect((await handle.process.exec('git init --quiet -b main')).exitCode).toBe(0)
    await handle.fs.write('README.md', '# hi\n')
    expect((await handle.git.status()).entries).toEqual([{ code: '??', path: 'README.md' }])
    await handle.git.add()
    const { sha } = await handle.git.commit('first')
    expect(sha).toMatch(/^[0-9a-f]{40}$/)
    expect(await handle.git.status()).toEqual({ branch: 'main', clean: true, entries: [] })
  })

  it('watch reports create, change and delete, and skips ignored folders', async () => {
    const handle = await temp.create()
    await handle.fs.write('existing.txt', 'old')
    const events: SandboxWatchEvent[] = []
    const watcher = await handle.fs.watch!((event) => events.push(event))
    const seen = (type: string, path: string) => events.some((event) => event.type === type && event.path === path)

    await handle.fs.write('node_modules/pkg/index.js', 'ignored')
    await handle.fs.write('src/new.ts', 'new')
    await waitFor(() => seen('create', 'src/new.ts'), 'create src/new.ts')
    await handle.fs.write('existing.txt', 'new content')
    await waitFor(() => seen('change', 'existing.txt'), 'change existing.txt')
    await handle.fs.remove('src')
    await waitFor(() => seen('delete', 'src/new.ts') && seen('delete', 'src'), 'delete src and src/new.ts')
    await watcher.close()

    expect(events.some((event) => event.path.startsWith('node_modules'))).toBe(false)
    expect(seen('create', 'existing.txt')).toBe(false)
    for (const event of events) expect(typeof event.timestamp).toBe('number')
    const count = events.length
    await handle.fs.write('after-close.txt', 'x')
    await handle.process.exec('true') // a round trip for any late event to arrive
    expect(events.length).toBe(count)
  })
})

/** /proc/<pid>/stat text (state is the field after the command name). */
function procStat(pid: number): string {
  return readFileSync(`/proc/${pid}/stat`, 'utf8')
}
