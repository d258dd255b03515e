/**
 * An app's whole agent Worker, as the `/agent` entry's README has it: one
 * `createCloudflareSandboxAgent` call (mode `do-drives`) with the Claude Code
 * harness and a chat() tool, and the two Durable Object classes wrangler
 * binds. The CLI's options come from the `CLAUDE_OPTIONS` binding (JSON: the
 * mounted binary and the fake model's address), the bearer from `RUN_TOKEN`.
 * Bundled with the built packages.
 */
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { createCloudflareSandboxAgent } from '@tanstack/ai-sandbox-cloudflare/agent'
import { lookupOrderTool } from './cloudflare-agent-tools.js'

interface Env {
  RUN_TOKEN: string
  CLAUDE_OPTIONS: string
}

const agent = createCloudflareSandboxAgent<Env>({
  mode: 'do-drives',
  adapter: (env, { threadId }) => {
    // A factory that fails (a missing secret, a bad option): the suite checks the run ends at once, saying so.
    if (threadId === 't-adapter-throws') throw new Error('the adapter factory failed on purpose')
    return claudeCodeText('sonnet', JSON.parse(env.CLAUDE_OPTIONS) as ClaudeCodeOptions)
  },
  token: (env) => env.RUN_TOKEN,
  provider: () => ({ killGraceMs: 500, timeoutMs: 150_000 }),
  tools: () => [lookupOrderTool],
  heartbeatMs: 5_000,
  cancelPollMs: 250,
})

export const { Coordinator, Sandbox } = agent
export default agent.worker
