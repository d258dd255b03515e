/**
 * The workspace projected for Codex: MCP skills → `[mcp_servers.<name>]` in
 * `.codex/config.toml` (merged with the repository's, see `codex-config.ts`),
 * agent and git skills → `.codex/skills/`; plugins are skipped with a warning.
 * Design notes: docs/design/harness-adapters.md
 */
import { posix } from 'node:path'
import { stringify } from 'smol-toml'
import { writeSkillFolders, SandboxOperationError, shellQuote, type HarnessProjection, type McpSkill, type ProjectionContext, type SecretRef } from '@tanstack/ai-sandbox'
import { mergeCodexConfig, type CodexMcpTable } from './codex-config.js'

export { CODEX_CONFIG_BLOCK } from './codex-config.js'

/** The project config Codex reads (for trusted projects), relative to the workspace root. */
export const CODEX_CONFIG = '.codex/config.toml'
/** Where Codex looks for project skills. */
export const CODEX_SKILLS_DIR = '.codex/skills'

/** The Codex projection. */
export const codexProjection: HarnessProjection = {
  harness: 'codex',
  paths: [CODEX_CONFIG, CODEX_SKILLS_DIR],
  async write(ctx) {
    await writeMcpConfig(ctx)
    await writeSkillFolders(ctx, CODEX_SKILLS_DIR)
    for (const plugin of ctx.workspace.plugins) ctx.warn(`plugin "${plugin}" skipped: the Codex adapter does not install plugins. Use skills or MCP servers instead.`)
  },
  async args(ctx) {
    return ctx.workspace.skills.some((s) => s.kind === 'mcp') ? ['--trust'] : []
  },
}

/**
 * The `[mcp_servers.*]` tables for `servers`, secrets resolved with `resolve`,
 * as TOML text (smol-toml's `stringify`). Values go in verbatim: Codex
 * substitutes nothing in them, so a header is sent byte for byte as declared
 * (UTF-8). Pure.
 * @param options - `approve`: write `default_tools_approval_mode = "approve"` in each table (the projection does when the policy allows everything). Default `false`.
 * @example
 * ```ts
 * codexMcpToml([mcpSkill('issues', { url: 'https://mcp.example.com/mcp' })], String)
 * // '[mcp_servers.issues]\nurl = "https://mcp.example.com/mcp"\n'
 * ```
 */
export function codexMcpToml(servers: readonly McpSkill[], resolve: (value: string | SecretRef) => string, options: { approve?: boolean } = {}): string {
  return stringify({ mcp_servers: codexMcpTables(servers, resolve, options.approve === true) })
}

function codexMcpTables(servers: readonly McpSkill[], resolve: (value: string | SecretRef) => string, approve = false): Record<string, CodexMcpTable> {
  const values = (record: Readonly<Record<string, string | SecretRef>>) => Object.fromEntries(Object.entries(record).map(([k, v]) => [k, resolve(v)]))
  // Headless, nobody can approve a call: under a policy that allows everything the workspace's servers are approved up front.
  const approval = approve ? { default_tools_approval_mode: 'approve' as const } : {}
  return Object.fromEntries(
    servers.map((server): [string, CodexMcpTable] => {
      if (server.transport === 'http') return [server.name, { url: server.url, ...(Object.keys(server.headers).length > 0 ? { http_headers: values(server.headers) } : {}), ...approval }]
      return [server.name, { command: server.command, args: [...server.args], ...(Object.keys(server.env).length > 0 ? { env: values(server.env) } : {}), ...approval }]
    }),
  )
}

async function writeMcpConfig(ctx: ProjectionContext): Promise<void> {
  const servers = ctx.workspace.skills.filter((s): s is McpSkill => s.kind === 'mcp')
  const { handle } = ctx
  const existing = (await handle.fs.exists(CODEX_CONFIG)) ? await handle.fs.read(CODEX_CONFIG) : undefined
  const allowsAll = ctx.policy !== undefined && ctx.policy.default === 'allow' && ctx.policy.capabilities.fileWrite
  const merge = mergeCodexConfig(existing, codexMcpTables(servers, ctx.resolve, allowsAll))
  if (merge.kind === 'keep') return
  if (merge.kind === 'invalid') {
    throw new SandboxOperationError('fs-failed', handle.provider, `codex: the repository's ${CODEX_CONFIG} cannot be merged with the workspace's MCP servers: ${merge.problem}. Codex could not load it either: fix the file in the repository (or remove it), then run again.`)
  }
  for (const name of merge.replaced) ctx.warn(`the repository's [mcp_servers.${name}] in ${CODEX_CONFIG} is replaced by the workspace definition's MCP server "${name}".`)
  // It holds resolved header and env secrets: make it owner-only BEFORE the secrets go in.
  const path = shellQuote(posix.join(handle.workspaceRoot, CODEX_CONFIG))
  const dir = shellQuote(posix.join(handle.workspaceRoot, posix.dirname(CODEX_CONFIG)))
  const prepared = await handle.process.exec(`umask 077 && mkdir -p ${dir} && touch ${path} && chmod 600 ${path}`)
  if (prepared.exitCode !== 0) throw new SandboxOperationError('fs-failed', handle.provider, `codex: could not create ${CODEX_CONFIG} owner-only (exit ${prepared.exitCode}): ${prepared.stderr.trim()}`)
  await handle.fs.write(CODEX_CONFIG, merge.text)
}


