/**
 * `defineWorkspace`: the declarative description of what a new sandbox holds
 * (source, setup steps, scripts, package manager, secrets). Validates at the
 * boundary and computes the workspace hash that joins the sandbox key.
 * Invariant: the hash covers secret NAMES only, never values.
 * Source: spec 000, "Declarative provisioning" and "Fast init".
 */
import { createHash } from 'node:crypto'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { UnknownSecretError } from '../contracts/errors.js'
import { createSecrets, isSecretRef, resolveSecret, sameSecret, type SecretRef } from '../contracts/secret-ref.js'
import { sourceSchema, type WorkspaceSource } from './sources.js'
import { recordSetupPlan, type SetupInput, type SetupStep } from './setup-plan.js'
import { skillSchema, type Skill } from './skills.js'
import { assertNoWorkspaceConflicts } from './workspace-conflicts.js'

/** Package managers a workspace can declare. */
export type PackageManager = 'npm' | 'pnpm' | 'yarn' | 'bun'

/** Input of {@link defineWorkspace}. */
export interface WorkspaceInput {
  /** Initial files. Default: an empty workspace. */
  source?: WorkspaceSource
  /**
   * Shell steps run after the source is in place, starting in the workspace
   * root, over one persistent shell (cwd and exported env carry over). An
   * array is all serial; a callback `({ serial, parallel }) => { ... }` also
   * records parallel groups. Recorded once, at definition time.
   */
  setup?: SetupInput
  /** Named commands (e.g. `test: 'pnpm test'`) adapters and apps can run. */
  scripts?: Record<string, string>
  /** The project's package manager, for adapters and instructions. */
  packageManager?: PackageManager
  /**
   * Secrets, injected into the sandbox environment under their names. Pass the
   * object from `createSecrets`, or plain strings (wrapped for you).
   */
  secrets?: Record<string, SecretRef | string>
  /**
   * Skills: `agentSkill`, `gitSkill`, `mcpSkill`, `fileSkill`. Two of a kind
   * that would land in the same place (same name, clone folder or file path),
   * an `mcpSkill` named `tanstack` (the tool bridge's) and a `fileSkill` at
   * `AGENTS.md`/`CLAUDE.md`/`GEMINI.md` together with `instructions` are refused.
   */
  skills?: readonly Skill[]
  /** Harness plugins: plugin directories inside the sandbox (absolute, or workspace-relative), without `..`. */
  plugins?: readonly string[]
  /** Project instructions, written as `AGENTS.md` (with `CLAUDE.md` and `GEMINI.md` pointing at it). */
  instructions?: string
}

/** A validated workspace definition. */
export interface ResolvedWorkspace {
  readonly source: WorkspaceSource
  /** The recorded setup plan. */
  readonly setup: readonly SetupStep[]
  readonly scripts: Readonly<Record<string, string>>
  readonly packageManager?: PackageManager
  /** Secret references by environment variable name. */
  readonly secrets: Readonly<Record<string, SecretRef>>
  readonly skills: readonly Skill[]
  readonly plugins: readonly string[]
  readonly instructions?: string
  /** Digest of everything above, with secret values left out (hex sha256). */
  readonly hash: string
}

const schema = z
  .object({
    source: sourceSchema.optional(),
    setup: z.union([z.array(z.string()), z.custom<(r: never) => void>((v) => typeof v === 'function')], { error: 'expected an array of shell commands or a callback ({ serial, parallel }) => { ... }' }).optional(),
    scripts: z.record(z.string().min(1), z.string().min(1)).optional(),
    packageManager: z.enum(['npm', 'pnpm', 'yarn', 'bun']).optional(),
    secrets: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'secret names must be environment variable names (letters, digits, _)'),
        z.union([z.string(), z.custom<SecretRef>(isSecretRef)], { error: 'expected a string or a reference from createSecrets()' }),
      )
      .optional(),
    skills: z.array(skillSchema).optional(),
    plugins: z
      .array(
        z
          .string()
          .min(1, 'a plugin is a non-empty directory path')
          .refine((p) => !p.split('/').includes('..'), 'expected a plugin directory inside the sandbox: an absolute path, or one relative to the workspace, without ".." (a relative path is joined to the workspace root and must stay inside it)'),
      )
      .optional(),
    instructions: z.string().optional(),
  })
  .strict()

