/**
 * An app's whole agent Worker, as the `/agent` entry's README has it: one
 * `createCloudflareSandboxAgent` call (mode `do-drives`) with the Claude Code
 * harness and a chat() tool, and the two Durable Object classes wrangler
 * binds. The CLI's options come from the `CLAUDE_OPTIONS` binding (JSON: the
 * mounted binary and the fake model's address), the bearer from `RUN_TOKEN`.
 * Bundled with the built packages.
 */
import { toolDefinition } from '@tanstack/ai'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { createCloudflareSandboxAgent } from '@tanstack/ai-sandbox-cloudflare/agent'

interface Env {
  RUN_TOKEN: string
  CLAUDE_OPTIONS: string
}

const lookup = toolDefinition({
  name: 'lookup_order',
  description: 'Look up an order by id.',
  inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
}).server(async (args) => {
  const { orderId } = args as { orderId: string }
  // A SLOW order never answers by itself (the cancel case stops the run while it waits).
  if (orderId.startsWith('SLOW')) await new Promise((resolve) => setTimeout(resolve, 10 * 60_000))
  return { orderId, status: 'shipped', runtime: (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? 'unknown' }
})

const agent = createCloudflareSandboxAgent<Env>({
  mode: 'do-drives',
  adapter: (env) => claudeCodeText('sonnet', JSON.parse(env.CLAUDE_OPTIONS) as ClaudeCodeOptions),
  token: (env) => env.RUN_TOKEN,
  provider: () => ({ killGraceMs: 500, timeoutMs: 150_000 }),
  tools: () => [lookup],
  heartbeatMs: 5_000,
  cancelPollMs: 250,
})

export const { Coordinator, Sandbox } = agent
export default agent.worker
