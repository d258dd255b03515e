/**
 * The sandbox policy mapped onto Codex's native settings: sandbox mode,
 * approval policy and execpolicy prefix rules (`.codex/rules/*.rules`), which
 * Codex enforces in every mode. Pure: the adapter writes the rules file.
 * What cannot be a prefix rule is reported as a warning, never dropped.
 * Design notes: docs/design/harness-adapters.md
 */
import { expandScriptPattern, type SandboxPolicy } from '@tanstack/ai-sandbox'
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

/** Options of {@link codexPolicySettings}. */
export interface CodexPolicyOptions {
  /** The workspace's `scripts` (name → command), to expand `script:<name>` rules. Default none. */
  scripts?: Readonly<Record<string, string>>
  /**
   * Whether the provider promises isolation (`capabilities.isolated`). Only
   * then does an allow-everything policy become
   * `--dangerously-bypass-approvals-and-sandbox`, which Codex documents as
   * meant for environments sandboxed from outside; otherwise Codex keeps its
   * own `workspace-write` sandbox (network per the policy) with no approvals,
   * and the workspace's MCP servers are approved in their projected tables.
   * Default `false`.
   */
  isolated?: boolean
}

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
 * | `script:<name>` in any list | one prefix rule per command of `expandScriptPattern` (the script's command, `npm run <name>`, `pnpm <name>`, …); a warning for a script command with quotes or shell syntax, and for an unknown script |
 *
 * @param policy - The validated sandbox policy.
 * @param options - `scripts` for `script:<name>` rules. Default none.
 * @returns The settings; `warnings` lists every rule Codex does not enforce as written.
 * @example
 * ```ts
 * codexPolicySettings(defineSandboxPolicy({ commands: { deny: ['git push *'] } })).rules
 * // 'prefix_rule(pattern=["git", "push"], decision="forbidden", justification="sandbox policy: commands.deny \\"git push *\\"")\n'
 * ```
 */
export function codexPolicySettings(policy: SandboxPolicy, options: CodexPolicyOptions = {}): CodexPolicySettings {
  const scripts = options.scripts ?? {}
  const allowsAll = policy.default === 'allow' && policy.capabilities.fileWrite
  const bypassSandbox = allowsAll && options.isolated === true
  const sandboxMode: CodexSandboxMode | undefined = bypassSandbox ? undefined : allowsAll ? 'workspace-write' : 'read-only'
  const config: string[] = []
  const warnings: string[] = []
  if (sandboxMode) config.push(codexConfigFlag('sandbox_mode', sandboxMode), codexConfigFlag('approval_policy', 'never'))
  if (sandboxMode === 'workspace-write' && policy.capabilities.network) config.push(codexConfigFlag('sandbox_workspace_write.network_access', true))
  if (!policy.capabilities.network) config.push(codexConfigFlag('web_search', 'disabled'))
  const rules = (list: readonly string[], decision: Decision, source: string) => list.flatMap((pattern) => patternLines(pattern, decision, source, scripts, warnings))
  const lines = [
    ...rules(policy.commands.deny, 'forbidden', 'commands.deny'),
    ...rules(policy.commands.ask, 'forbidden', 'commands.ask'),
    // Under the bypass every command already runs unsandboxed: an allow rule changes nothing.
    ...(bypassSandbox ? [] : rules(policy.commands.allow, 'allow', 'commands.allow')),
  ]
  return { bypassSandbox, ...(sandboxMode ? { sandboxMode } : {}), config, rules: lines.map((l) => `${l}\n`).join(''), warnings }
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

/** The rule lines of one policy pattern: a glob, or a `script:<name>` expanded to the script's commands. */
function patternLines(pattern: string, decision: Decision, source: string, scripts: Readonly<Record<string, string>>, warnings: string[]): string[] {
  if (!pattern.startsWith('script:')) return ruleLine(pattern, decision, source, warnings)
  const commands = expandScriptPattern(pattern, scripts)
  if (commands.length === 0) {
    warnings.push(`${source} "${pattern}" names no workspace script (the workspace has ${Object.keys(scripts).join(', ') || 'none'}); Codex does not get this rule.`)
    return []
  }
  return commands.flatMap((command) => {
    // A script's command is literal words, not a glob: `*` in it is the shell's.
    const words = command.split(' ')
    if (words.some((word) => SHELL_SYNTAX.test(word))) {
      warnings.push(`${source} "${pattern}": the script's command "${command}" cannot be expressed as a Codex prefix rule (it has quotes or shell syntax); Codex enforces only the package-manager forms that run the script.`)
      return []
    }
    return [prefixRule(words, decision, source, pattern)]
  })
}

function ruleLine(glob: string, decision: Decision, source: string, warnings: string[]): string[] {
  const mapped = globToPrefix(glob)
  if (!mapped) {
    warnings.push(`${source} "${glob}" cannot be expressed as a Codex prefix rule (it needs a literal first word and no quotes or shell syntax); Codex does not enforce it.`)
    return []
  }
  if (mapped.widened && decision === 'allow' && /[*?]/.test(glob)) {
    warnings.push(`${source} "${glob}" has a wildcard before its end; allowing the prefix "${mapped.prefix.join(' ')}" would allow more, so Codex does not get this rule.`)
    return []
  }
  if (mapped.widened && decision === 'forbidden' && /[*?]/.test(glob)) warnings.push(`${source} "${glob}" is enforced by Codex as every command starting with "${mapped.prefix.join(' ')}".`)
  return [prefixRule(mapped.prefix, decision, source, glob)]
}

function prefixRule(words: readonly string[], decision: Decision, source: string, pattern: string): string {
  const justification = `sandbox policy: ${source} ${JSON.stringify(pattern)}`
  return `prefix_rule(pattern=[${words.map((word) => JSON.stringify(word)).join(', ')}], decision="${decision}", justification=${JSON.stringify(justification)})`
}
