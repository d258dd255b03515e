/**
 * The sandbox policy mapped onto Codex's native settings: its sandbox mode,
 * its approval policy, and execpolicy prefix rules (`.codex/rules/*.rules`),
 * which Codex enforces on every command, in every sandbox mode, including
 * `--dangerously-bypass-approvals-and-sandbox`. Pure: the adapter writes the
 * rules file. A headless run has nobody to approve anything, so `ask` rules
 * become `forbidden` and approvals are `never`. What cannot be expressed as a
 * prefix rule is reported as a warning, never silently dropped.
 */
import type { SandboxPolicy } from '@tanstack/ai-sandbox'
import { codexConfigFlag, type CodexSandboxMode } from './command.js'

/** What a policy becomes for one Codex run. */
export interface CodexPolicySettings {
  /** `--dangerously-bypass-approvals-and-sandbox`: Codex runs commands unsandboxed (the outer sandbox is the boundary). */
  bypassSandbox: boolean
  /** The Codex sandbox mode when not bypassing. */
  sandboxMode?: CodexSandboxMode
  /** `-c` overrides (`sandbox_mode`, `approval_policy`, `web_search`). */
  config: string[]
  /** The execpolicy file (Starlark `prefix_rule(...)` lines), `''` when the policy has no command rules. */
  rules: string
  /** Rules that Codex cannot enforce as written, one sentence each. */
  warnings: string[]
}

type Decision = 'forbidden' | 'allow'

/**
 * Map a policy to Codex settings.
 *
 * | policy | Codex |
 * |---|---|
 * | `default: 'allow'` | `--dangerously-bypass-approvals-and-sandbox` (the sandbox provider is the boundary) |
 * | `default: 'ask'` or `'deny'` | `sandbox_mode="read-only"`, `approval_policy="never"` |
 * | `capabilities.fileWrite: false` | `sandbox_mode="read-only"`, `approval_policy="never"` |
 * | `capabilities.network: false` | `web_search="disabled"` (shell network is the provider's: `network: 'none'`) |
 * | `commands.deny`, `commands.ask` | `prefix_rule(..., decision="forbidden")` |
 * | `commands.allow` (read-only runs only) | `prefix_rule(..., decision="allow")`: runs outside Codex's sandbox |
 *
 * @example
 * ```ts
 * codexPolicySettings(defineSandboxPolicy({ commands: { deny: ['git push *'] } })).rules
 * // 'prefix_rule(pattern=["git", "push"], decision="forbidden", justification="sandbox policy: commands.deny \\"git push *\\"")\n'
 * ```
 */
export function codexPolicySettings(policy: SandboxPolicy): CodexPolicySettings {
  const bypassSandbox = policy.default === 'allow' && policy.capabilities.fileWrite
  const config: string[] = []
  const warnings: string[] = []
  if (!bypassSandbox) config.push(codexConfigFlag('sandbox_mode', 'read-only'), codexConfigFlag('approval_policy', 'never'))
  if (!policy.capabilities.network) config.push(codexConfigFlag('web_search', 'disabled'))
  const lines = [
    ...policy.commands.deny.flatMap((glob) => ruleLine(glob, 'forbidden', 'commands.deny', warnings)),
    ...policy.commands.ask.flatMap((glob) => ruleLine(glob, 'forbidden', 'commands.ask', warnings)),
    // Under the bypass every command already runs unsandboxed: an allow rule changes nothing.
    ...(bypassSandbox ? [] : policy.commands.allow.flatMap((glob) => ruleLine(glob, 'allow', 'commands.allow', warnings))),
  ]
  return { bypassSandbox, ...(bypassSandbox ? {} : { sandboxMode: 'read-only' as const }), config, rules: lines.map((l) => `${l}\n`).join(''), warnings }
}

/** Characters that make a pattern token something other than one literal word. */
const SHELL_SYNTAX = /["'\\$`|&;<>(){}]/

/**
 * The prefix a glob is enforced with: its words up to the first one holding a
 * wildcard. Exact for `word word *`; a prefix rule also matches the command
 * with more arguments, so a pattern without a trailing `*` is widened.
 * @returns The words, or `undefined` when the glob has no literal first word or holds shell syntax.
 */
export function globToPrefix(glob: string): { prefix: string[]; widened: boolean } | undefined {
  if (glob.startsWith('script:')) return undefined
  const words = glob.trim().split(/\s+/)
  if (words.some((w) => SHELL_SYNTAX.test(w))) return undefined
  const wild = words.findIndex((w) => /[*?]/.test(w))
  if (wild === -1) return { prefix: words, widened: true }
  const prefix = words.slice(0, wild)
  if (prefix.length === 0) return undefined
  return { prefix, widened: !(wild === words.length - 1 && words[wild] === '*') }
}

function ruleLine(glob: string, decision: Decision, source: string, warnings: string[]): string[] {
  const mapped = globToPrefix(glob)
  if (!mapped) {
    warnings.push(`${source} "${glob}" cannot be expressed as a Codex prefix rule (it needs a literal first word and no quotes or shell syntax; script: patterns are not supported); Codex does not enforce it.`)
    return []
  }
  if (mapped.widened && decision === 'allow' && /[*?]/.test(glob)) {
    warnings.push(`${source} "${glob}" has a wildcard before its end; allowing the prefix "${mapped.prefix.join(' ')}" would allow more, so Codex does not get this rule.`)
    return []
  }
  if (mapped.widened && decision === 'forbidden' && /[*?]/.test(glob)) warnings.push(`${source} "${glob}" is enforced by Codex as every command starting with "${mapped.prefix.join(' ')}".`)
  const justification = `sandbox policy: ${source} ${JSON.stringify(glob)}`
  return [`prefix_rule(pattern=[${mapped.prefix.map((word) => JSON.stringify(word)).join(', ')}], decision="${decision}", justification=${JSON.stringify(justification)})`]
}
