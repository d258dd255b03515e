/**
 * The sandbox policy mapped onto Claude Code's native permissions: the
 * default verdict picks `--permission-mode`, command and tool lists become
 * `--allowedTools`/`--disallowedTools` entries. In headless `-p` mode an
 * `ask` cannot prompt anyone, so asked-for actions are denied: a default
 * `ask` runs in `manual` mode (Claude Code denies what is not allow-listed),
 * and `ask` rules become `--disallowedTools` entries, which Claude Code
 * enforces in every mode, `bypassPermissions` included.
 */
import type { SandboxPolicy } from '@tanstack/ai-sandbox'
import type { ClaudePermissionMode } from './command.js'

/** What a policy becomes on the command line. */
export interface ClaudePolicyFlags {
  permissionMode: ClaudePermissionMode
  allowedTools: string[]
  disallowedTools: string[]
}

/**
 * Map a policy to Claude Code flags.
 * `default: 'allow'` → `bypassPermissions` (the sandbox is the boundary);
 * `'ask'` → `manual`; `'deny'` → `dontAsk` (only allow-listed tools run).
 * `commands.*` patterns become `Bash(<pattern>)`; `tools.*` pass through;
 * `paths.*` become `Edit(<p>)`, `Write(<p>)` and `Read(<p>)`. `allow` rules
 * are allowed; `deny` and `ask` rules are disallowed (nobody can answer an
 * `ask` in a headless run, and dropping it would let the action run unasked).
 */
export function claudePolicyFlags(policy: SandboxPolicy): ClaudePolicyFlags {
  const mode: ClaudePermissionMode = policy.default === 'allow' ? 'bypassPermissions' : policy.default === 'ask' ? 'manual' : 'dontAsk'
  const entries = (rules: readonly string[], commands: readonly string[], paths: readonly string[]) => [
    ...commands.map((pattern) => `Bash(${pattern})`),
    ...rules,
    ...paths.flatMap((p) => [`Edit(${p})`, `Write(${p})`, `Read(${p})`]),
  ]
  return {
    permissionMode: mode,
    allowedTools: entries(policy.tools.allow, policy.commands.allow, policy.paths.allow),
    disallowedTools: entries([...policy.tools.deny, ...policy.tools.ask], [...policy.commands.deny, ...policy.commands.ask], [...policy.paths.deny, ...policy.paths.ask]),
  }
}
