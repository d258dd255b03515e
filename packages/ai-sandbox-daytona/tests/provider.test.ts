// What daytonaSandbox promises beyond the shared kit, proved on the Daytona
// stand-in through the public API (the real @daytona/sdk is the stand-in's
// only client; a second SDK client reads what Daytona holds): secrets never
// reach Daytona's API nor a session's command history, yet reach the process;
// resume of a stopped, an archived and a deleted sandbox; env.set across
// provider instances; /workspace paths and sudo; networkBlockAll; a dropped
// log stream loses and doubles nothing; kill() ends the whole process tree.
// Skips naming the engine when it is not answering (fails under REQUIRE_DOCKER=1).
import { createHash, randomInt, randomUUID } from 'node:crypto'
import { inspect } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Daytona } from '@daytona/sdk'
import { UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'
import { describeWithDocker } from '@testing/support/docker-engine'
import { daytonaSandbox } from '../src/index.js'
import { daytonaLab } from './helpers/standin.js'

const lab = await daytonaLab('provider')

/** Read a stream to its end; `seen` gets all the text so far after every chunk. */
async function readAll(stream: AsyncIterable<string>, seen: (text: string) => void = () => {}): Promise<string> {
  let text = ''
  for await (const chunk of stream) {
    text += chunk
    seen(text)
  }
  return text
}

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire!: () => void
  const promise = new Promise<void>((resolve) => (fire = resolve))
  return { promise, fire }
}

/** What a promise rejected with (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => expect.unreachable('expected a rejection'),
    (error: unknown) => error,
  )
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex')

/** How many follow-logs WebSockets the stand-in accepted so far. */
const followSockets = (): number => lab.standin.requests().filter((r) => r.method === 'WS' && r.status === 101).length

/** `label1\nlabel2\n…` for lines first..last. */
const numbered = (label: string, first: number, last: number): string => Array.from({ length: last - first + 1 }, (_, i) => `${label}${first + i}\n`).join('')

