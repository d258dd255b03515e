/**
 * What only the Cloudflare provider does, inside workerd against stand-in
 * containers: preview URLs for a port (through the Worker's own
 * proxyToSandbox), the ports Cloudflare refuses, and a sandbox whose
 * container was replaced by an empty one failing with a typed error instead
 * of running commands in an empty box, the control server answering 5xx, a
 * container that never starts, and a destroyed handle that never
 * starts a container again (any SDK call would). Skips naming the engine or image when
 * missing, and fails instead under REQUIRE_DOCKER=1.
 */
import { expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError } from '@tanstack/ai-sandbox'
import type { SpawnedProcess } from '@tanstack/ai-sandbox'
import { describeWithDocker } from '@testing/support/docker-engine'
import { cloudflareTestLab } from './helpers/lab.js'

const lab = await cloudflareTestLab()
/** A lab whose image has no control server (BusyBox's shell exits at once): its containers never become ready. */
const broken = await cloudflareTestLab({ image: 'tanstack-sandbox-busybox:latest' })

describeWithDocker('cloudflare provider', lab.reason ?? broken.reason, () => {
  lab.cleanupAfter()

  it('a container that never starts: create fails within timeoutMs with a typed error that says what to check', async () => {
    try {
      const provider = await broken.provider({ timeoutMs: 8_000 })
      const started = Date.now()
      const error = await provider.create().then(() => undefined, (thrown: unknown) => thrown)
      expect(SandboxOperationError.isInstance(error) && error.reason, `a SandboxOperationError, got ${String(error)}`).toBe('unreachable')
      expect((error as Error).message).toMatch(/did not answer within 8000 ms .*raise cloudflareSandbox\(\{ timeoutMs \}\); check the image in wrangler\.jsonc/)
      // The SDK alone would keep retrying a starting container for about 150 s; the provider's bound answers first.
      expect(Date.now() - started).toBeLessThan(60_000)
    } finally {
      // At once, not after the suite: the SDK in that lab keeps restarting the broken container for about 150 s.
      await broken.close()
      expect(await broken.containers(), 'the broken lab removed its containers').toEqual([])
    }
  }, 120_000)

  it('ports.connect gives a preview URL the Worker routes to a server in the sandbox; 3000 and ports below 1024 are refused', async () => {
    const provider = await lab.provider()
    const handle = await provider.create()
    try {
      const server = await handle.process.spawn(`node -e "require('http').createServer((q,r)=>r.end('preview-ok '+q.url)).listen(8080,()=>console.log('up'))"`)
      const stdout = server.stdout[Symbol.asyncIterator]()
      expect((await stdout.next()).value).toContain('up')
      const connection = (await handle.ports.connect(8080)) as { previewUrl?: string; port: number }
      const preview = new URL(connection.previewUrl!)
      expect(preview.hostname, 'the URL names the port and the sandbox under the preview hostname').toMatch(new RegExp(`^8080-${handle.id}-[a-z0-9_]+\\.localhost$`))
      const response = await lab.lab.dispatchFetch(`${preview.origin}/hello?q=1`)
      expect(await response.text()).toBe('preview-ok /hello?q=1')
      for (const port of [3000, 80]) {
        const refused = await handle.ports.connect(port).then(() => undefined, (error: unknown) => error)
        expect(SandboxConfigError.isInstance(refused) && refused.field, `connect(${port}) is a config error`).toBe('ports.connect.port')
      }
      await server.kill()
    } finally {
      await handle.destroy()
    }
  }, 180_000)

  it('kill and wait report what the process did: SIGINT reaches an INT trap, a TERM trap\'s own exit, SIGKILL for a TERM-ignoring process; commands past 128 KiB run', async () => {
    const provider = await lab.provider()
    const handle = await provider.create()
    try {
      const ready = async (process: SpawnedProcess) => {
        let seen = ''
        for await (const text of process.stdout) if ((seen += text).includes('ready')) return
      }
      const [interrupted, trapped, stubborn] = await Promise.all([
        handle.process.spawn("trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.1; done"),
        handle.process.spawn("trap 'echo got-term; exit 5' TERM; echo ready; while :; do sleep 0.1; done"),
        handle.process.spawn("trap '' TERM; echo ready; sleep 203"),
      ])
      await Promise.all([ready(interrupted), ready(trapped), ready(stubborn)])
      await Promise.all([interrupted.kill('SIGINT'), trapped.kill(), stubborn.kill()])
      expect(await interrupted.wait(), 'the INT trap ran and its exit is reported').toEqual({ exitCode: 7 })
      expect(await trapped.wait(), 'the TERM trap ran and its exit is reported').toEqual({ exitCode: 5 })
      expect(await stubborn.wait(), 'a process that ignores SIGTERM needed SIGKILL').toEqual({ exitCode: 137, signal: 'SIGKILL' })
      const long = 'x'.repeat(300_000)
      expect((await handle.process.exec(`echo ${long} | wc -c`)).stdout, 'a 300 KB exec').toBe('300001\n')
      const spawned = await handle.process.spawn(`printf %s ${long} | wc -c`)
      expect(await spawned.wait(), 'a 300 KB spawn').toEqual({ exitCode: 0 })
      expect((await handle.process.exec("find ~/.tanstack-sandbox/jobs -name '*.cmd'")).stdout, 'no command file is left').toBe('')
    } finally {
      await handle.destroy()
    }
  }, 180_000)

  it('the control server answering HTTP 500: a typed error that names it and what to do; the next call works', async () => {
    const provider = await lab.provider()
    const handle = await provider.create()
    try {
      // The stand-in answers its next request with a 500 (its fault file), as an overloaded or crashing control server would.
      await handle.process.exec('printf "500 1" > /tmp/cloudflare-standin-fault')
      const error = await handle.process.exec('echo hi').then(() => undefined, (thrown: unknown) => thrown)
      expect(SandboxOperationError.isInstance(error) && error.reason, `a SandboxOperationError of the exec, got ${String(error)}`).toBe('exec-failed')
      expect((error as Error).message).toMatch(/control server in the container failed \(SandboxError: stand-in fault: answering HTTP 500.*\)\. Retry the call; if it keeps failing, .*destroy the sandbox and create a new one/)
      expect((await handle.process.exec('echo again')).stdout, 'the sandbox works again').toBe('again\n')
    } finally {
      await handle.destroy()
    }
  }, 180_000)

  it('a sandbox whose container was replaced by an empty one fails with not-found instead of running in the empty box', async () => {
    const provider = await lab.provider()
    const handle = await provider.create()
    await handle.fs.write('kept.txt', 'x')
    // Another provider instance (another isolate, say) destroys the container; this handle does not know.
    await (await lab.provider()).destroy({ id: handle.id })
    try {
      const error = await handle.process.exec('ls').then(() => undefined, (thrown: unknown) => thrown)
      expect(SandboxOperationError.isInstance(error) && error.reason, 'exec on the empty replacement container').toBe('not-found')
      expect((error as Error).message).toMatch(/restarted empty/)
      const read = await handle.fs.read('kept.txt').then(() => undefined, (thrown: unknown) => thrown)
      expect(SandboxOperationError.isInstance(read) && read.reason, 'fs on the empty replacement container').toBe('not-found')
      expect(await provider.resume({ id: handle.id }), 'resume finds no sandbox there').toBeNull()
    } finally {
      await handle.destroy()
    }
  }, 180_000)

  it('after destroy() no call of the handle starts a container again, a read\'s cleanup included', async () => {
    const provider = await lab.provider()
    const handle = await provider.create()
    await handle.fs.write('x.txt', 'x')
    await handle.destroy()
    expect(await lab.containers(), 'destroy removed the container').toEqual([])
    for (const call of [() => handle.fs.read('x.txt'), () => handle.fs.readBytes('x.txt'), () => handle.fs.write('y.txt', 'y'), () => handle.process.exec('true')]) {
      const error = await call().then(() => undefined, (thrown: unknown) => thrown)
      expect(SandboxOperationError.isInstance(error) && error.reason).toBe('destroyed')
    }
    expect(await lab.containers(), 'no call after destroy() started a container').toEqual([])
  }, 180_000)
})
