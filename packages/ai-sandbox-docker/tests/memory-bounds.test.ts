// Memory bounds of the Docker provider's spawn: stdout and stderr share one
// exec connection, which is paused while unread output passes the high-water
// mark (the process then blocks on its next write) and resumed as the
// consumer reads. A consumer reading only one of the two streams never
// deadlocks, and a consumer that starts late still gets every byte.
import { describe, expect, it } from 'vitest'
import { OUTPUT_HIGH_WATER_MARK } from '../src/text-stream.js'
import { DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describeWithDocker('docker memory bounds', await dockerMissing([DEBIAN_IMAGE], { needsBridge: false }), () => {
  const sandboxes = useDockerSandboxes('memory-bounds')
  const image = DEBIAN_IMAGE

  describe('spawn backpressure', () => {
    it('pauses an unread spawn, and a late reader gets every byte', async () => {
      const handle = await sandboxes.create({ image, network: 'bridge' })
      const loops = 160 // 64 KiB each: 10 MiB unthrottled
      const job = await handle.process.spawn(`i=0; while [ $i -lt ${loops} ]; do head -c 65536 /dev/zero | tr '\\0' a; i=$((i+1)); echo $i > /tmp/count; done`)
      const count = async () => Number((await handle.process.exec('cat /tmp/count 2>/dev/null || echo 0')).stdout.trim() || '0')
      await expect.poll(count, { timeout: 20_000 }).toBeGreaterThan(0)
      // Wait until the producer is blocked (two readings 500 ms apart agree): a hang guard, not a timing claim.
      let written = await count()
      await expect
        .poll(async () => {
          const before = written
          await sleep(500)
          written = await count()
          return written === before
        }, { timeout: 30_000 })
        .toBe(true)
      // Paused: the mark plus what the engine and the kernel buffer (a few MiB at most) fit.
      expect(written, `${written} of ${loops} chunks written while nobody read`).toBeLessThan(loops / 2)
      let length = 0
      let wrong = 0
      for await (const chunk of job.stdout) {
        length += chunk.length
        if (!/^a*$/.test(chunk)) wrong++
      }
      expect((await job.wait()).exitCode).toBe(0)
      expect(wrong).toBe(0)
      expect(length).toBe(loops * 65536)
    })

    it('a reader of stdout alone is never stalled by unread stderr on the shared connection', async () => {
      const handle = await sandboxes.create({ image, network: 'bridge' })
      const size = 4 * OUTPUT_HIGH_WATER_MARK
      const job = await handle.process.spawn(`yes err | head -c ${size} >&2; yes out | head -c ${size}`)
      let out = 0
      for await (const chunk of job.stdout) out += chunk.length
      expect(out).toBe(size)
      let err = 0
      for await (const chunk of job.stderr) err += chunk.length
      expect(err).toBe(size)
      expect((await job.wait()).exitCode).toBe(0)
    })

    it('a paused process that dies from outside does not stall the next exec (the connection is released)', async () => {
      const handle = await sandboxes.create({ image, network: 'bridge' })
      const job = await handle.process.spawn('yes tsbx-outside')
      await sleep(500)
      await handle.process.exec('pkill -f tsbx-outside')
      expect((await handle.process.exec('echo still-working')).stdout).toBe('still-working\n')
      await job.wait()
    })

    it('kill() stops a producer blocked on the paused connection', async () => {
      const handle = await sandboxes.create({ image, network: 'bridge' })
      const job = await handle.process.spawn('yes tsbx-blocked')
      await sleep(500)
      await job.kill()
      expect((await job.wait()).exitCode).not.toBe(0)
      expect((await handle.process.exec('ps -eo args')).stdout).not.toMatch(/yes tsbx-blocked/)
    })
  })
})
