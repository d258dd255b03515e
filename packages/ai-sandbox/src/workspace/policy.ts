/**
 * The sandbox permission policy: a default verdict, allow/ask/deny glob
 * patterns for shell commands, and capability gates for file writes and
 * network. Core validates it, evaluates commands against it
 * (`evaluateCommand`) and carries it to harness adapters, which map it onto
 * their CLI's native permissions. Source: spec 000, "Policy".
 */
import { z } from 'zod'
import { createCapability } from '@tanstack/ai'
import { parseOptions } from '../definition/validate.js'

/** A verdict for an action the agent wants to take. */
export type PolicyDecision = 'allow' | 'ask' | 'deny'

/** Glob patterns per verdict. `*` matches any run of characters, `?` one; a pattern must match the WHOLE command. */
export interface CommandRules {
  allow?: readonly string[]
  ask?: readonly string[]
  deny?: readonly string[]
}

/** Gates for whole classes of actions. */
export interface PolicyCapabilities {
  /** May the agent create, edit or delete files through its own tools? Default `true`. */
  fileWrite?: boolean
  /** May the agent use network tools (web fetch/search)? Default `true`. Shell commands need the provider's network policy. */
  network?: boolean
}

/** A validated sandbox policy. */
export interface SandboxPolicy {
  /** Verdict for a command no rule matches. */
  readonly default: PolicyDecision
  readonly commands: { readonly allow: readonly string[]; readonly ask: readonly string[]; readonly deny: readonly string[] }
  readonly capabilities: { readonly fileWrite: boolean; readonly network: boolean }
}

/** Input of {@link defineSandboxPolicy}. */
export interface SandboxPolicyInput {
  /** Default `'allow'`: the sandbox is the boundary. */
  default?: PolicyDecision
  commands?: CommandRules
  capabilities?: PolicyCapabilities
}

const patterns = z.array(z.string().trim().min(1, 'patterns are non-empty globs such as "git push *"')).optional()
const policySchema = z
  .object({
    default: z.enum(['allow', 'ask', 'deny']).optional(),
    commands: z.object({ allow: patterns, ask: patterns, deny: patterns }).strict().optional(),
    capabilities: z.object({ fileWrite: z.boolean().optional(), network: z.boolean().optional() }).strict().optional(),
  })
  .strict()

/**
 * Validate a policy and fill in defaults.
 *
 * @param input - `default` (default `'allow'`), `commands` glob lists, `capabilities` gates (both default `true`).
 * @returns A frozen {@link SandboxPolicy}.
 * @throws SandboxConfigError naming the bad field, e.g. `policy.commands.deny.0`.
 * @example
 * ```ts
 * const policy = defineSandboxPolicy({
 *   default: 'allow',
 *   commands: { deny: ['git push *', 'rm -rf /*'], ask: ['npm publish*'] },
 *   capabilities: { network: false },
 * })
 * ```
 */
export function defineSandboxPolicy(input: SandboxPolicyInput = {}): SandboxPolicy {
  const parsed = parseOptions(policySchema, input, 'policy')
  return Object.freeze({
    default: parsed.default ?? 'allow',
    commands: Object.freeze({
      allow: Object.freeze([...(parsed.commands?.allow ?? [])]),
      ask: Object.freeze([...(parsed.commands?.ask ?? [])]),
      deny: Object.freeze([...(parsed.commands?.deny ?? [])]),
    }),
    capabilities: Object.freeze({ fileWrite: parsed.capabilities?.fileWrite ?? true, network: parsed.capabilities?.network ?? true }),
  })
}

/** Options of {@link evaluateCommand}. */
export interface EvaluateCommandOptions {
  /** The workspace's `scripts` (name → command). */
  scripts?: Readonly<Record<string, string>>
}

/**
 * Decide a shell command under a policy. Patterns are globs anchored to the
 * whole (trimmed, whitespace-collapsed) command. Precedence: deny, then ask,
 * then allow, then the default. Script-aware: a pattern `script:<name>`
 * matches the script's own command and the package-manager forms that run it
 * (`npm run <name>`, `pnpm <name>`, `yarn <name>`, `bun run <name>`), and a
 * command that runs a script is also checked under the script's command.
 *
 * @returns `'allow'`, `'ask'` or `'deny'`.
 * @example
 * ```ts
 * evaluateCommand(policy, 'git push origin main') // 'deny' with deny: ['git push *']
 * ```
 */
export function evaluateCommand(policy: SandboxPolicy, command: string, options: EvaluateCommandOptions = {}): PolicyDecision {
  const candidates = commandForms(command, options.scripts ?? {})
  const matches = (list: readonly string[]) => list.some((pattern) => candidates.some((form) => matchPattern(pattern, form, options.scripts ?? {})))
  if (matches(policy.commands.deny)) return 'deny'
  if (matches(policy.commands.ask)) return 'ask'
  if (matches(policy.commands.allow)) return 'allow'
  return policy.default
}

const normalise = (command: string) => command.trim().replace(/\s+/g, ' ')

/** The command itself plus, when it runs a workspace script, that script's command. */
function commandForms(command: string, scripts: Readonly<Record<string, string>>): string[] {
  const forms = [normalise(command)]
  const name = scriptInvoked(forms[0]!, scripts)
  if (name !== undefined) forms.push(normalise(scripts[name]!))
  return forms
}

/** The script name `command` runs through a package manager, if any. */
function scriptInvoked(command: string, scripts: Readonly<Record<string, string>>): string | undefined {
  const match = /^(?:npm run|npm|pnpm run|pnpm|yarn run|yarn|bun run) (\S+)$/.exec(command)
  return match && Object.hasOwn(scripts, match[1]!) ? match[1] : undefined
}

function matchPattern(pattern: string, command: string, scripts: Readonly<Record<string, string>>): boolean {
  if (pattern.startsWith('script:')) {
    const name = pattern.slice('script:'.length)
    return Object.hasOwn(scripts, name) && (command === normalise(scripts[name]!) || scriptInvoked(command, scripts) === name)
  }
  return globToRegExp(normalise(pattern)).test(command)
}

/** Anchored glob: `*` any run (spaces included), `?` one character, everything else literal. */
export function globToRegExp(glob: string): RegExp {
  const body = [...glob].map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[.+^${}()|[\]\\/]/g, '\\$&'))).join('')
  return new RegExp(`^${body}$`, 's')
}

/** The active policy, provided by `withSandbox`; harness adapters read it. */
export const SandboxPolicyCapability = createCapability<SandboxPolicy>()('sandbox-policy')

/** Accessors of {@link SandboxPolicyCapability}. */
export const [getSandboxPolicy, provideSandboxPolicy] = SandboxPolicyCapability
