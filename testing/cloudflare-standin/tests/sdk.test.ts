/**
 * The real `@cloudflare/sandbox@0.12.1` Durable Object, in workerd under
 * Miniflare, driving a container of the stand-in image: commands (exit code,
 * stdout and stderr apart, per-call env and cwd, session persistence,
 * timeout, `exit`), streamed exec, background processes (stream replay, logs,
 * tree kill), files (base64 byte-exact, the error class), sessions, preview
 * URLs, route coverage, and destroy. One sandbox serves most cases (a
 * container start costs ~6 s). Skips naming the engine or image; fails under REQUIRE_DOCKER=1.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { expect, it } from 'vitest'
import { describeWithDocker } from '@testing/support/docker-engine'
import { ROUTES } from '../server/routes.js'
import { cloudflareLab, uniqueId } from './helpers/lab.js'

const { reason, use } = await cloudflareLab()

/** The message a call failed with (Miniflare's RPC proxy may throw at the call itself, so `expect().rejects` cannot take it). */
async function failure(call: () => PromiseLike<unknown>): Promise<string> {
  try {
    await call()
    return 'resolved'
  } catch (error) {
    return (error as Error).message
  }
}

describeWithDocker('the stand-in under the real @cloudflare/sandbox in workerd', reason, () => {
  const state = use()
  const id = uniqueId('sdk')
  const sb = () => ({ w: state.worker, id })

  it('runs a command: real exit code, stdout and stderr apart (line-based, final newline dropped)', async () => {
    const { w } = sb()
    const result = await w.exec(id, "printf 'a\\nb\\n'; echo oops >&2; sh -c 'exit 3'")
    expect(result).toEqual({ success: false, exitCode: 3, stdout: 'a\nb', stderr: 'oops' })
    expect(await state.lab.containers()).toEqual([expect.stringMatching(/^workerd--Sandbox-[0-9a-f]{64}$/)])
    expect((await w.exec(id, 'pwd; id -u; echo $HOME; cat < /dev/stdin | wc -c')).stdout).toBe('/workspace\n0\n/root\n0')
  })

  it('applies env and cwd to one call only, and keeps cd and export of the default session', async () => {
    const { w } = sb()
    expect((await w.exec(id, 'echo "$ONE:$PWD"', { env: { ONE: 'uno' }, cwd: '/tmp' })).stdout).toBe('uno:/tmp')
    expect((await w.exec(id, 'echo "[$ONE]:$PWD"')).stdout).toBe('[]:/workspace')
    await w.exec(id, 'mkdir -p /workspace/sub && cd /workspace/sub && export KEPT=yes')
    expect((await w.exec(id, 'echo "$KEPT:$PWD"')).stdout).toBe('yes:/workspace/sub')
    await w.setEnvVars(id, { VIA_SDK: "it's" })
    expect((await w.exec(id, 'echo "$VIA_SDK"; cd /workspace')).stdout).toBe("it's")
  })

  it('fails a command past its timeout with COMMAND_EXECUTION_ERROR, and ends the session on `exit`', async () => {
    const { w } = sb()
    expect(await failure(() => w.exec(id, 'sleep 1', { timeout: 200 }))).toMatch(/^CommandError: Command timeout after 200ms$/)
    expect(await failure(() => w.exec(id, 'exit 4'))).toMatch(/^SessionTerminatedError: /)
    expect((await w.exec(id, 'echo "fresh:$KEPT:$PWD"')).stdout).toBe('fresh::/workspace')
  })

  it('streams a command as start, stdout, stderr and complete events', async () => {
    const events = await state.worker.execStream(id, 'echo one; echo two >&2; printf three; exit 5', { env: { X: '1' } })
    // Order within a stream is kept; between stdout and stderr it is not (two files read in turn).
    expect(events[0]).toMatchObject({ type: 'start', command: 'echo one; echo two >&2; printf three; exit 5' })
    expect(events.filter((e) => e.type === 'stdout').map((e) => e.data)).toEqual(['one\n', 'three\n'])
    expect(events.filter((e) => e.type === 'stderr').map((e) => e.data)).toEqual(['two\n'])
    expect(events.at(-1)).toMatchObject({ type: 'complete', exitCode: 5 })
  })

  it('runs sessions side by side, each its own shell', async () => {
    const { w } = sb()
    expect(await w.createSession(id, 'side', { cwd: '/tmp', env: { WHO: 'side' } })).toBe('side')
    expect(await failure(() => w.createSession(id, 'side'))).toMatch(/^SessionAlreadyExistsError: /)
    const [slow, quick] = await Promise.all([w.sessionExec(id, 'side', 'sleep 1; echo "$WHO:$PWD"'), w.exec(id, 'echo default')])
    expect(slow.stdout).toBe('side:/tmp')
    expect(quick.stdout).toBe('default')
    expect(await w.deleteSession(id, 'side')).toBe(true)
  })

  it('starts a process, replays its stream on every open, and reports its logs and status', async () => {
    const { w } = sb()
    const started = await w.startProcess(id, 'echo first; sleep 0.5; echo second >&2; sleep 0.3; echo third', { processId: 'p-logs' })
    expect(started).toMatchObject({ id: 'p-logs', status: 'running' })
    const live = await w.streamProcessLogs(id, 'p-logs')
    expect(live[0]).toMatchObject({ type: 'process_info', processId: 'p-logs' })
    expect(live.filter((e) => e.type === 'stdout').map((e) => e.data).join('')).toBe('first\nthird\n')
    expect(live.at(-1)).toMatchObject({ type: 'exit', exitCode: 0 })
    const reopened = await w.streamProcessLogs(id, 'p-logs')
    expect(reopened.map((e) => [e.type, e.data])).toEqual([
      ['process_info', undefined],
      ['stdout', 'first\nthird\n'],
      ['stderr', 'second\n'],
      ['exit', 'Process completed'],
    ])
    expect(await w.getProcessLogs(id, 'p-logs')).toEqual({ stdout: 'first\nthird\n', stderr: 'second\n' })
    expect(await w.getProcess(id, 'p-logs')).toMatchObject({ status: 'completed', exitCode: 0 })
    expect(await w.getProcess(id, 'no-such-process')).toBeNull()
    expect((await w.listProcesses(id)).map((p) => p.id)).toContain('p-logs')
  })

  it('kills a process with its whole tree', async () => {
    const { w } = sb()
    const sleeping = "ps -eo stat=,comm= | awk '$2 == \"sleep\" && $1 !~ /^Z/' | wc -l"
    await w.startProcess(id, "sh -c 'sleep 300 & sleep 300'", { processId: 'p-tree' })
    await expect.poll(async () => (await w.exec(id, sleeping)).stdout, { timeout: 5000 }).toBe('2')
    await w.killProcess(id, 'p-tree')
    expect((await w.exec(id, sleeping)).stdout).toBe('0')
    expect(await w.getProcess(id, 'p-tree')).toMatchObject({ status: 'killed' })
    await w.startProcess(id, 'sleep 300', { processId: 'p-all' })
    expect(await w.killAllProcesses(id)).toBe(1)
    expect((await w.exec(id, sleeping)).stdout).toBe('0')
  })

  it('writes and reads all 256 byte values byte-exact with base64, and text as text', async () => {
    const { w } = sb()
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
    expect(await w.writeFile(id, '/workspace/bytes.bin', bytes.toString('base64'), 'base64')).toBe(true)
    const read = await w.readFile(id, '/workspace/bytes.bin', 'base64')
    expect(Buffer.from(read.content, 'base64').equals(bytes)).toBe(true)
    expect(read).toMatchObject({ encoding: 'base64', size: 256, isBinary: true })
    expect((await w.exec(id, 'sha256sum < /workspace/bytes.bin | cut -c1-64')).stdout).toBe(createHash('sha256').update(bytes).digest('hex'))
    await w.writeFile(id, '/workspace/note.txt', 'héllo\n')
    expect(await w.readFile(id, '/workspace/note.txt')).toMatchObject({ content: 'héllo\n', encoding: 'utf-8', isBinary: false })
  })

  it('makes, lists, renames, moves and deletes files, and names a missing file FileNotFoundError', async () => {
    const { w } = sb()
    expect(await w.mkdir(id, '/workspace/tree/deep', true)).toBe(true)
    await w.writeFile(id, '/workspace/tree/a.txt', 'a')
    await w.writeFile(id, '/workspace/tree/.hidden', 'h')
    expect(await w.renameFile(id, '/workspace/tree/a.txt', '/workspace/tree/b.txt')).toBe(true)
    expect(await w.moveFile(id, '/workspace/tree/b.txt', '/workspace/tree/deep/c.txt')).toBe(true)
    expect(await w.exists(id, '/workspace/tree/a.txt')).toBe(false)
    expect(await w.exists(id, '/workspace/tree/deep/c.txt')).toBe(true)
    const listed = await w.listFiles(id, '/workspace/tree', { recursive: true })
    expect(listed.files.map((f) => [f.relativePath, f.type])).toEqual([
      ['deep', 'directory'],
      ['deep/c.txt', 'file'],
    ])
    expect(listed.files[1]).toMatchObject({ name: 'c.txt', absolutePath: '/workspace/tree/deep/c.txt', size: 1, mode: 'rw-r--r--', permissions: { readable: true, writable: true, executable: false } })
    expect((await w.listFiles(id, '/workspace/tree', { includeHidden: true })).count).toBe(2)
    expect(await w.deleteFile(id, '/workspace/tree/deep/c.txt')).toBe(true)
    expect(await failure(() => w.readFile(id, '/workspace/tree/deep/c.txt'))).toMatch(/^FileNotFoundError: File not found: \/workspace\/tree\/deep\/c\.txt$/)
    expect(await failure(() => w.deleteFile(id, '/workspace/missing'))).toMatch(/^FileNotFoundError: /)
  })

  it('serves a preview URL through proxyToSandbox to a server on port 8080', async () => {
    const { w } = sb()
    await w.startProcess(id, `node -e "require('http').createServer((q, s) => s.end('hello ' + q.url)).listen(8080)"`, { processId: 'web' })
    await w.exec(id, 'until (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null; do sleep 0.1; done', { timeout: 10_000 })
    const url = new URL(await w.exposePort(id, 8080, `localhost:${state.lab.url.port}`))
    expect(url.hostname).toMatch(new RegExp(`^8080-${id}-[a-z0-9_]{16}\\.localhost$`))
    const response = await state.lab.dispatchFetch(new URL('/hello?q=1', url))
    expect(await response.text()).toBe('hello /hello?q=1')
    await w.killProcess(id, 'web')
  })

  it('reaches the Worker from inside the container at lab.containerUrl (the tool bridge path)', async () => {
    const { w } = sb()
    expect(state.lab.containerUrl?.hostname).toMatch(/^\d+\.\d+\.\d+\.\d+$/)
    const fetched = await w.exec(id, `node -e "fetch('${new URL('/from-container', state.lab.containerUrl)}').then(async (r) => console.log(r.status, await r.text()))"`)
    expect(fetched.stdout).toBe('404 not a preview URL')
  })

  it('answers version and ping, and an unknown route with a JSON 404 UNKNOWN_ERROR', async () => {
    const { w } = sb()
    expect(JSON.parse((await w.containerFetch(id, '/api/ping')).body)).toMatchObject({ success: true, message: 'pong' })
    const unknown = await w.containerFetch(id, '/api/no-such-route', { method: 'POST', body: '{}' })
    expect(unknown.status).toBe(404)
    expect(JSON.parse(unknown.body)).toMatchObject({ code: 'UNKNOWN_ERROR', httpStatus: 404 })
  })

  it('was reached on every route it registers (route coverage)', async () => {
    const [container] = await state.lab.containers()
    const log = execFileSync('docker', ['logs', container!], { encoding: 'utf8' })
    const answered = log
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { standin: string; route?: string; status?: number })
      .filter((entry) => entry.standin === 'request')
    const reached = new Set(answered.map((entry) => entry.route))
    expect(ROUTES.map((r) => `${r.method} ${r.path}`).filter((route) => !reached.has(route))).toEqual([])
  })

  it('destroys the container; the next call starts a fresh, empty one', async () => {
    const { w } = sb()
    const [before] = await state.lab.containers()
    await w.destroy(id)
    expect(await w.exists(id, '/workspace/bytes.bin')).toBe(false)
    expect(await w.getProcess(id, 'p-logs')).toBeNull()
    const after = await state.lab.containers()
    expect(after).toHaveLength(1)
    expect(after[0]).toBe(before)
  })
})
