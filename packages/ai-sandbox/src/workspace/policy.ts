/**
 * The sandbox permission policy: a default verdict plus allow/ask/deny
 * pattern lists for commands, file paths and tools. Core only validates and
 * carries it; each harness adapter maps it onto its CLI's native permission
 * settings. Source: spec 000, "Policy".
 */
import { z } from 'zod'
import { createCapability } from '@tanstack/ai'
import { parseOptions } from '../definition/validate.js'

/** A verdict for an action the agent wants to take. */
export type PolicyDecision = 'allow' | 'ask' | 'deny'

/** Pattern lists per verdict. Patterns are the harness's own syntax (e.g. `git push *`). */
export interface PolicyRules {
  allow?: readonly string[]
  ask?: readonly string[]
  deny?: readonly string[]
}

/** A validated sandbox policy. */
export interface SandboxPolicy {
  /** Verdict for anything no rule matches. Default `'allow'`. */
  readonly default: PolicyDecision
  /** Shell command patterns. */
  readonly commands: Required<PolicyRules>
  /** File path patterns (reads and edits). */
  readonly paths: Required<PolicyRules>
  /** Tool name patterns (the harness's own tools and bridged tools). */
  readonly tools: Required<PolicyRules>
}

/** Input of {@link defineSandboxPolicy}. */
export interface SandboxPolicyInput {
  default?: PolicyDecision
  commands?: PolicyRules
  paths?: PolicyRules
  tools?: PolicyRules
}

const rules = z
  .object({
    allow: z.array(z.string().min(1)).optional(),
    ask: z.array(z.string().min(1)).optional(),
    deny: z.array(z.string().min(1)).optional(),
  })
  .strict()
  .optional()

const policySchema = z
  .object({
    default: z.enum(['allow', 'ask', 'deny']).optional(),
    commands: rules,
    paths: rules,
    tools: rules,
  })
  .strict()

function fill(input: PolicyRules | undefined): Required<PolicyRules> {
  return { allow: [...(input?.allow ?? [])], ask: [...(input?.ask ?? [])], deny: [...(input?.deny ?? [])] }
}

/**
 * Validate a policy and fill in defaults.
 *
 * @param input - `default` (default `'allow'`) and optional `commands`/`paths`/`tools` lists.
 * @returns A frozen {@link SandboxPolicy}.
 * @throws SandboxConfigError naming the bad field.
 * @example
 * ```ts
 * const policy = defineSandboxPolicy({ default: 'ask', commands: { deny: ['rm -rf *'] } })
 * ```
 */
export function defineSandboxPolicy(input: SandboxPolicyInput = {}): SandboxPolicy {
  const parsed = parseOptions(policySchema, input, 'policy')
  return Object.freeze({
    default: parsed.default ?? 'allow',
    commands: fill(parsed.commands),
    paths: fill(parsed.paths),
    tools: fill(parsed.tools),
  })
}

/** The active policy, provided by `withSandbox`; harness adapters read it. */
export const SandboxPolicyCapability = createCapability<SandboxPolicy>()('sandbox-policy')

/** Accessors of {@link SandboxPolicyCapability}. */
export const [getSandboxPolicy, provideSandboxPolicy] = SandboxPolicyCapability