describeWithDocker('daytona provider on the stand-in', lab.reason, () => {
  lab.cleanupAfter()

  /** A second SDK client: reads what Daytona holds, and stops or archives behind the provider. */
  let daytona: Daytona
  const secrets = {
    config: `sk-config-${randomUUID()}`,
    create: `sk-create-${randomUUID()}`,
    exec: `sk-exec-${randomUUID()}`,
    stdin: `sk-stdin-${randomUUID()}`,
    spawn: `sk-spawn-${randomUUID()}`,
  }
  const secretValues = Object.values(secrets)
  /** The provider of the shared sandbox: config env holds a secret. */
  let provider: SandboxProvider
  /** Shared by the secret, path, network, stream and kill cases. */
  let shared: SandboxHandle
  const handles: SandboxHandle[] = []

  beforeAll(async () => {
    daytona = new Daytona({ apiKey: 'test', apiUrl: lab.standin.apiUrl })
    provider = lab.provider({ env: { CONFIG_SECRET: secrets.config } })
    shared = await provider.create({ env: { SECRET: secrets.create } })
    handles.push(shared)
  })

  afterAll(async () => {
    await Promise.all(handles.map((handle) => handle.destroy().catch(() => undefined)))
    await daytona?.[Symbol.asyncDispose]()
  })

  it('keeps secrets out of Daytona (sandbox env, labels, every session command and its logs) while the process gets them', async () => {
    // Config env, create env and exec env reach the process verbatim.
    const printed = await shared.process.exec('printf "%s\\n" "$SECRET" "$CONFIG_SECRET" "$API_KEY"', { env: { API_KEY: secrets.exec } })
    expect(printed).toEqual({ exitCode: 0, stdout: `${secrets.create}\n${secrets.config}\n${secrets.exec}\n`, stderr: '' })
    // exec stdin reaches it too (hashed, so the output does not carry it).
    expect((await shared.process.exec('sha256sum', { stdin: secrets.stdin })).stdout).toBe(`${sha256(secrets.stdin)}  -\n`)
    // A spawned process with a secret in its env, still running (its session is live) while Daytona is read.
    const spawned = await shared.process.spawn('printf %s "$API_KEY" | sha256sum; exec sleep 300', { env: { API_KEY: secrets.spawn } })
    const hashed = signal()
    const spawnedOut = readAll(spawned.stdout, (text) => text.includes('\n') && hashed.fire())
    await hashed.promise
    const remote = await daytona.get(shared.id)
    const held = JSON.stringify({ env: remote.env, labels: remote.labels })
    for (const secret of secretValues) expect(held, 'the sandbox env and labels Daytona stores').not.toContain(secret)

    const sessions = await remote.process.listSessions()
    const commands: { session: string; id: string; command: string; logs: string }[] = []
    for (const { sessionId } of sessions) {
      for (const command of (await remote.process.getSession(sessionId)).commands ?? []) {
        const logs = await remote.process.getSessionCommandLogs(sessionId, command.id)
        commands.push({ session: sessionId, id: command.id, command: command.command, logs: JSON.stringify(logs) })
      }
    }
    // The history read is the real one: the pooled session that ran the execs and the spawned job's session are in it.
    expect(commands.some((c) => c.command.includes('sha256sum') && !c.command.includes('sleep 300'))).toBe(true)
    expect(commands.some((c) => c.command.includes('sleep 300'))).toBe(true)
    for (const { command } of commands) {
      for (const secret of secretValues) expect(command, 'a command line Daytona keeps').not.toContain(secret)
    }
    // Only the printf's own output carries secrets: those it printed, nothing else.
    const leaking = commands.map((c) => ({ command: c.command, found: secretValues.filter((s) => c.logs.includes(s)) })).filter((c) => c.found.length > 0)
    expect(leaking).toEqual([{ command: expect.stringContaining('printf "%s\\n"'), found: [secrets.config, secrets.create, secrets.exec] }])

    await spawned.kill()
    await spawned.wait()
    expect(await spawnedOut).toBe(`${sha256(secrets.spawn)}  -\n`)

    // Nothing of a per-call secret stays on the sandbox's disk (the patterns go in through stdin);
    // the sandbox-wide env is in a file inside the sandbox by design, which shows the search works.
    const search = (patterns: string[]) => shared.process.exec('grep -rlsF -f - /tmp /home/daytona', { stdin: `${patterns.join('\n')}\n` })
    expect((await search([secrets.config])).stdout).not.toBe('')
    expect(await search([secrets.exec, secrets.stdin, secrets.spawn])).toMatchObject({ exitCode: 1, stdout: '' })
  })

  it('maps /workspace paths onto /home/daytona/workspace, and sudo -n works in exec', async () => {
    expect(shared.workspaceRoot).toBe('/home/daytona/workspace')
    await shared.fs.write('/workspace/a', 'mapped\n')
    expect(await shared.process.exec('cat /home/daytona/workspace/a')).toEqual({ exitCode: 0, stdout: 'mapped\n', stderr: '' })
    expect((await shared.process.exec('pwd -P', { cwd: '/workspace' })).stdout).toBe('/home/daytona/workspace\n')
    expect(await shared.fs.read('/home/daytona/workspace/a')).toBe('mapped\n')
    expect(await shared.process.exec('sudo -n true')).toMatchObject({ exitCode: 0 })
    expect(await shared.process.exec('sudo -n id -u')).toEqual({ exitCode: 0, stdout: '0\n', stderr: '' })
  })

  it('networkBlockAll leaves no route out: no ports capability, and ports.connect refuses with UnsupportedCapabilityError', async () => {
    const blocked = lab.provider({ networkBlockAll: true })
    expect(blocked.capabilities().ports).toBe(false)
    expect(provider.capabilities().ports).toBe(true)
    const handle = await blocked.create()
    handles.push(handle)
    expect(handle.capabilities.ports).toBe(false)
    const refused = await rejectionOf(handle.ports.connect(3000))
    expect(UnsupportedCapabilityError.isInstance(refused)).toBe(true)
    expect(refused).toMatchObject({ capability: 'ports', method: 'ports.connect', message: expect.stringContaining('networkBlockAll') })
    expect((await daytona.get(handle.id)).networkBlockAll).toBe(true)
    // Only loopback, no route, and a connect fails at once; the shared sandbox (network on) has an interface out.
    expect((await handle.process.exec('ls /sys/class/net')).stdout).toBe('lo\n')
    expect((await handle.process.exec('tail -n +2 /proc/net/route')).stdout).toBe('')
    const connect = await handle.process.exec("timeout 10 bash -c 'exec 3<>/dev/tcp/192.0.2.1/80' 2>&1; echo \"exit $?\"")
    expect(connect.stdout).toMatch(/Network is unreachable[\s\S]*exit 1\n$/)
    expect((await shared.process.exec('ls /sys/class/net')).stdout).toMatch(/^eth0$/m)
  })

  it('a spawned process whose log stream is dropped twice delivers every line exactly once, and its exit code', async () => {
    // 40 lines on each stream, a wait for the gate file, 40 more, exit 7.
    const script = [
      'i=1; while [ $i -le 40 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done',
      'while [ ! -e gate ]; do sleep 0.05; done',
      'while [ $i -le 80 ]; do echo out$i; echo err$i >&2; i=$((i+1)); sleep 0.01; done',
      'exit 7',
    ].join('\n')
    const followsBefore = followSockets()
    const proc = await shared.process.spawn(script)
    const firstHalf = signal()
    const laterLine = signal()
    const stdout = readAll(proc.stdout, (text) => {
      if (text.endsWith('out40\n')) firstHalf.fire()
      if (text.includes('out60\n')) laterLine.fire()
    })
    const stderr = readAll(proc.stderr)
    await firstHalf.promise
    lab.standin.dropLogStreams()
    await shared.fs.write('/workspace/gate', '')
    await laterLine.promise
    lab.standin.dropLogStreams()
    expect(await proc.wait()).toEqual({ exitCode: 7 })
    expect(await stdout).toBe(numbered('out', 1, 80))
    expect(await stderr).toBe(numbered('err', 1, 80))
    expect(followSockets() - followsBefore, 'the first drop cut a live stream, so the provider followed again').toBeGreaterThanOrEqual(2)
  })

  it('kill() ends the whole process tree: children, a new session, a TERM-ignoring child, a grandchild', async () => {
    // The numbers are built by the shell, so only the job's leaf processes carry them in their arguments
    // (not the command line, which the job script and the session shell show).
    const m = randomInt(100_000, 900_000)
    const proc = await shared.process.spawn(`m=${m}; sleep \${m}01 & setsid sleep \${m}02 & (trap '' TERM; sleep \${m}03) & sh -c "sleep \${m}04; true" & echo ready; wait`)
    const stdout = readAll(proc.stdout)
    const jobLines = async () => (await shared.process.exec('ps -eo args=')).stdout.split('\n').filter((line) => line.includes(String(m)))
    let sleeps: string[] = []
    for (let round = 0; sleeps.length < 4 && round < 200; round++) {
      if (round > 0) await sleep(50)
      sleeps = (await jobLines()).filter((line) => line.startsWith(`sleep ${m}`))
    }
    expect(sleeps.sort()).toEqual([1, 2, 3, 4].map((n) => `sleep ${m}0${n}`))
    await proc.kill()
    expect(await jobLines(), 'no process of the job is left').toEqual([])
    expect(await proc.wait()).toEqual({ exitCode: 143, signal: 'SIGTERM' })
    expect(await stdout).toBe('ready\n')
  })

  it("fork where Daytona refuses one (422, as its server does for container sandboxes) copies through a snapshot, env.set values included", async () => {
    await shared.fs.write('forked-file.txt', 'copied')
    await shared.env.set({ FORK_VAR: 'kept' })
    lab.standin.failNext({ route: 'POST /sandbox/{id}/fork', status: 422, message: 'Forking is not supported for this sandbox' })
    const fork = await shared.fork!()
    handles.push(fork)
    expect(fork.id).not.toBe(shared.id)
    expect((await fork.process.exec('cat forked-file.txt; printf " $FORK_VAR"')).stdout).toBe('copied kept')
    await fork.fs.write('forked-file.txt', 'changed')
    expect(await shared.fs.read('forked-file.txt'), 'the copy is independent').toBe('copied')
    expect((await daytona.snapshot.list()).items.filter((snapshot) => snapshot.name.startsWith(`tanstack-${shared.id.slice(0, 12)}`)), 'the snapshot in between is deleted').toEqual([])
  })

  it("a caller's PATH applies to the command only: the job script still cleans up, and no per-call file is left", async () => {
    const result = await shared.process.exec('echo hi; printf %s "$PATH"', { env: { PATH: '/opt/none', S: `sk-path-${randomUUID()}` }, stdin: 'in' })
    expect(result).toEqual({ exitCode: 0, stdout: 'hi\n/opt/none', stderr: '' })
    // The listing's own job has its .pgid while it runs.
    const left = await shared.process.exec('ls -A "$HOME/.tanstack-sandbox/jobs" | grep -v "^$TANSTACK_SANDBOX_JOB\\." || true')
    expect(left.stdout, 'no .env, .in, .pgid or .kill file is left').toBe('')
  })

  it('logging or serialising the provider shows neither the API key nor the env', () => {
    const key = `dtn_${randomUUID()}`
    const logged = daytonaSandbox({ apiKey: key, apiUrl: lab.standin.apiUrl, env: { TOKEN: secrets.config } })
    for (const text of [inspect(logged, { depth: 10, showHidden: false }), JSON.stringify(logged)]) {
      expect(text).not.toContain(key)
      expect(text).not.toContain(secrets.config)
    }
  })

  describe('resume', () => {
    let id: string

    it('starts a stopped sandbox (stopped behind the provider) and keeps its files', async () => {
      const handle = await provider.create()
      handles.push(handle)
      id = handle.id
      await handle.fs.write('/workspace/kept.txt', 'before the stop\n')
      await (await daytona.get(id)).stop()
      expect((await daytona.get(id)).state).toBe('stopped')
      const resumed = await provider.resume({ id })
      expect(resumed?.id).toBe(id)
      expect((await daytona.get(id)).state).toBe('started')
      expect(await resumed!.fs.read('/workspace/kept.txt')).toBe('before the stop\n')
      expect((await resumed!.process.exec('cat kept.txt')).stdout).toBe('before the stop\n')
    })

    it('starts an archived sandbox and keeps its files', async () => {
      const remote = await daytona.get(id)
      await remote.stop()
      await remote.archive()
      expect((await daytona.get(id)).state).toBe('archived')
      const resumed = await provider.resume({ id })
      expect((await daytona.get(id)).state).toBe('started')
      expect(await resumed!.fs.read('/workspace/kept.txt')).toBe('before the stop\n')
    })

    it('env.set survives a fresh provider instance that resumes the sandbox after a stop', async () => {
      const current = await provider.resume({ id })
      await current!.env.set({ CARRIED: 'set before the stop' })
      await (await daytona.get(id)).stop()
      const fresh = daytonaSandbox({ apiKey: 'test', apiUrl: lab.standin.apiUrl })
      const resumed = await fresh.resume({ id })
      expect(resumed?.id).toBe(id)
      expect(await resumed!.process.exec('printf %s "$CARRIED"')).toEqual({ exitCode: 0, stdout: 'set before the stop', stderr: '' })
    })

    it('gives null for a sandbox deleted behind the provider', async () => {
      await lab.standin.deleteBehindBack(id)
      expect(await provider.resume({ id })).toBeNull()
      expect(await daytonaSandbox({ apiKey: 'test', apiUrl: lab.standin.apiUrl }).resume({ id })).toBeNull()
    })
  })
})
