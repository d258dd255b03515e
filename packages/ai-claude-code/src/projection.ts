/**
 * The workspace projected for Claude Code: MCP skills become `.mcp.json`
 * (loaded with `--mcp-config`), agent skills and git skill repositories become
 * folders under `.claude/skills/`, and plugin directories become
 * `--plugin-dir` flags. Instructions need nothing here: Claude Code reads
 * `CLAUDE.md`, which core points at `AGENTS.md`. File skills are already in
 * the workspace. Source: Claude Code's settings and skills documentation.
 */
import { posix } from 'node:path'
import { gitSkillPath, SandboxOperationError, shellJoin, shellQuote, type HarnessProjection, type McpSkill, type ProjectionContext } from '@tanstack/ai-sandbox'

/** The MCP config file Claude Code is pointed at, relative to the workspace root. */
export const CLAUDE_MCP_CONFIG = '.mcp.json'
/** Where Claude Code looks for project skills. */
export const CLAUDE_SKILLS_DIR = '.claude/skills'

/** The Claude Code projection. */
export const claudeCodeProjection: HarnessProjection = {
  harness: 'claude-code',
  paths: [CLAUDE_MCP_CONFIG, CLAUDE_SKILLS_DIR],
  async write(ctx) {
    await writeMcpConfig(ctx)
    await writeSkills(ctx)
  },
  async args(ctx) {
    const args: string[] = []
    if (ctx.workspace.skills.some((s) => s.kind === 'mcp')) args.push('--mcp-config', posix.join(ctx.handle.workspaceRoot, CLAUDE_MCP_CONFIG))
    for (const plugin of ctx.workspace.plugins) {
      const dir = plugin.startsWith('/') ? plugin : posix.join(ctx.handle.workspaceRoot, plugin)
      const found = await ctx.handle.process.exec(`test -d ${shellQuote(dir)}`)
      if (found.exitCode === 0) args.push('--plugin-dir', dir)
      else ctx.warn(`plugin "${plugin}" is not a directory in the sandbox (${dir}); skipped. Install it in setup and list its directory.`)
    }
    return args
  },
}

async function writeMcpConfig(ctx: ProjectionContext): Promise<void> {
  const servers = ctx.workspace.skills.filter((s): s is McpSkill => s.kind === 'mcp')
  if (servers.length === 0) return
  const mcpServers = Object.fromEntries(servers.map((server) => [server.name, mcpEntry(server, ctx)]))
  // It holds resolved header and env secrets: make it owner-only BEFORE the secrets go in.
  const path = shellQuote(posix.join(ctx.handle.workspaceRoot, CLAUDE_MCP_CONFIG))
  const prepared = await ctx.handle.process.exec(`umask 077 && : > ${path} && chmod 600 ${path}`)
  if (prepared.exitCode !== 0) throw new SandboxOperationError('fs-failed', ctx.handle.provider, `claude-code: could not create ${CLAUDE_MCP_CONFIG} owner-only (exit ${prepared.exitCode}): ${prepared.stderr.trim()}`)
  await ctx.handle.fs.write(CLAUDE_MCP_CONFIG, `${JSON.stringify({ mcpServers }, null, 2)}\n`)
}

function mcpEntry(server: McpSkill, ctx: ProjectionContext): Record<string, unknown> {
  if (server.transport === 'http') {
    return { type: 'http', url: server.url, headers: Object.fromEntries(Object.entries(server.headers).map(([k, v]) => [k, ctx.resolve(v)])) }
  }
  return { type: 'stdio', command: server.command, args: [...server.args], env: Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, ctx.resolve(v)])) }
}

async function writeSkills(ctx: ProjectionContext): Promise<void> {
  const { handle } = ctx
  for (const skill of ctx.workspace.skills) {
    if (skill.kind === 'agent') {
      const body = skill.content ?? `Use the "${skill.name}" skill when the task calls for it.`
      const frontmatter = `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.description ?? skill.name)}\n---\n\n`
      await handle.fs.write(posix.join(CLAUDE_SKILLS_DIR, skill.name, 'SKILL.md'), `${frontmatter}${body.endsWith('\n') ? body : `${body}\n`}`)
    } else if (skill.kind === 'git') {
      const linked = await linkGitSkill(ctx, gitSkillPath(skill, handle.workspaceRoot), skill.name)
      if (linked === 0) ctx.warn(`git skill "${skill.name}" has no SKILL.md (at its root or in <dir>/SKILL.md, skills/<dir>/SKILL.md); nothing was linked into ${CLAUDE_SKILLS_DIR}.`)
    }
  }
}

/**
 * Link a cloned skills repository into `.claude/skills`: the repository itself
 * when it is one skill (SKILL.md at its root), else each folder holding a
 * SKILL.md one level down or under `skills/`.
 * @returns How many skills were linked.
 */
async function linkGitSkill(ctx: ProjectionContext, repo: string, name: string): Promise<number> {
  const skillsDir = posix.join(ctx.handle.workspaceRoot, CLAUDE_SKILLS_DIR)
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
