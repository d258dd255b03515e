/**
 * spawnNdjson over real `sh -c` children (tests/helpers/fake-handle.ts): JSON
 * values out, noise lines reported, stderr drained concurrently into a bounded
 * tail, exit reported and never thrown, the child killed on early stop, abort
 * or a throwing callback.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { UnsupportedCapabilityError } from '../../src/contracts/errors.js'
import type { SandboxHandle } from '../../src/contracts/handle.js'
import { DEFAULT_MAX_LINE_BYTES, spawnNdjson, type SpawnNdjsonExit, type SpawnNdjsonOptions } from '../../src/harness/spawn-ndjson.js'
import { LineTooLongError } from '../../src/journal/to-lines.js'
import { createFakeHandle, type FakeHandle } from '../helpers/fake-handle.js'

let handle: FakeHandle

afterEach(async () => {
  await handle?.destroy()
})

async function run(command: string, options: SpawnNdjsonOptions = {}) {
  handle = createFakeHandle()
  const values: unknown[] = []
  let exit: SpawnNdjsonExit | undefined
  for await (const value of spawnNdjson(handle, command, { ...options, onExit: (e) => void (exit = e) })) values.push(value)
  return { values, exit }
}

/**
 * Resolves once no process of the child's group (the shell and what it
 * started) exists. Polls because PID 1 reaps orphaned grandchildren on its own
 * time; the bound only keeps a failing test from hanging.
 */
async function expectGroupGone(pid: number): Promise<void> {
  await vi.waitFor(() => expect(groupAlive(pid)).toBe(false), { timeout: 5_000, interval: 20 })
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0)
    return true
  } catch {
    return false
  }
}

const FOREVER = `i=0; while :; do echo "{\\"i\\":$i}"; i=$((i+1)); done`

