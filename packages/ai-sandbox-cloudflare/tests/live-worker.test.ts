// The live lane's Worker (live/worker.ts, what `pnpm test:live` deploys with
// wrangler) in workerd under Miniflare, so the deployable code is proven here
// too: RPC calls without the run's bearer token, or with a wrong one, are
// refused with 401; with it, a provider inside the `KitRpc` Durable Object
// creates a sandbox on a stand-in container, runs a command and destroys it.
// What only a deploy proves (Cloudflare's own container image, the RPC
// transport between isolates) stays in the live lane.
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { describeWithDocker } from '@testing/support/docker-engine'
import { cloudflareTestLab } from './helpers/lab.js'

const token = randomBytes(24).toString('base64url')
const lab = await cloudflareTestLab({
  entry: fileURLToPath(new URL('../live/worker.ts', import.meta.url)),
  durableObjects: { KitRpc: 'KitRpc' },
  bindings: { LIVE_TOKEN: token },
  headers: { authorization: `Bearer ${token}` },
})

describeWithDocker("the live lane's Worker in workerd", lab.reason, () => {
  lab.cleanupAfter()

  it('refuses RPC without the bearer token or with a wrong one', async () => {
    const call = (headers: Record<string, string>) => fetch(new URL('__rpc/open', lab.lab.url), { method: 'POST', headers, body: '[]' })
    expect((await call({})).status).toBe(401)
    expect((await call({ authorization: `Bearer ${token}x` })).status).toBe(401)
    expect((await call({ authorization: token })).status, 'the token without the Bearer scheme').toBe(401)
    expect((await fetch(new URL('elsewhere', lab.lab.url))).status).toBe(404)
  })

  it('with the token, the provider inside its Durable Object creates, runs and destroys a sandbox', async () => {
    const provider = await lab.provider()
    const handle = await provider.create()
    try {
      const result = await handle.process.exec('echo "live worker: $((6 * 7))"')
      expect(result).toMatchObject({ exitCode: 0, stdout: 'live worker: 42\n' })
    } finally {
      await handle.destroy()
    }
    expect(await lab.containers(), 'destroy() removed the container').toEqual([])
  })
})
