/**
 * The live lane's Worker (`pnpm test:live`, deployed by kits.live.test.ts
 * with wrangler): the test Worker's RPC methods (tests/helpers/worker.ts)
 * served from one Durable Object, `KitRpc`, since a deployed Worker may answer
 * each request from another isolate and the handles, processes and aborts of
 * a run must live in one place. The RPC routes need the run's bearer token
 * (`LIVE_TOKEN`, set at deploy): the Worker is public. Preview URLs, public by
 * design (their hostname carries the port's token), are served without it.
 */
import { DurableObject } from 'cloudflare:workers'
import { proxyToSandbox } from '@cloudflare/sandbox'
import { TestRpcTarget, type Env as RpcEnv } from '../tests/helpers/worker.js'

export { Sandbox } from '../src/index.js'

/** The namespace of {@link KitRpc}, as far as the Worker uses it. */
interface KitRpcNamespace {
  idFromName: (name: string) => unknown
  get: (id: unknown) => { fetch: (request: Request) => Promise<Response> }
}

interface Env extends RpcEnv {
  KitRpc: KitRpcNamespace
  LIVE_TOKEN: string
}

/** The one home of the lane's handles: every RPC and `/__preview/` request of a run reaches this object. */
export class KitRpc extends DurableObject<Env> {
  private readonly target = new TestRpcTarget(this.env)

  override async fetch(request: Request): Promise<Response> {
    return this.target.fetch(request)
  }
}

/** The presented bearer token equals the deployed one, compared over SHA-256 digests in constant time. */
async function authorized(header: string | null, token: string): Promise<boolean> {
  if (!token || !header?.startsWith('Bearer ')) return false
  const digest = async (text: string) => new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
  const [a, b] = await Promise.all([digest(header.slice('Bearer '.length)), digest(token)])
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!
  return difference === 0
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const preview = await proxyToSandbox(request as never, env as never)
    if (preview) return preview
    const { pathname } = new URL(request.url)
    if (!pathname.startsWith('/__rpc/') && !pathname.startsWith('/__preview/')) return new Response('not found', { status: 404 })
    if (pathname.startsWith('/__rpc/') && !(await authorized(request.headers.get('authorization'), env.LIVE_TOKEN))) return new Response('unauthorized', { status: 401 })
    return env.KitRpc.get(env.KitRpc.idFromName('kits')).fetch(request)
  },
}
