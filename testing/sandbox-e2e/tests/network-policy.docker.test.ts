/**
 * A policy that denies network blocks it at create (spec 000 "Policy"):
 * defineSandbox asks the provider for `network: 'blocked'`, and a provider
 * with `networkPolicy` creates the sandbox without a route out. Docker (the
 * container gets network none even though the provider's default network is
 * a bridge) and Daytona on its stand-in (networkBlockAll at create, no ports).
 * A policy that allows network changes nothing. No container is left.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { defineSandbox, defineSandboxPolicy, type SandboxProvider } from '@tanstack/ai-sandbox'
import { daytonaSandbox } from '@tanstack/ai-sandbox-daytona'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { DAYTONA_IMAGE, startDaytonaStandin } from '@testing/daytona-standin'
import { DEBIAN_IMAGE, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'

const RUN = { 'tanstack-test.run': `network-policy-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([DEBIAN_IMAGE, DAYTONA_IMAGE], { needsBridge: false })
const standin = reason === null ? await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: RUN }) : undefined

/** The network interfaces inside the sandbox. */
const INTERFACES = 'ls /sys/class/net | sort | tr "\\n" " "'

describeWithDocker('a policy that denies network blocks it at create', reason, () => {
  afterAll(async () => {
    await standin?.close()
    await pruneDockerSandboxes({ labels: RUN })
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`)).toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  const providers: [string, () => SandboxProvider][] = [
    ['docker', () => dockerSandbox({ image: DEBIAN_IMAGE, labels: RUN, killGraceMs: 500 })],
    ['daytona', () => daytonaSandbox({ apiKey: 'test', apiUrl: standin?.apiUrl ?? 'http://127.0.0.1:9', killGraceMs: 500 })],
  ]
  for (const [name, make] of providers) {
    describe(name, () => {
      it('no network with capabilities.network false; the default network otherwise', async () => {
        const provider = make()
        const denied = defineSandbox({ id: `np-deny-${name}`, provider, lifecycle: { reuse: 'none', snapshot: 'none' }, policy: defineSandboxPolicy({ capabilities: { network: false } }) })
        const allowed = defineSandbox({ id: `np-allow-${name}`, provider, lifecycle: { reuse: 'none', snapshot: 'none' } })
        const blocked = await denied.ensure({ threadId: 't-deny', runId: 'r1' })
        const open = await allowed.ensure({ threadId: 't-allow', runId: 'r1' })
        try {
          expect((await blocked.process.exec(INTERFACES)).stdout.trim(), 'only the loopback interface').toBe('lo')
          expect(blocked.capabilities.ports, 'nothing to connect to').toBe(false)
          expect((await open.process.exec(INTERFACES)).stdout.trim()).not.toBe('lo')
          expect(open.capabilities.ports).toBe(true)
        } finally {
          await blocked.destroy()
          await open.destroy()
        }
      })
    })
  }
})
