/**
 * The workspace projected for Claude Code: MCP skills → `.mcp.json`, agent and
 * git skills → `.claude/skills/`, plugin directories → `--plugin-dir`.
 * Source: Claude Code's settings and skills documentation.
 * Invariant: an MCP header reaches the server as the UTF-8 bytes declared
 * (see {@link claudeMcpEntry}), whatever `${…}` it holds.
 * Design notes: docs/design/harness-adapters.md
 */
import { posix } from 'node:path'
import { writeSkillFolders, SandboxOperationError, shellQuote, writeSandboxRunFile, type HarnessProjection, type McpSkill, type ProjectionContext, type SecretRef } from '@tanstack/ai-sandbox'

/** The MCP config file Claude Code is pointed at, relative to the workspace root. */
export const CLAUDE_MCP_CONFIG = '.mcp.json'
/** Where Claude Code looks for project skills. */
export const CLAUDE_SKILLS_DIR = '.claude/skills'
/** Header values Claude Code would expand, one owner-only JSON file per server, printed by its `headersHelper`. */
export const CLAUDE_MCP_HEADERS_DIR = '.claude/tanstack-mcp-headers'

/** The Claude Code projection. */
export const claudeCodeProjection: HarnessProjection = {
  harness: 'claude-code',
  paths: [CLAUDE_MCP_CONFIG, CLAUDE_SKILLS_DIR, CLAUDE_MCP_HEADERS_DIR],
  async write(ctx) {
    await writeMcpConfig(ctx)
    await writeSkillFolders(ctx, CLAUDE_SKILLS_DIR)
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
  const helperFiles: { path: string; content: string }[] = []
  const mcpServers: Record<string, Record<string, unknown>> = {}
  for (const server of servers) {
    const headersFile = posix.join(CLAUDE_MCP_HEADERS_DIR, `${server.name}.json`)
    const { entry, helperHeaders, expanded } = claudeMcpEntry(server, ctx.resolve, posix.join(ctx.handle.workspaceRoot, headersFile))
    mcpServers[server.name] = entry
    if (helperHeaders) helperFiles.push({ path: headersFile, content: `${JSON.stringify(helperHeaders)}\n` })
    for (const what of expanded) ctx.warn(`MCP server "${server.name}": ${what} holds "\${", which Claude Code expands from its environment in .mcp.json (there is no escape), so the server gets the expanded text.`)
  }
  // It holds resolved header and env secrets: make it owner-only BEFORE the secrets go in.
  const path = shellQuote(posix.join(ctx.handle.workspaceRoot, CLAUDE_MCP_CONFIG))
  const prepared = await ctx.handle.process.exec(`umask 077 && : > ${path} && chmod 600 ${path}`)
  if (prepared.exitCode !== 0) throw new SandboxOperationError('fs-failed', ctx.handle.provider, `claude-code: could not create ${CLAUDE_MCP_CONFIG} owner-only (exit ${prepared.exitCode}): ${prepared.stderr.trim()}`)
  await ctx.handle.fs.write(CLAUDE_MCP_CONFIG, `${JSON.stringify({ mcpServers }, null, 2)}\n`)
  // The folder is made anew (mode 700, files 600), so no header file of an earlier projection, an old secret value, is left behind.
  await ctx.handle.process.exec(`rm -rf ${shellQuote(posix.join(ctx.handle.workspaceRoot, CLAUDE_MCP_HEADERS_DIR))}`)
  for (const { path: file, content } of helperFiles) await writeSandboxRunFile(ctx.handle, { file: posix.join(ctx.handle.workspaceRoot, file), content, harness: 'claude-code', what: 'the MCP header file' })
}

/** One `.mcp.json` entry, what its `headersHelper` prints (when it has one), and which stdio fields Claude Code will expand. */
export interface ClaudeMcpEntry {
  entry: Record<string, unknown>
  /** The JSON object the `headersHelper` file holds, already in {@link claudeHeaderValue} form. */
  helperHeaders?: Record<string, string>
  /** Stdio fields holding `${` (e.g. `env TOKEN`), which Claude Code expands and nothing here can escape. */
  expanded: string[]
}

/**
 * The `.mcp.json` entry of `server`, secrets resolved with `resolve`. Pure.
 * Claude Code expands `${VAR}` and `${VAR:-default}` in `.mcp.json` values
 * (2.1.x: twice, so a value passed through an environment variable is
 * expanded again) and has no escape for it. Its `headersHelper` output is
 * not expanded, though: header values holding `${` go in a JSON file that
 * the helper prints (`cat <headersFile>`); the others stay in `headers`.
 *
 * @param headersFile - Absolute path of the helper's file inside the sandbox.
 * @example
 * ```ts
 * claudeMcpEntry(mcpSkill('x', { url: 'http://h/mcp', headers: { A: '1', B: '${HOME}' } }), String, '/w/.claude/tanstack-mcp-headers/x.json')
 * // { entry: { type: 'http', url: 'http://h/mcp', headers: { A: '1' }, headersHelper: 'cat /w/.claude/tanstack-mcp-headers/x.json' }, helperHeaders: { B: '${HOME}' }, expanded: [] }
 * ```
 */
export function claudeMcpEntry(server: McpSkill, resolve: (value: string | SecretRef) => string, headersFile: string): ClaudeMcpEntry {
  if (server.transport === 'http') {
    const headers: Record<string, string> = {}
    const helper: Record<string, string> = {}
    for (const [name, value] of Object.entries(server.headers)) {
      const resolved = resolve(value)
      ;(resolved.includes('${') ? helper : headers)[name] = claudeHeaderValue(resolved)
    }
    if (Object.keys(helper).length === 0) return { entry: { type: 'http', url: server.url, headers }, expanded: [] }
    return { entry: { type: 'http', url: server.url, headers, headersHelper: `cat ${shellQuote(headersFile)}` }, helperHeaders: helper, expanded: [] }
  }
  const env = Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, resolve(v)]))
  const expanded = [
    ...(server.command.includes('${') ? ['command'] : []),
    ...server.args.flatMap((arg, i) => (arg.includes('${') ? [`args[${i}]`] : [])),
    ...Object.entries(env).flatMap(([k, v]) => (v.includes('${') ? [`env ${k}`] : [])),
  ]
  return { entry: { type: 'stdio', command: server.command, args: [...server.args], env }, expanded }
}

/**
 * A header value as Claude Code must be given it to send the value's UTF-8
 * bytes: its HTTP client sends each character up to U+00FF as that one byte
 * (and refuses anything above), so the value is written as its UTF-8 bytes,
 * one character per byte. ASCII is unchanged. Pure.
 * @example
 * ```ts
 * claudeHeaderValue('é') // '\u00c3\u00a9': the bytes C3 A9 go out
 * ```
 */
export function claudeHeaderValue(value: string): string {
  return Buffer.from(value, 'utf8').toString('latin1')
}


