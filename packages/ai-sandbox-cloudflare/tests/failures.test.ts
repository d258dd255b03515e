/**
 * Failures a Cloudflare user meets, inside workerd against stand-in
 * containers: a binding to a Durable Object of another class is a config
 * error naming the binding and the fix; a sandbox that sat idle past its
 * `sleepAfter` first checks its container on the next call, so a container
 * that does not come back fails within `timeoutMs` and one that came back
 * empty is `not-found`, instead of the SDK's retries of about 150 s. Skips
 * naming the engine or image when missing, and fails instead under
 * REQUIRE_DOCKER=1.
 */
import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError } from '@tanstack/ai-sandbox'
import { describeWithDocker } from '@testing/support/docker-engine'
import { cloudflareTestLab } from './helpers/lab.js'

const lab = await cloudflareTestLab({ durableObjects: { Other: 'OtherObject' } })

const docker = (...args: string[]) => execFileSync('docker', args, { encoding: 'utf8' }).trim()

describeWithDocker('cloudflare provider failures', lab.reason, () => {
  lab.cleanupAfter()

  it("a binding to another Durable Object class: SandboxConfigError on cloudflareSandbox.binding, naming the Sandbox class and its export", async () => {
    const provider = await lab.provider({ bindingName: 'Other' })
    const error = await provider.create().then(() => undefined, (thrown: unknown) => thrown)
    expect(SandboxConfigError.isInstance(error) && error.field, `a SandboxConfigError, got ${String(error)}`).toBe('cloudflareSandbox.binding')
    expect((error as Error).message).toMatch(/not the SDK's Sandbox class .*class_name: 'Sandbox'.*export \{ Sandbox \}/)
    expect(await lab.containers(), 'nothing was started').toEqual([])
  })

  it('after sleepAfter of idling, a container that does not answer fails the next call within timeoutMs', async () => {
    const provider = await lab.provider({ sleepAfter: 10, timeoutMs: 8_000 })
    const handle = await provider.create()
    const [container] = await lab.containers()
    try {
      expect((await handle.process.exec('echo up')).stdout).toBe('up\n')
      // A frozen container answers nothing, as one that cannot come back after an idle stop.
      docker('pause', container!)
      await sleep(11_000)
      const error = await handle.process.exec('echo again').then(() => undefined, (thrown: unknown) => thrown)
      expect(SandboxOperationError.isInstance(error) && error.reason, `a SandboxOperationError, got ${String(error)}`).toBe('unreachable')
      expect((error as Error).message).toMatch(/sat idle longer than sleepAfter, .* did not answer within 8000 ms\. Retry; .*keepAlive: true/)
    } finally {
      if (docker('inspect', '-f', '{{.State.Paused}}', container!) === 'true') docker('unpause', container!)
      await handle.destroy()
    }
  }, 120_000)
})
