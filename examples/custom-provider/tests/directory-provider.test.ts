// What the kit does not check but the guide claims about the example provider:
// optional methods are absent when their flag is false, options are validated,
// ids never become paths, the environment tag reaches processes that left the
// job (setsid, double fork) from another provider instance too, and hostAccess
// names an address where a host server is really reachable from inside.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxLimitError, SandboxPathError, snapshotSandbox, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import type { SandboxHandle } from '@tanstack/ai-sandbox'
import { directorySandbox, JOB_VARIABLE } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'directory-provider-'))
const provider = directorySandbox({ root, killGraceMs: 500 })
const handles: SandboxHandle[] = []
const create = async () => {
  const handle = await provider.create()
  handles.push(handle)
  return handle
}
afterAll(async () => {
  for (const handle of handles) await handle.destroy()
  expect(readdirSync(root), 'sandbox folders left behind').toEqual([])
  rmSync(root, { recursive: true, force: true })
})

/** True while `pid` runs (a zombie has exited and does not count). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

describe('directory provider', () => {
  it('leaves out the optional methods whose flag is false, and core turns that into UnsupportedCapabilityError', async () => {
    const handle = await create()
    expect({ snapshot: handle.snapshot, fork: handle.fork, restoreSnapshot: provider.restoreSnapshot, watch: handle.fs.watch }).toEqual({
      snapshot: undefined,
      fork: undefined,
      restoreSnapshot: undefined,
      watch: undefined,
    })
    const error = await snapshotSandbox(handle).catch((e: unknown) => e)
    expect(UnsupportedCapabilityError.isInstance(error) && error.capability).toBe('snapshots')
    const ports = await handle.ports.connect(3000).catch((e: unknown) => e)
    expect(UnsupportedCapabilityError.isInstance(ports) && ports.capability).toBe('ports')
  })

  it('validates options and environment names, naming the field', async () => {
    const config = (() => {
      try {
        directorySandbox({ killGraceMs: -1 })
      } catch (error) {
        return error
      }
    })()
    expect(SandboxConfigError.isInstance(config) && config.field).toBe('directorySandbox.killGraceMs')
    const handle = await create()
    const env = await handle.env.set({ 'A B': 'x' }).catch((e: unknown) => e)
    expect(SandboxConfigError.isInstance(env) && env.field).toBe('env.set.A B')
    const exec = await handle.process.exec('true', { env: { '$(touch x)': '1' } }).catch((e: unknown) => e)
    expect(SandboxConfigError.isInstance(exec)).toBe(true)
    expect(await handle.fs.exists('x')).toBe(false)
  })

  it('never turns an id into a path: resume of ../ ids is null, destroy of one does nothing', async () => {
    const handle = await create()
    expect(await provider.resume({ id: `../${handle.id}` })).toBeNull()
    expect(await provider.resume({ id: '..' })).toBeNull()
    await provider.destroy({ id: '..' })
    expect(await handle.fs.exists('.')).toBe(true)
  })

  it('a second provider instance (as another process would) destroys a sandbox and the daemons its jobs left, setsid and double fork alike', async () => {
    const handle = await create()
    await handle.process.exec('setsid sh -c "sleep 301" >/dev/null 2>&1 & echo $! > setsid.pid; (sh -c "sleep 302 & echo \\$! > orphan.pid" &)')
    const pids = await Promise.all(['setsid.pid', 'orphan.pid'].map(async (file) => {
      for (let i = 0; i < 100 && !(await handle.fs.exists(file)); i++) await new Promise((r) => setTimeout(r, 20))
      return Number((await handle.fs.read(file)).trim())
    }))
    expect(pids.map(running), 'both daemons run after the command that started them returned').toEqual([true, true])
    await directorySandbox({ root }).destroy({ id: handle.id })
    expect(pids.map(running), 'destroy from another instance stopped both').toEqual([false, false])
    expect(await provider.resume({ id: handle.id })).toBeNull()
  })

  it('tags every process with its sandbox and job, and the tag cannot be overridden', async () => {
    const handle = await create()
    const { stdout } = await handle.process.exec(`printf %s "$${JOB_VARIABLE}"`, { env: { [JOB_VARIABLE]: 'spoofed' } })
    expect(stdout).toMatch(new RegExp(`^${handle.id}/[0-9a-f-]{36}$`))
  })

  it('hostAccess names where a host server must listen for processes inside to reach it', async () => {
    const handle = await create()
    const access = await handle.hostAccess!()
    expect(access).toEqual({ hostname: '127.0.0.1', listenAddress: '127.0.0.1' })
    const server = createServer((_req, res) => res.end('from the host'))
    await new Promise<void>((resolve) => server.listen(0, access!.listenAddress, resolve))
    try {
      const url = `http://${access!.hostname}:${(server.address() as AddressInfo).port}/`
      const result = await handle.process.exec(`node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => process.stdout.write(t))' ${url}`)
      expect(result).toEqual({ exitCode: 0, stdout: 'from the host', stderr: '' })
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('reads and writes only regular files: a FIFO is refused at once, a hard-linked file is not read and a write leaves its other link alone', async () => {
    const handle = await create()
    const outside = mkdtempSync(join(tmpdir(), 'directory-outside-'))
    try {
      const secret = join(outside, 'secret.txt')
      await handle.process.exec(`mkfifo pipe && printf 'host secret' > ${secret} && ln ${secret} linked.txt && printf '#!/bin/sh\\necho run\\n' > tool.sh && chmod 755 tool.sh`)
      const reason = async (run: () => Promise<unknown>) => run().then(() => 'resolved', (e: unknown) => (SandboxPathError.isInstance(e) ? e.reason : String(e)))
      expect(await reason(() => handle.fs.read('pipe')), 'a FIFO would block a reader').toBe('special-file')
      expect(await reason(() => handle.fs.write('pipe', 'x')), 'nor is a FIFO written').toBe('special-file')
      expect(await reason(() => handle.fs.read('linked.txt')), 'its other link is outside the workspace').toBe('hard-link')
      await handle.fs.write('linked.txt', 'replaced')
      expect(readFileSync(secret, 'utf8'), 'the write replaced the entry, not the shared inode').toBe('host secret')
      await handle.fs.write('tool.sh', '#!/bin/sh\necho rewritten\n')
      expect((await handle.process.exec('./tool.sh')).stdout, 'a rewritten script keeps its mode').toBe('rewritten\n')
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })

  it('a folder swapped for an outward symlink while fs calls run never lets one reach outside', async () => {
    const handle = await create()
    const outside = mkdtempSync(join(tmpdir(), 'directory-decoy-'))
    try {
      await handle.fs.mkdir('box')
      // Swap box between a real folder and a link to the decoy as fast as the shell can.
      const swapper = await handle.process.spawn(`while :; do mv box real-box 2>/dev/null && ln -s ${outside} box && rm box && mv real-box box; done`)
      const outcomes = new Map<string, number>()
      for (let i = 0; i < 300; i++) {
        const results = await Promise.allSettled([handle.fs.write(`box/f${i}.txt`, 'x'), handle.fs.mkdir(`box/d${i}/sub`), handle.fs.read(`box/f${i - 1}.txt`), handle.fs.remove(`box/d${i - 1}`)])
        for (const r of results) {
          const key = r.status === 'fulfilled' ? 'ok' : SandboxPathError.isInstance(r.reason) ? r.reason.reason : 'other'
          outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
        }
      }
      await swapper.kill()
      expect(readdirSync(outside), `nothing was written outside (outcomes: ${JSON.stringify([...outcomes])})`).toEqual([])
      expect(outcomes.get('ok') ?? 0, 'most calls still succeed').toBeGreaterThan(0)
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })

  it('exec stops a command whose output passes maxExecOutputBytes, and leaves nothing running', async () => {
    const small = directorySandbox({ root, maxExecOutputBytes: 64 * 1024 })
    const handle = await small.create()
    handles.push(handle)
    const error = await handle.process.exec('echo $$ > shell.pid; yes limit').catch((e: unknown) => e)
    expect(SandboxLimitError.isInstance(error) && [error.reason, error.limitBytes, error.option]).toEqual(['exec-output-too-large', 64 * 1024, 'directorySandbox({ maxExecOutputBytes })'])
    expect(running(Number((await handle.fs.read('shell.pid')).trim())), 'the endless command was killed').toBe(false)
    expect((await handle.process.exec('yes | head -c 60000')).stdout.length, 'output under the bound is whole').toBe(60000)
  })

  it('a destroyed sandbox refuses further work with reason destroyed, and a late write does not re-create its folder', async () => {
    const handle = await provider.create()
    await handle.destroy()
    const reasons = await Promise.all([handle.process.exec('true'), handle.fs.write('late.txt', 'x'), handle.env.set({ A: '1' })].map((p) => p.then(() => 'resolved', (e: unknown) => (e as { reason?: string }).reason)))
    expect(reasons).toEqual(['destroyed', 'destroyed', 'destroyed'])
    expect(readdirSync(root).filter((name) => name.startsWith(handle.id)), 'nothing of the sandbox is left').toEqual([])
  })

  it('holds at most about OUTPUT_HIGH_WATER_MARK of unread output: the process waits for the reader, and a late reader loses nothing', async () => {
    const handle = await create()
    const job = await handle.process.spawn('head -c 20000000 /dev/zero | tr "\\0" x; echo done >&2')
    const state = await Promise.race([job.wait().then(() => 'exited'), new Promise((resolve) => setTimeout(() => resolve('blocked'), 1000))])
    expect(state, 'nobody read 20 MB, so the process is still blocked on its pipe').toBe('blocked')
    let stdout = 0
    let stderr = ''
    await Promise.all([(async () => { for await (const text of job.stdout) stdout += text.length })(), (async () => { for await (const text of job.stderr) stderr += text })()])
    expect({ stdout, stderr, exitCode: (await job.wait()).exitCode }).toEqual({ stdout: 20_000_000, stderr: 'done\n', exitCode: 0 })
  })
})
