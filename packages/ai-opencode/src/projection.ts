/**
 * The workspace projected for OpenCode: one `opencode.json` in a folder of
 * its own (`.tanstack-opencode/`), which the adapter loads with
 * `OPENCODE_CONFIG`, so a project's own `opencode.json` is never touched and
 * still wins where both set the same key. MCP skills become `mcp` servers,
 * agent skills become `SKILL.md` folders listed in `skills.paths`, and git
 * skill repositories are listed there as they are. Instructions need nothing:
 * OpenCode reads `AGENTS.md` itself. Plugins are skipped with a warning.
 * Invariant: a workspace secret is written as `{env:NAME}`, never as its value,
 * whenever OpenCode's textual substitution can carry it safely.
 */
import { posix } from 'node:path'
import {
  gitSkillPath,
  isSecretRef,
  resolveSecret,
  sameSecret,
  SandboxOperationError,
  shellQuote,
  type HarnessProjection,
  type McpSkill,
  type ProjectionContext,
  type ResolvedWorkspace,
  type SecretRef,
} from '@tanstack/ai-sandbox'

/** The folder the projection owns, relative to the workspace root. */
export const OPENCODE_PROJECTION_DIR = '.tanstack-opencode'
/** The projected config file, relative to the workspace root (loaded with `OPENCODE_CONFIG`). */
export const OPENCODE_PROJECTED_CONFIG = `${OPENCODE_PROJECTION_DIR}/opencode.json`
/** Where agent skills are written, relative to the workspace root. */
export const OPENCODE_SKILLS_DIR = `${OPENCODE_PROJECTION_DIR}/skills`

/** The OpenCode projection. */
export const opencodeProjection: HarnessProjection = {
  harness: 'opencode',
  paths: [OPENCODE_PROJECTION_DIR],
  async write(ctx) {
    const { handle, workspace } = ctx
    for (const plugin of workspace.plugins) ctx.warn(`plugin "${plugin}" skipped: OpenCode plugins are JavaScript modules named in its own config ("plugin"), not plugin directories.`)
    if (!hasProjectedConfig(workspace)) return
    const root = handle.workspaceRoot
    const skillPaths: string[] = []
    for (const skill of workspace.skills) {
      if (skill.kind === 'agent') {
        const body = skill.content ?? `Use the "${skill.name}" skill when the task calls for it.`
        const frontmatter = `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.description ?? skill.name)}\n---\n\n`
        await handle.fs.write(posix.join(OPENCODE_SKILLS_DIR, skill.name, 'SKILL.md'), `${frontmatter}${body.endsWith('\n') ? body : `${body}\n`}`)
        if (!skillPaths.includes(posix.join(root, OPENCODE_SKILLS_DIR))) skillPaths.push(posix.join(root, OPENCODE_SKILLS_DIR))
      } else if (skill.kind === 'git') {
        const path = gitSkillPath(skill, root)
        const found = await handle.process.exec(`find ${shellQuote(path)} -name SKILL.md 2>/dev/null | head -n 1`)
        if (found.stdout.trim() === '') ctx.warn(`git skill "${skill.name}" has no SKILL.md under ${path}; OpenCode will find no skill there.`)
        skillPaths.push(path)
      }
    }
    const servers = workspace.skills.filter((s): s is McpSkill => s.kind === 'mcp')
    const config: Record<string, unknown> = { $schema: 'https://opencode.ai/config.json' }
    if (servers.length > 0) config.mcp = Object.fromEntries(servers.map((server) => [server.name, mcpEntry(server, ctx)]))
    if (skillPaths.length > 0) config.skills = { paths: skillPaths }
    // It may hold secret values that {env:NAME} cannot carry: make it owner-only BEFORE anything goes in.
    const path = shellQuote(posix.join(root, OPENCODE_PROJECTED_CONFIG))
    const prepared = await handle.process.exec(`umask 077 && mkdir -p ${shellQuote(posix.join(root, OPENCODE_PROJECTION_DIR))} && : > ${path} && chmod 600 ${path}`)
    if (prepared.exitCode !== 0) throw new SandboxOperationError('fs-failed', handle.provider, `opencode: could not create ${OPENCODE_PROJECTED_CONFIG} owner-only (exit ${prepared.exitCode}): ${prepared.stderr.trim()}`)
    await handle.fs.write(OPENCODE_PROJECTED_CONFIG, `${JSON.stringify(config, null, 2)}\n`)
  },
}

/**
 * Whether the projection writes a config file for this workspace (it has an
 * MCP, agent or git skill), i.e. whether the adapter points `OPENCODE_CONFIG` at it.
 */
export function hasProjectedConfig(workspace: ResolvedWorkspace): boolean {
  return workspace.skills.some((s) => s.kind === 'mcp' || s.kind === 'agent' || s.kind === 'git')
}

function mcpEntry(server: McpSkill, ctx: ProjectionContext): Record<string, unknown> {
  const values = (record: Readonly<Record<string, string | SecretRef>>) => Object.fromEntries(Object.entries(record).map(([k, v]) => [k, configValue(v, ctx)]))
  if (server.transport === 'http') return { type: 'remote', url: server.url, headers: values(server.headers), enabled: true }
  return { type: 'local', command: [server.command, ...server.args], environment: values(server.env), enabled: true }
}

/**
 * A header or env value as it goes into the file. A reference to a workspace
 * secret becomes `{env:NAME}` (`Bearer {env:NAME}` for `bearer()`): the CLI
 * gets the value from the environment the sandbox gives every process.
 * OpenCode substitutes `{env:…}` into the file's text without escaping, so a
 * value with a quote, backslash or control character would break the JSON;
 * such a value (and an empty one, which the sandbox leaves unset) is written
 * resolved, into the owner-only file.
 */
function configValue(value: string | SecretRef, ctx: ProjectionContext): string {
  if (!isSecretRef(value)) return value
  // The environment variable the sandbox sets for this secret: its key in defineWorkspace({ secrets }).
  const [name, declared] = Object.entries(ctx.workspace.secrets).find(([, ref]) => sameSecret(ref, value)) ?? []
  const raw = declared ? resolveSecret(declared) : undefined
  if (name && raw && substitutable(raw) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    return value.format === 'bearer' ? `Bearer {env:${name}}` : `{env:${name}}`
  }
  return ctx.resolve(value)
}

/** Whether a value can go into a JSON string unescaped: no quote, backslash or control character. */
function substitutable(value: string): boolean {
  return [...value].every((ch) => ch !== '"' && ch !== '\\' && ch.charCodeAt(0) >= 0x20)
}