describe('spawnNdjson', () => {
  it('refuses a stdout line longer than DEFAULT_MAX_LINE_BYTES (32 MiB) when no maxLineBytes is given', async () => {
    expect(DEFAULT_MAX_LINE_BYTES).toBe(32 * 1024 * 1024)
    // One line 1 KiB past the default, then a newline and a value that must not be reached.
    const error = await run(`head -c ${DEFAULT_MAX_LINE_BYTES + 1024} /dev/zero | tr '\\0' a; echo; echo '{"after":1}'`).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    expect(LineTooLongError.isInstance(error)).toBe(true)
    expect((error as LineTooLongError).maxLineBytes).toBe(DEFAULT_MAX_LINE_BYTES)
  })

  it('yields each JSON line parsed and reports a clean exit', async () => {
    const { values, exit } = await run(`printf '{"a":1}\\n[1,2]\\n"s"\\n3\\nnull\\n{"tail":true}'`)
    expect(values).toEqual([{ a: 1 }, [1, 2], 's', 3, null, { tail: true }])
    expect(exit).toEqual({ exitCode: 0, stderrTail: '' })
  })

  it('skips empty lines and reports non-JSON noise lines without failing', async () => {
    const noise: string[] = []
    const { values } = await run(`echo 'Loading...'; echo '{"a":1}'; echo; echo '   '; printf 'Warning: x\\r\\n'; echo '{"b":2}'; echo '{broken'`, {
      onNonJsonLine: (line) => noise.push(line),
    })
    expect(values).toEqual([{ a: 1 }, { b: 2 }])
    expect(noise).toEqual(['Loading...', 'Warning: x', '{broken'])
  })

  it('does not throw on a non-zero exit and hands over the stderr tail', async () => {
    const { values, exit } = await run(`echo '{"a":1}'; echo 'something broke' >&2; exit 3`)
    expect(values).toEqual([{ a: 1 }])
    expect(exit).toEqual({ exitCode: 3, stderrTail: 'something broke\n' })
  })

  it('drains a chatty stderr concurrently and keeps only a bounded tail', async () => {
    const chunks: string[] = []
    // 1 MB of stderr before any stdout: a child whose stderr is not read would block on the full pipe.
    const { values, exit } = await run(`head -c 1000000 /dev/zero | tr '\\0' x >&2; echo END >&2; echo '{"ok":true}'`, {
      onStderr: (chunk) => chunks.push(chunk),
      stderrTailLength: 1000,
    })
    expect(values).toEqual([{ ok: true }])
    expect(chunks.join('')).toHaveLength(1_000_004)
    expect(exit?.stderrTail).toHaveLength(1000)
    expect(exit?.stderrTail.endsWith('xxEND\n')).toBe(true)
  })

  it('writes stdin and then closes it', async () => {
    const { values, exit } = await run('cat', { stdin: '{"from":"stdin"}\n{"n":2}\n' })
    expect(values).toEqual([{ from: 'stdin' }, { n: 2 }])
    expect(exit?.exitCode).toBe(0)
  })

  it('closes stdin when none is given, so a CLI reading it sees EOF', async () => {
    const { values } = await run(`cat; echo '{"eof":true}'`)
    expect(values).toEqual([{ eof: true }])
  })

  it('throws UnsupportedCapabilityError after the run when stdin is given but the provider cannot write it', async () => {
    handle = createFakeHandle()
    const refuse = async () => {
      throw new UnsupportedCapabilityError({ provider: 'fake', capability: 'writableStdin', method: 'stdin.write' })
    }
    const noStdin: SandboxHandle = {
      ...handle,
      process: {
        ...handle.process,
        spawn: async (command, options) => ({ ...(await handle.process.spawn(command, options)), stdin: { write: refuse, end: refuse } }),
      },
    }
    const values: unknown[] = []
    const iterate = async () => {
      for await (const value of spawnNdjson(noStdin, `echo '{"a":1}'`, { stdin: 'input' })) values.push(value)
    }
    await expect(iterate()).rejects.toBeInstanceOf(UnsupportedCapabilityError)
    expect(values).toEqual([{ a: 1 }])
    // Without stdin text, a provider that cannot close stdin is no error.
    values.length = 0
    for await (const value of spawnNdjson(noStdin, `echo '{"b":2}'`)) values.push(value)
    expect(values).toEqual([{ b: 2 }])
  })

  it('passes cwd and env to the spawn', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spawn-ndjson-'))
    try {
      const { values } = await run(`printf '{"cwd":"%s","v":"%s"}\\n' "$(pwd -P)" "$FOO"`, { cwd: dir, env: { FOO: 'bar' } })
      expect(values).toEqual([{ cwd: realpathSync(dir), v: 'bar' }])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('kills the process when the consumer breaks early', async () => {
    handle = createFakeHandle()
    let exitCalled = false
    const seen: unknown[] = []
    // The child writes nothing more after two lines, so only kill() can end it (SIGPIPE cannot).
    const command = `echo '{"a":1}'; echo '{"b":2}'; sleep 1000; echo '{"c":3}'`
    for await (const value of spawnNdjson(handle, command, { onExit: () => void (exitCalled = true) })) {
      seen.push(value)
      break
    }
    expect(seen).toEqual([{ a: 1 }])
    const [child] = handle.children
    expect(child?.killed).toBe(true)
    expect(await child!.closed).toEqual({ exitCode: 143, signal: 'SIGTERM' })
    await expectGroupGone(child!.pid)
    expect(exitCalled).toBe(false)
  })

  it('leaves no process behind when the consumer breaks off an endless stream', async () => {
    handle = createFakeHandle()
    const seen: unknown[] = []
    for await (const value of spawnNdjson(handle, FOREVER)) {
      seen.push(value)
      if (seen.length === 3) break
    }
    expect(seen).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }])
    expect(handle.children[0]?.killed).toBe(true)
    await expectGroupGone(handle.children[0]!.pid)
  })

  it('kills the process and ends the iteration normally when the signal aborts', async () => {
    handle = createFakeHandle()
    const controller = new AbortController()
    let exit: SpawnNdjsonExit | undefined
    const seen: unknown[] = []
    const options = { signal: controller.signal, onExit: (e: SpawnNdjsonExit) => void (exit = e) }
    for await (const value of spawnNdjson(handle, FOREVER, options)) {
      seen.push(value)
      if (seen.length === 2) controller.abort()
    }
    expect(seen).toEqual([{ i: 0 }, { i: 1 }])
    expect(exit).toMatchObject({ exitCode: 143, signal: 'SIGTERM' })
    await expectGroupGone(handle.children[0]!.pid)
  })

  it('spawns nothing when the signal is already aborted', async () => {
    handle = createFakeHandle()
    const values: unknown[] = []
    for await (const value of spawnNdjson(handle, `echo '{"a":1}'`, { signal: AbortSignal.abort() })) values.push(value)
    expect(values).toEqual([])
    expect(handle.children).toHaveLength(0)
  })

  it('kills the process and rethrows when a callback throws', async () => {
    handle = createFakeHandle()
    const failure = new TypeError('consumer bug')
    const iterate = async () => {
      for await (const _ of spawnNdjson(handle, `echo noise; ${FOREVER}`, {
        onNonJsonLine: () => {
          throw failure
        },
      })) {
        // nothing: the first line already throws
      }
    }
    await expect(iterate()).rejects.toBe(failure)
    expect(handle.children[0]?.killed).toBe(true)
    await expectGroupGone(handle.children[0]!.pid)
  })

  it('does not start the process before iteration starts', async () => {
    handle = createFakeHandle()
    const stream = spawnNdjson(handle, `echo '{"a":1}'`)
    expect(handle.children).toHaveLength(0)
    const values: unknown[] = []
    for await (const value of stream) values.push(value)
    expect(values).toEqual([{ a: 1 }])
  })
})
