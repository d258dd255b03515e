/**
 * The example's whole Worker: one `createCloudflareSandboxAgent` call in
 * `do-drives` mode (Claude Code in a Cloudflare sandbox per run, one chat()
 * tool that runs in the run's Coordinator Durable Object), the two Durable
 * Object classes wrangler.jsonc binds, and a `fetch` that serves the page at
 * `/` and hands every other request to the agent's routes. Everything that
 * differs between a deploy and the local launcher is a binding (secrets and
 * vars of wrangler.jsonc), so this file runs unchanged in both.
 */
import { toolDefinition } from '@tanstack/ai'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { createSecrets, defineWorkspace } from '@tanstack/ai-sandbox'
import { createCloudflareSandboxAgent } from '@tanstack/ai-sandbox-cloudflare/agent'
import page from './page.html'

/** The bindings the Worker reads besides its Durable Object namespaces (`Coordinator`, `Sandbox`), which the agent finds by name. */
export interface Env {
  /** Secret: the bearer token every route but the page requires. */
  RUN_TOKEN: string
  /** Secret: the agent's Anthropic API key. It reaches the sandbox as a workspace secret, scrubbed from every event. */
  ANTHROPIC_API_KEY: string
  /** Var: the model Claude Code asks for. */
  CLAUDE_MODEL: string
  /** Var, optional: where the agent sends its model calls (a gateway; the local launcher's mock model). Default: Anthropic's API. */
  ANTHROPIC_BASE_URL?: string
  /** Var, optional: the CLI's path in the container. Default `claude` on the PATH, where the Dockerfile installs it. */
  CLAUDE_EXECUTABLE?: string
}

/** The order service of this example: a table in the Worker, standing for your D1, KV or API behind a binding. */
const ORDERS: Record<string, { status: string; carrier: string; shippedOn: string; tracking: string }> = {
  'A-17': { status: 'shipped', carrier: 'DHL', shippedOn: '2025-06-02', tracking: 'JD014600006281230000' },
  'B-42': { status: 'packing', carrier: 'UPS', shippedOn: '', tracking: '' },
}

/** The one chat() tool. It runs in the Coordinator, never in the container; the agent calls it through the tool bridge. */
const lookupOrder = toolDefinition({
  name: 'lookup_order',
  description: "Look up an order by its id (such as A-17): its status, carrier, shipping date and tracking number.",
  inputSchema: { type: 'object', properties: { orderId: { type: 'string', description: 'The order id, e.g. A-17' } }, required: ['orderId'] },
}).server(async (args) => {
  const { orderId } = args as { orderId: string }
  const order = ORDERS[orderId.trim().toUpperCase()]
  // The runtime that answered: `Cloudflare-Workers` in workerd and on Cloudflare, proof that the tool ran in the Worker.
  const answeredBy = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? 'unknown'
  return order ? { orderId, ...order, answeredBy } : { orderId, status: 'unknown', answeredBy }
})

const agent = createCloudflareSandboxAgent<Env>({
  mode: 'do-drives',
  adapter: (env) =>
    claudeCodeText(env.CLAUDE_MODEL || 'sonnet', {
      maxTurns: 20,
      ...(env.CLAUDE_EXECUTABLE ? { executable: env.CLAUDE_EXECUTABLE } : {}),
      ...(env.ANTHROPIC_BASE_URL ? { env: { ANTHROPIC_BASE_URL: env.ANTHROPIC_BASE_URL } } : {}),
    }),
  token: (env) => env.RUN_TOKEN,
  // A fresh sandbox per run (the agent's default), with the API key as a secret of its workspace.
  sandbox: (env) => ({ workspace: defineWorkspace({ secrets: createSecrets({ ANTHROPIC_API_KEY: env.ANTHROPIC_API_KEY }) }) }),
  // A cold container start (an image with the CLI in it) can take a minute; give the first call two.
  provider: () => ({ timeoutMs: 120_000 }),
  tools: () => [lookupOrder],
})

/** The Durable Object classes wrangler.jsonc names: `Coordinator` drives runs, `Sandbox` is the SDK's container class. */
export const { Coordinator, Sandbox } = agent

/** Headers of the page: it is never framed, never cached, and sends no referrer (its first address carries the token). */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}

export default {
  /** `/` is the page (no token needed: it holds no data); everything else is the agent's (`/runs…`, bearer-checked). */
  async fetch(request: Request, env: Env): Promise<Response> {
    const { pathname } = new URL(request.url)
    if (pathname === '/' && (request.method === 'GET' || request.method === 'HEAD')) return new Response(request.method === 'GET' ? page : null, { headers: PAGE_HEADERS })
    return agent.worker.fetch(request, env)
  },
}
