/**
 * An app's whole agent Worker in `colocated` mode: one
 * `createCloudflareSandboxAgent` call that names the runner module in the
 * container (mounted at /opt/runner/runner.mjs, run with the Node binary
 * mounted at /opt/node/node), a chat() tool that runs here in the
 * Coordinator, and the two Durable Object classes wrangler binds. The
 * runner's environment (the CLI's options) comes from the `CLAUDE_OPTIONS`
 * binding, the bearer from `RUN_TOKEN`. Bundled with the built packages.
 */
import { createCloudflareSandboxAgent } from '@tanstack/ai-sandbox-cloudflare/agent'
import { lookupOrderTool } from './cloudflare-agent-tools.js'

interface Env {
  RUN_TOKEN: string
  CLAUDE_OPTIONS: string
}

const agent = createCloudflareSandboxAgent<Env>({
  mode: 'colocated',
  runner: (env) => ({ command: '/opt/node/node /opt/runner/runner.mjs', env: { CLAUDE_OPTIONS: env.CLAUDE_OPTIONS } }),
  token: (env) => env.RUN_TOKEN,
  provider: () => ({ killGraceMs: 500, timeoutMs: 150_000 }),
  tools: () => [lookupOrderTool],
  heartbeatMs: 5_000,
  cancelPollMs: 250,
})

export const { Coordinator, Sandbox } = agent
export default agent.worker
