/**
 * The workspace projected for Grok Build. Agent skills and git skill
 * repositories become folders under `.grok/skills/` (one `SKILL.md` each).
 * MCP servers are not written to any file: an ACP client hands them to the
 * agent in `session/new` / `session/load`, so {@link grokMcpServers} builds
 * that list at run time with secrets resolved in memory only. Instructions
 * need nothing here (core writes `AGENTS.md`); file skills are already in the
 * workspace; plugin directories have no Grok Build equivalent and are skipped
 * with a warning.
 */
import { posix } from 'node:path'
import { gitSkillPath, isSecretRef, resolveSecret, shellJoin, shellQuote, type HarnessProjection, type McpSkill, type ProjectionContext, type ResolvedWorkspace, type SecretRef } from '@tanstack/ai-sandbox'

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
    for (const skill of ctx.workspace.skills) {
      if (skill.kind === 'agent') await writeAgentSkill(ctx, skill.name, skill.description, skill.content)
      else if (skill.kind === 'git') {
        const linked = await linkGitSkill(ctx, gitSkillPath(skill, ctx.handle.workspaceRoot), skill.name)
        if (linked === 0) ctx.warn(`git skill "${skill.name}" has no SKILL.md (at its root or in <dir>/SKILL.md, skills/<dir>/SKILL.md); nothing was linked into ${GROK_SKILLS_DIR}.`)
      }
    }
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

async function writeAgentSkill(ctx: ProjectionContext, name: string, description: string | undefined, content: string | undefined): Promise<void> {
  const body = content ?? `Use the "${name}" skill when the task calls for it.`
  const frontmatter = `---\nname: ${name}\ndescription: ${JSON.stringify(description ?? name)}\n---\n\n`
  await ctx.handle.fs.write(posix.join(GROK_SKILLS_DIR, name, 'SKILL.md'), `${frontmatter}${body.endsWith('\n') ? body : `${body}\n`}`)
}

/**
 * Link a cloned skills repository into `.grok/skills`: the repository itself
 * when it is one skill (SKILL.md at its root), else each folder holding a
 * SKILL.md one level down or under `skills/`.
 * @returns How many skills were linked.
 */
async function linkGitSkill(ctx: ProjectionContext, repo: string, name: string): Promise<number> {
  const skillsDir = posix.join(ctx.handle.workspaceRoot, GROK_SKILLS_DIR)
  const script = [
    `mkdir -p ${shellQuote(skillsDir)}`,
    `n=0`,
    `if [ -f ${shellQuote(`${repo}/SKILL.md`)} ]; then ln -sfn ${shellJoin([repo, `${skillsDir}/${name}`])} && n=1; else`,
    `  for f in ${shellQuote(repo)}/*/SKILL.md ${shellQuote(repo)}/skills/*/SKILL.md; do [ -f "$f" ] || continue; d=$(dirname "$f"); ln -sfn "$d" ${shellQuote(skillsDir)}/"$(basename "$d")" && n=$((n+1)); done`,
    `fi`,
    `echo $n`,
  ].join('\n')
  const result = await ctx.handle.process.exec(script)
  return result.exitCode === 0 ? Number(result.stdout.trim()) || 0 : 0
}
