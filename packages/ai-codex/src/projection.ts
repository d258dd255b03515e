/**
 * The workspace projected for Codex: MCP skills become `[mcp_servers.<name>]`
 * tables in the workspace's `.codex/config.toml` (which Codex loads only for a
 * trusted project, so `args` adds `--trust`), agent skills and git skill
 * repositories become folders under `.codex/skills/`, and plugins are skipped
 * with a warning. Instructions need nothing: Codex reads `AGENTS.md`, which
 * core writes. A `.codex/config.toml` the repository already has is kept: our
 * tables go in a marked block at its end, replaced on each projection.
 */
import { posix } from 'node:path'
import { gitSkillPath, SandboxOperationError, shellJoin, shellQuote, type HarnessProjection, type McpSkill, type ProjectionContext, type SecretRef } from '@tanstack/ai-sandbox'
import { tomlKey, tomlString, tomlValue } from './command.js'

/** The project config Codex reads (for trusted projects), relative to the workspace root. */
export const CODEX_CONFIG = '.codex/config.toml'
/** Where Codex looks for project skills. */
export const CODEX_SKILLS_DIR = '.codex/skills'
/** The first line of the block this projection owns in {@link CODEX_CONFIG}; everything from it to the end is ours. */
export const CODEX_CONFIG_BLOCK = '# --- @tanstack/ai-codex: MCP servers from the workspace definition (regenerated; edit the definition, not this block) ---'

/** The Codex projection. */
export const codexProjection: HarnessProjection = {
  harness: 'codex',
  paths: [CODEX_CONFIG, CODEX_SKILLS_DIR],
  async write(ctx) {
    await writeMcpConfig(ctx)
    await writeSkills(ctx)
    for (const plugin of ctx.workspace.plugins) ctx.warn(`plugin "${plugin}" skipped: the Codex adapter does not install plugins. Use skills or MCP servers instead.`)
  },
  async args(ctx) {
    return ctx.workspace.skills.some((s) => s.kind === 'mcp') ? ['--trust'] : []
  },
}

/**
 * The `[mcp_servers.*]` tables for `servers`, secrets resolved with `resolve`. Pure.
 * @example
 * ```ts
 * codexMcpToml([mcpSkill('issues', { url: 'https://mcp.example.com/mcp' })], String)
 * // '[mcp_servers.issues]\nurl = "https://mcp.example.com/mcp"\n'
 * ```
 */
export function codexMcpToml(servers: readonly McpSkill[], resolve: (value: string | SecretRef) => string): string {
  return servers
    .map((server) => {
      const lines = [`[mcp_servers.${tomlKey(server.name)}]`]
      if (server.transport === 'http') {
        lines.push(`url = ${tomlString(server.url)}`)
        const headers = Object.entries(server.headers)
        if (headers.length > 0) lines.push(`http_headers = ${inlineTable(headers.map(([k, v]) => [k, resolve(v)]))}`)
      } else {
        lines.push(`command = ${tomlString(server.command)}`, `args = ${tomlValue(server.args)}`)
        const env = Object.entries(server.env)
        if (env.length > 0) lines.push(`env = ${inlineTable(env.map(([k, v]) => [k, resolve(v)]))}`)
      }
      return `${lines.join('\n')}\n`
    })
    .join('\n')
}

function inlineTable(entries: [string, string][]): string {
  return `{ ${entries.map(([k, v]) => `${tomlString(k)} = ${tomlString(v)}`).join(', ')} }`
}

async function writeMcpConfig(ctx: ProjectionContext): Promise<void> {
  const servers = ctx.workspace.skills.filter((s): s is McpSkill => s.kind === 'mcp')
  const { handle } = ctx
  const existing = (await handle.fs.exists(CODEX_CONFIG)) ? await handle.fs.read(CODEX_CONFIG) : undefined
  const own = existing === undefined ? '' : withoutOurBlock(existing)
  if (servers.length === 0) {
    // Nothing to declare: take back a block an earlier definition wrote, and leave the repository's file alone otherwise.
    if (existing !== undefined && own !== existing) await handle.fs.write(CODEX_CONFIG, own)
    return
  }
  // It holds resolved header and env secrets: make it owner-only BEFORE the secrets go in.
  const path = shellQuote(posix.join(handle.workspaceRoot, CODEX_CONFIG))
  const dir = shellQuote(posix.join(handle.workspaceRoot, posix.dirname(CODEX_CONFIG)))
  const prepared = await handle.process.exec(`umask 077 && mkdir -p ${dir} && touch ${path} && chmod 600 ${path}`)
  if (prepared.exitCode !== 0) throw new SandboxOperationError('fs-failed', handle.provider, `codex: could not create ${CODEX_CONFIG} owner-only (exit ${prepared.exitCode}): ${prepared.stderr.trim()}`)
  const base = own.trim() === '' ? '' : `${own.replace(/\n+$/, '')}\n\n`
  await handle.fs.write(CODEX_CONFIG, `${base}${CODEX_CONFIG_BLOCK}\n${codexMcpToml(servers, ctx.resolve)}`)
}

/** The file without the block this projection wrote (which always runs to the end). */
function withoutOurBlock(text: string): string {
  const at = text.indexOf(CODEX_CONFIG_BLOCK)
  if (at === -1) return text
  const kept = text.slice(0, at).replace(/\n+$/, '')
  return kept === '' ? '' : `${kept}\n`
}

async function writeSkills(ctx: ProjectionContext): Promise<void> {
  const { handle } = ctx
  for (const skill of ctx.workspace.skills) {
    if (skill.kind === 'agent') {
      const body = skill.content ?? `Use the "${skill.name}" skill when the task calls for it.`
      const frontmatter = `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.description ?? skill.name)}\n---\n\n`
      await handle.fs.write(posix.join(CODEX_SKILLS_DIR, skill.name, 'SKILL.md'), `${frontmatter}${body.endsWith('\n') ? body : `${body}\n`}`)
    } else if (skill.kind === 'git') {
      const linked = await linkGitSkill(ctx, gitSkillPath(skill, handle.workspaceRoot), skill.name)
      if (linked === 0) ctx.warn(`git skill "${skill.name}" has no SKILL.md (at its root or in <dir>/SKILL.md, skills/<dir>/SKILL.md); nothing was linked into ${CODEX_SKILLS_DIR}.`)
    }
  }
}

/**
 * Link a cloned skills repository into `.codex/skills`: the repository itself
 * when it is one skill (SKILL.md at its root), else each folder holding a
 * SKILL.md one level down or under `skills/`.
 * @returns How many skills were linked.
 */
async function linkGitSkill(ctx: ProjectionContext, repo: string, name: string): Promise<number> {
  const skillsDir = posix.join(ctx.handle.workspaceRoot, CODEX_SKILLS_DIR)
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
