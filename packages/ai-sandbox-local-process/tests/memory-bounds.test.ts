// Memory bounds of the local-process provider: exec stops a command whose
// output passes maxExecOutputBytes (typed error, job killed), and a spawn
// nobody reads pauses its pipes at the high-water mark so the producer
// blocks, while a consumer that starts late still gets every byte.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxError, SandboxLimitError } from '@tanstack/ai-sandbox'
import { DEFAULT_MAX_EXEC_OUTPUT_BYTES, OUTPUT_HIGH_WATER_MARK, localProcessSandbox } from '../src/index.js'
import { liveGroupMembers, rejectionOf, useTempRoot, waitFor } from './helpers/temp-root.js'

const temp = useTempRoot()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('exec output limit', () => {
  it('stops a command that prints more than maxExecOutputBytes with SandboxLimitError and kills its group', async () => {
    const handle = await temp.create({ maxExecOutputBytes: 1024 * 1024 })
    const error = await rejectionOf(handle.process.exec('echo $$ > pid; yes tsbx-flood | head -c 200000000; echo finished > done'))
    expect(SandboxLimitError.isInstance(error)).toBe(true)
    expect(SandboxError.isInstance(error)).toBe(true)
    expect(error.reason).toBe('exec-output-too-large')
    expect(error.limitBytes).toBe(1024 * 1024)
    expect(error.provider).toBe('local-process')
    expect(error.option).toMatch(/maxExecOutputBytes/)
    expect(error.message).toMatch(/more than 1048576 bytes/)
    expect(error.message).toMatch(/process\.spawn/)
    const pid = Number((await readFile(join(handle.workspaceRoot, 'pid'), 'utf8').catch(() => '0')).trim())
    if (pid > 0) expect(liveGroupMembers(pid)).toBe(0)
    expect((await handle.process.exec('test -f done && echo yes || echo no')).stdout).toBe('no\n')
  })

  it('returns output larger than the stream high-water mark whole (exec reads while the command writes)', async () => {
    const handle = await temp.create()
    const size = 5 * OUTPUT_HIGH_WATER_MARK
    const result = await handle.process.exec(`yes 0123456789abcdef | head -c ${size}; yes e | head -c ${size} >&2`)
    expect(result.exitCode).toBe(0)
    expect(result.stdout.length).toBe(size)
    expect(result.stderr.length).toBe(size)
    expect(/^(0123456789abcdef\n)*[0-9a-f]*$/.test(result.stdout)).toBe(true)
  })

  it('counts stdout and stderr together', async () => {
    const handle = await temp.create({ maxExecOutputBytes: 4096 })
    const error = await rejectionOf(handle.process.exec('head -c 3000 /dev/zero; head -c 3000 /dev/zero >&2'))
    expect(SandboxLimitError.isInstance(error) && error.reason).toBe('exec-output-too-large')
    expect((await handle.process.exec('head -c 4000 /dev/zero')).stdout.length).toBe(4000)
  })

  it('validates maxExecOutputBytes and documents the default', () => {
    expect(DEFAULT_MAX_EXEC_OUTPUT_BYTES).toBe(64 * 1024 * 1024)
    for (const bad of [10, 1.5, -1, 'big']) {
      let error: unknown
      try {
        localProcessSandbox({ maxExecOutputBytes: bad as number })
      } catch (caught) {
        error = caught
      }
      expect(SandboxConfigError.isInstance(error)).toBe(true)
      expect((error as SandboxConfigError).field).toBe('localProcessSandbox.maxExecOutputBytes')
    }
  })
})

describe('spawn backpressure', () => {
  // Each loop turn writes 64 KiB, then records how many it wrote.
  const producer = "i=0; while [ $i -lt 100 ]; do head -c 65536 /dev/zero | tr '\\0' a; i=$((i+1)); echo $i > count; done"

  it('pauses an unread stdout at the high-water mark, and a late reader still gets every byte', async () => {
    const handle = await temp.create()
    const job = await handle.process.spawn(producer)
    const count = async () => Number((await readFile(join(handle.workspaceRoot, 'count'), 'utf8').catch(() => '0')).trim() || '0')
    await waitFor(async () => (await count()) > 0, 'the producer to start')
    // Wait until the producer is blocked (two readings 500 ms apart agree): a hang guard, not a timing claim.
    let written = await count()
    for (let tries = 0; tries < 60; tries++) {
      await sleep(500)
      const now = await count()
      if (now === written) break
      written = now
    }
    // 6.4 MiB would be written unthrottled; paused, only the mark plus the pipe buffer (64 KiB) fit.
    expect(written).toBeLessThan((2 * OUTPUT_HIGH_WATER_MARK) / 65536 + 4)
    expect(liveGroupMembers(job.pid!)).toBeGreaterThan(0)
    let length = 0
    let wrong = 0
    for await (const chunk of job.stdout) {
      length += chunk.length
      if (!/^a*$/.test(chunk)) wrong++
    }
    expect(await job.wait()).toEqual({ exitCode: 0 })
    expect(wrong).toBe(0)
    expect(length).toBe(100 * 65536)
    expect(await count()).toBe(100)
  })

  it('pauses stdout and stderr separately: reading only stderr never waits on unread stdout', async () => {
    const handle = await temp.create()
    const size = 4 * OUTPUT_HIGH_WATER_MARK
    const job = await handle.process.spawn(`yes out | head -c ${size} & yes err | head -c ${size} >&2; wait`)
    // stderr ends only when the shell exits, which waits for the paused stdout writer: read it by count.
    let err = 0
    for await (const chunk of job.stderr) {
      err += chunk.length
      if (err >= size) break
    }
    expect(err).toBe(size)
    let out = 0
    for await (const chunk of job.stdout) out += chunk.length
    expect(out).toBe(size)
    expect((await job.wait()).exitCode).toBe(0)
  })

  it('kill() stops a producer blocked on a full pipe', async () => {
    const handle = await temp.create()
    const job = await handle.process.spawn('yes')
    await sleep(300)
    await job.kill()
    expect((await job.wait()).signal).toBeDefined()
    expect(liveGroupMembers(job.pid!)).toBe(0)
  })
})