/**
 * Describe the workspace of a sandbox.
 *
 * @param input - See {@link WorkspaceInput}; every field is optional.
 * @returns A frozen {@link ResolvedWorkspace} with its `hash`.
 * @throws SandboxConfigError naming the field (e.g. `workspace.source.url`, `workspace.plugins.0`, or `workspace.skills.<index>` for colliding skills).
 * @throws UnknownSecretError when the source's `secret` is not one of `secrets`.
 * @example
 * ```ts
 * const secrets = createSecrets({ GH_TOKEN: process.env.GH_TOKEN ?? '' })
 * const workspace = defineWorkspace({
 *   source: githubRepo({ repo: 'owner/app' }),
 *   setup: ['corepack enable', 'pnpm install'],
 *   scripts: { test: 'pnpm test' },
 *   secrets,
 * })
 * ```
 */
export function defineWorkspace(input: WorkspaceInput = {}): ResolvedWorkspace {
  const parsed = parseOptions(schema, input, 'workspace')
  const secrets = normaliseSecrets(parsed.secrets ?? {})
  const source = (parsed.source ?? { type: 'empty' }) as WorkspaceSource
  if (source.type === 'git' && source.secret) requireListed(source.secret, secrets, 'workspace.source.secret')
  const skills = [...(parsed.skills ?? [])] as Skill[]
  skills.forEach((skill, i) => skillSecrets(skill).forEach((ref) => requireListed(ref, secrets, `workspace.skills.${i}`)))
  assertNoWorkspaceConflicts(skills, parsed.instructions)
  const base = {
    source,
    setup: recordSetupPlan((parsed.setup ?? []) as SetupInput),
    scripts: Object.freeze({ ...(parsed.scripts ?? {}) }),
    ...(parsed.packageManager ? { packageManager: parsed.packageManager } : {}),
    secrets: Object.freeze(secrets),
    skills: Object.freeze(skills),
    plugins: Object.freeze([...(parsed.plugins ?? [])]),
    ...(parsed.instructions !== undefined ? { instructions: parsed.instructions } : {}),
  }
  return Object.freeze({ ...base, hash: hashWorkspace(base) })
}

/**
 * Resolve a workspace's secrets to `NAME=value` environment variables.
 * @throws UnknownSecretError for a reference not made by `createSecrets`.
 */
export function resolveSecretEnv(workspace: ResolvedWorkspace): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, ref] of Object.entries(workspace.secrets)) env[name] = resolveSecret(ref)
  return env
}

function normaliseSecrets(input: Record<string, SecretRef | string>): Record<string, SecretRef> {
  const out: Record<string, SecretRef> = {}
  const plain: Record<string, string> = {}
  for (const [name, value] of Object.entries(input)) {
    if (typeof value === 'string') plain[name] = value
    else {
      resolveSecret(value) // throws UnknownSecretError for a forged reference
      out[name] = value
    }
  }
  return { ...out, ...createSecrets(plain) }
}

/** The secret references a skill uses. */
function skillSecrets(skill: Skill): SecretRef[] {
  if (skill.kind === 'git') return skill.secret ? [skill.secret] : []
  if (skill.kind !== 'mcp') return []
  const values = skill.transport === 'http' ? Object.values(skill.headers) : Object.values(skill.env)
  return values.filter(isSecretRef)
}

function requireListed(ref: SecretRef, secrets: Record<string, SecretRef>, field: string): void {
  const listed = Object.values(secrets).some((candidate) => sameSecret(candidate, ref))
  if (!listed) {
    throw new UnknownSecretError(
      ref.name,
      `${field} uses secret "${ref.name}", which is not in defineWorkspace({ secrets }). Add it there so it is resolved only at bootstrap and redacted from output.`,
    )
  }
}

/** Stable JSON: sorted keys, secret references as their names. */
function stable(value: unknown): string {
  if (isSecretRef(value)) return JSON.stringify({ $secret: value.name, format: value.format })
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stable(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

function hashWorkspace(workspace: Omit<ResolvedWorkspace, 'hash'>): string {
  return createHash('sha256').update(stable(workspace)).digest('hex')
}
