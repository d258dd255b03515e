/**
 * The workspace projected for Grok Build: agent and git skills become folders
 * under `.grok/skills/`. MCP servers go in no file: {@link grokMcpServers}
 * builds the list for `session/new` / `session/load`, secrets resolved in
 * memory only. Plugins have no equivalent and are skipped with a warning.
 * Design notes: docs/design/harness-adapters.md
 */
import { writeSkillFolders, isSecretRef, resolveSecret, type HarnessProjection, type McpSkill, type ResolvedWorkspace, type SecretRef } from '@tanstack/ai-sandbox'

/** Where Grok Build looks for project skills. */
export const GROK_SKILLS_DIR = '.grok/skills'

/** An MCP server as ACP's `session/new` takes it (`McpServer`). */
export type GrokMcpServer =
  | { type: 'http'; name: string; url: string; headers: { name: string; value: string }[] }
  | { name: string; command: string; args: string[]; env: { name: string; value: string }[] }

/** The Grok Build projection. */
export const grokBuildProjection: HarnessProjection = {
  harness: 'grok-build',
  paths: [GROK_SKILLS_DIR],
  async write(ctx) {
    await writeSkillFolders(ctx, GROK_SKILLS_DIR)
    for (const plugin of ctx.workspace.plugins) ctx.warn(`plugin "${plugin}" skipped: Grok Build has no plugin directories. Ship it as an agent skill or an MCP server instead.`)
  },
}

/**
 * The workspace's MCP servers in ACP's `McpServer` shape, secrets resolved.
 * HTTP servers are left out with a warning when the agent did not announce
 * `mcpCapabilities.http`. Call at session start; never store the result.
 * @example
 * ```ts
 * grokMcpServers(workspace, { http: true }, console.warn) // [{ type: 'http', name: 'issues', url, headers: [...] }]
 * ```
 */
export function grokMcpServers(workspace: Pick<ResolvedWorkspace, 'skills'>, agent: { http: boolean }, warn: (message: string) => void): GrokMcpServer[] {
  const resolve = (value: string | SecretRef) => (isSecretRef(value) ? resolveSecret(value) : value)
  const out: GrokMcpServer[] = []
  for (const server of workspace.skills.filter((s): s is McpSkill => s.kind === 'mcp')) {
    if (server.transport === 'http') {
      if (!agent.http) {
        warn(`MCP server "${server.name}" skipped: the agent did not announce HTTP MCP support (mcpCapabilities.http).`)
        continue
      }
      out.push({ type: 'http', name: server.name, url: server.url, headers: Object.entries(server.headers).map(([name, value]) => ({ name, value: resolve(value) })) })
    } else {
      out.push({ name: server.name, command: server.command, args: [...server.args], env: Object.entries(server.env).map(([name, value]) => ({ name, value: resolve(value) })) })
    }
  }
  return out
}


