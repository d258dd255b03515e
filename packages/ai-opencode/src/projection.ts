/**
 * The workspace projected for OpenCode: one `opencode.json` in its own folder
 * (`.tanstack-opencode/`, loaded with `OPENCODE_CONFIG`). Invariant: every
 * header, env and command value arrives exactly as declared
 * (`verbatim-value.ts`); a secret is written as `{env:NAME}` whenever it can be.
 * Design notes: docs/design/harness-adapters.md
 */
import { posix } from 'node:path'
import {
  agentSkillMarkdown,
  gitSkillPath,
  isSecretRef,
  resolveSecret,
  sameSecret,
  SandboxOperationError,
  shellQuote,
  writeSandboxRunFile,
  type HarnessProjection,
  type McpSkill,
  type ProjectionContext,
  type ResolvedWorkspace,
  type SecretRef,
} from '@tanstack/ai-sandbox'
import { envSubstitutable, unsendableHeader, verbatimValue } from './verbatim-value.js'

/** The folder the projection owns, relative to the workspace root. */
export const OPENCODE_PROJECTION_DIR = '.tanstack-opencode'
/** The projected config file, relative to the workspace root (loaded with `OPENCODE_CONFIG`). */
export const OPENCODE_PROJECTED_CONFIG = `${OPENCODE_PROJECTION_DIR}/opencode.json`
/** Where agent skills are written, relative to the workspace root. */
export const OPENCODE_SKILLS_DIR = `${OPENCODE_PROJECTION_DIR}/skills`
/** Where values the config reads with `{file:…}` are kept (owner-only), relative to the workspace root. */
export const OPENCODE_VALUES_DIR = `${OPENCODE_PROJECTION_DIR}/values`

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
        await handle.fs.write(posix.join(OPENCODE_SKILLS_DIR, skill.name, 'SKILL.md'), agentSkillMarkdown(skill))
        if (!skillPaths.includes(posix.join(root, OPENCODE_SKILLS_DIR))) skillPaths.push(posix.join(root, OPENCODE_SKILLS_DIR))
      } else if (skill.kind === 'git') {
        const path = gitSkillPath(skill, root)
        const found = await handle.process.exec(`find ${shellQuote(path)} -name SKILL.md 2>/dev/null | head -n 1`)
        if (found.stdout.trim() === '') ctx.warn(`git skill "${skill.name}" has no SKILL.md under ${path}; OpenCode will find no skill there.`)
        skillPaths.push(path)
      }
    }
    const servers = workspace.skills.filter((s): s is McpSkill => s.kind === 'mcp')
    const files = valueFiles(root)
    const config: Record<string, unknown> = { $schema: 'https://opencode.ai/config.json' }
    if (servers.length > 0) config.mcp = Object.fromEntries(servers.map((server) => [server.name, mcpEntry(server, ctx, files)]))
    if (skillPaths.length > 0) config.skills = { paths: skillPaths }
    // It may hold secret values that {env:NAME} cannot carry: make it owner-only BEFORE anything goes in.
    const path = shellQuote(posix.join(root, OPENCODE_PROJECTED_CONFIG))
    const prepared = await handle.process.exec(`umask 077 && mkdir -p ${shellQuote(posix.join(root, OPENCODE_PROJECTION_DIR))} && : > ${path} && chmod 600 ${path}`)
    if (prepared.exitCode !== 0) throw new SandboxOperationError('fs-failed', handle.provider, `opencode: could not create ${OPENCODE_PROJECTED_CONFIG} owner-only (exit ${prepared.exitCode}): ${prepared.stderr.trim()}`)
    await handle.fs.write(OPENCODE_PROJECTED_CONFIG, `${JSON.stringify(config, null, 2)}\n`)
    // Values read with {file:…}, secrets among them: the folder is made anew (mode 700, files 600), so no earlier value is left behind.
    await handle.process.exec(`rm -rf ${shellQuote(posix.join(root, OPENCODE_VALUES_DIR))}`)
    for (const file of files.list) await writeSandboxRunFile(handle, { ...file, harness: 'opencode', what: 'the MCP value file' })
  },
}

/**
 * Whether the projection writes a config file for this workspace (it has an
 * MCP, agent or git skill), i.e. whether the adapter points `OPENCODE_CONFIG` at it.
 */
export function hasProjectedConfig(workspace: ResolvedWorkspace): boolean {
  return workspace.skills.some((s) => s.kind === 'mcp' || s.kind === 'agent' || s.kind === 'git')
}

/** Files for values the config reads with `{file:…}`: absolute `file` in the sandbox, exact `content`. */
interface ValueFiles {
  next: (server: string) => string
  list: { file: string; content: string }[]
}

function valueFiles(root: string): ValueFiles {
  let n = 0
  const list: ValueFiles['list'] = []
  return { list, next: (server) => posix.join(root, OPENCODE_VALUES_DIR, `${server}.${n++}`) }
}

function mcpEntry(server: McpSkill, ctx: ProjectionContext, files: ValueFiles): Record<string, unknown> {
  const literal = (value: string) => {
    const out = verbatimValue(value, () => files.next(server.name))
    if (out.file) files.list.push({ file: out.file.path, content: out.file.content })
    return out.text
  }
  const values = (record: Readonly<Record<string, string | SecretRef>>) => Object.fromEntries(Object.entries(record).map(([k, v]) => [k, configValue(v, ctx, literal)]))
  if (server.transport === 'http') {
    for (const [name, value] of Object.entries(server.headers)) {
      if (unsendableHeader(ctx.resolve(value))) ctx.warn(`MCP server "${server.name}": header "${name}" has non-ASCII characters that OpenCode's HTTP client refuses to send (it sends them only in values of up to 12 characters, none above U+00FF), so the server will not connect. Send such a value percent-encoded or base64-encoded.`)
    }
    return { type: 'remote', url: server.url, headers: values(server.headers), enabled: true }
  }
  return { type: 'local', command: [server.command, ...server.args].map(literal), environment: values(server.env), enabled: true }
}

/**
 * A header or env value as it goes into the file. A reference to a workspace
 * secret becomes `{env:NAME}` (`Bearer {env:NAME}` for `bearer()`): the CLI
 * gets the value from the environment the sandbox gives every process. A
 * secret value `{env:NAME}` cannot carry unchanged (see `envSubstitutable`),
 * an empty one (which the sandbox leaves unset) and every plain value are
 * written as they are, through {@link verbatimValue}.
 */
function configValue(value: string | SecretRef, ctx: ProjectionContext, literal: (value: string) => string): string {
  if (!isSecretRef(value)) return literal(value)
  // The environment variable the sandbox sets for this secret: its key in defineWorkspace({ secrets }).
  const [name, declared] = Object.entries(ctx.workspace.secrets).find(([, ref]) => sameSecret(ref, value)) ?? []
  const raw = declared ? resolveSecret(declared) : undefined
  if (name && raw && envSubstitutable(raw) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    return value.format === 'bearer' ? `Bearer {env:${name}}` : `{env:${name}}`
  }
  return literal(ctx.resolve(value))
}
