/**
 * Skill declarations, what a workspace brings besides its files: `agentSkill`,
 * `gitSkill`, `mcpSkill` and `fileSkill`. Each harness projects them into its
 * CLI's format, skipping with a warning what it has no concept of.
 * Source: spec 000, "Declarative provisioning". Design notes: docs/design/workspace.md
 */
import { posix } from 'node:path'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { gitRefSchema } from '../git/ref-name.js'
import { isSecretRef, type SecretRef } from '../contracts/secret-ref.js'

/** A named skill: instructions the agent can load when relevant. */
export interface AgentSkill {
  readonly kind: 'agent'
  /** Letters, digits, `-` and `_`. */
  readonly name: string
  /** One line saying when to use the skill. Default: the name. */
  readonly description?: string
  /** The skill's instructions (markdown). Default: a pointer to the name. */
  readonly content?: string
}

/** A git repository of skills, cloned into the sandbox at bootstrap. */
export interface GitSkill {
  readonly kind: 'git'
  /** Folder name: the repository's basename. */
  readonly name: string
  readonly url: string
  readonly ref?: string
  readonly secret?: SecretRef
  /** Absolute path inside the sandbox to clone into. Default `<workspace>/.tanstack-skills/<name>`. */
  readonly into?: string
}

/** An MCP server the agent can use. Header and env values may be secret references (`bearer(secrets.X)`). */
export type McpSkill =
  | { readonly kind: 'mcp'; readonly name: string; readonly transport: 'http'; readonly url: string; readonly headers: Readonly<Record<string, string | SecretRef>> }
  | { readonly kind: 'mcp'; readonly name: string; readonly transport: 'stdio'; readonly command: string; readonly args: readonly string[]; readonly env: Readonly<Record<string, string | SecretRef>> }

/** A file written into the workspace at bootstrap. */
export interface FileSkill {
  readonly kind: 'file'
  /** Workspace-relative path. */
  readonly path: string
  readonly content: string
}

/** Any skill. */
export type Skill = AgentSkill | GitSkill | McpSkill | FileSkill

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/
const value = z.union([z.string(), z.custom<SecretRef>(isSecretRef)], { error: 'expected a string or a secret reference such as bearer(secrets.TOKEN)' })

/**
 * A named skill.
 * @example
 * ```ts
 * agentSkill('release-notes', { description: 'Writing release notes', content: 'Group changes by package...' })
 * ```
 */
export function agentSkill(name: string, options: { description?: string; content?: string } = {}): AgentSkill {
  const parsed = parseOptions(z.object({ name: z.string().regex(NAME, 'use letters, digits, "-" and "_"'), description: z.string().optional(), content: z.string().optional() }).strict(), { name, ...options }, 'agentSkill')
  return Object.freeze({ kind: 'agent', ...parsed })
}

/**
 * A repository of skills, cloned at bootstrap.
 * @param input - `repo` as `owner/name` (GitHub) or a git URL; `secret` for private HTTPS repositories; `ref`; `into` (absolute path inside the sandbox).
 * @example
 * ```ts
 * gitSkill({ repo: 'acme/agent-skills', secret: secrets.GH, ref: 'v2' })
 * ```
 */
export function gitSkill(input: { repo: string; secret?: SecretRef; ref?: string; into?: string }): GitSkill {
  const parsed = parseOptions(
    z
      .object({
        repo: z.string().min(1, 'expected "owner/name" or a git URL'),
        secret: z.custom<SecretRef>(isSecretRef, { message: 'expected a secret reference from createSecrets()' }).optional(),
        ref: gitRefSchema.optional(),
        into: z.string().refine((p) => p.startsWith('/') && !p.split('/').includes('..'), 'expected an absolute path inside the sandbox, without ".."').optional(),
      })
      .strict(),
    input,
    'gitSkill',
  )
  const url = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(parsed.repo) ? `https://github.com/${parsed.repo}.git` : parsed.repo
  const name = posix.basename(url.replace(/\.git$/, '').replace(/[:/]+$/, ''))
  if (!NAME.test(name)) parseOptions(z.never({ error: `cannot derive a folder name from "${parsed.repo}"` }), name, 'gitSkill.repo')
  return Object.freeze({ kind: 'git', name, url, ...(parsed.ref ? { ref: parsed.ref } : {}), ...(parsed.secret ? { secret: parsed.secret } : {}), ...(parsed.into ? { into: parsed.into } : {}) })
}

/**
 * An MCP server: remote (`{ url, headers }`) or local (`{ command, args, env }`).
 * @example
 * ```ts
 * mcpSkill('issues', { url: 'https://mcp.example.com/mcp', headers: { Authorization: bearer(secrets.ISSUES) } })
 * mcpSkill('fs', { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] })
 * ```
 */
export function mcpSkill(name: string, server: { url: string; headers?: Record<string, string | SecretRef> } | { command: string; args?: string[]; env?: Record<string, string | SecretRef> }): McpSkill {
  const parsed = parseOptions(
    z.object({
      name: z.string().regex(NAME, 'use letters, digits, "-" and "_"'),
      server: z.union(
        [
          z.object({ url: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }), headers: z.record(z.string(), value).optional() }).strict(),
          z.object({ command: z.string().min(1), args: z.array(z.string()).optional(), env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), value).optional() }).strict(),
        ],
        { error: 'expected { url, headers? } for a remote server or { command, args?, env? } for a local one' },
      ),
    }),
    { name, server },
    'mcpSkill',
  )
  const s = parsed.server as Record<string, unknown>
  if ('url' in s) return Object.freeze({ kind: 'mcp', name: parsed.name, transport: 'http', url: s.url as string, headers: Object.freeze({ ...((s.headers as Record<string, string | SecretRef>) ?? {}) }) })
  return Object.freeze({ kind: 'mcp', name: parsed.name, transport: 'stdio', command: s.command as string, args: Object.freeze([...((s.args as string[]) ?? [])]), env: Object.freeze({ ...((s.env as Record<string, string | SecretRef>) ?? {}) }) })
}

/**
 * A file written into the workspace at bootstrap.
 * @example
 * ```ts
 * fileSkill({ path: '.hints.md', content: 'Prefer pnpm.' })
 * ```
 */
export function fileSkill(input: { path: string; content: string }): FileSkill {
  const parsed = parseOptions(
    z.object({ path: z.string().min(1).refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), 'expected a workspace-relative path without ".."'), content: z.string() }).strict(),
    input,
    'fileSkill',
  )
  return Object.freeze({ kind: 'file', ...parsed })
}

/** The zod schema of a skill object (made by the factories above). */
export const skillSchema = z.custom<Skill>(
  (v) => typeof v === 'object' && v !== null && ['agent', 'git', 'mcp', 'file'].includes((v as { kind?: string }).kind ?? ''),
  { message: 'expected a skill made by agentSkill, gitSkill, mcpSkill or fileSkill' },
)
