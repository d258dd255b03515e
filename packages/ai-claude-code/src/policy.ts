/**
 * The sandbox policy mapped onto Claude Code's native permissions, so the CLI
 * itself refuses what the policy denies. The default verdict picks
 * `--permission-mode`; command globs become `Bash(<glob>)` entries of
 * `--allowedTools`/`--disallowedTools` (Claude Code enforces disallowed tools
 * in every mode, `bypassPermissions` included); the capability gates disallow
 * whole tools. A headless run has nobody to answer an `ask`, so asks are denied.
 */
import type { SandboxPolicy } from '@tanstack/ai-sandbox'
import type { ClaudePermissionMode } from './command.js'

/** What a policy becomes on the command line. */
export interface ClaudePolicyFlags {
  permissionMode: ClaudePermissionMode
  allowedTools: string[]
  disallowedTools: string[]
}

/** Claude Code's tools that change files. */
export const CLAUDE_FILE_WRITE_TOOLS = ['Edit', 'Write', 'NotebookEdit'] as const
/** Claude Code's tools that reach the network. */
export const CLAUDE_NETWORK_TOOLS = ['WebFetch', 'WebSearch'] as const

/**
 * Map a policy to Claude Code flags.
 *
 * | policy | flags |
 * |---|---|
 * | `default: 'allow'` | `--permission-mode bypassPermissions` (the sandbox is the boundary) |
 * | `default: 'ask'` | `--permission-mode manual` (nothing unlisted is approved headless) |
 * | `default: 'deny'` | `--permission-mode dontAsk` (only allow-listed tools run) |
 * | `commands.allow` | `--allowedTools Bash(<glob>)` |
 * | `commands.deny`, `commands.ask` | `--disallowedTools Bash(<glob>)` |
 * | `capabilities.fileWrite: false` | `--disallowedTools Edit Write NotebookEdit` |
 * | `capabilities.network: false` | `--disallowedTools WebFetch WebSearch` |
 */
export function claudePolicyFlags(policy: SandboxPolicy): ClaudePolicyFlags {
  const permissionMode: ClaudePermissionMode = policy.default === 'allow' ? 'bypassPermissions' : policy.default === 'ask' ? 'manual' : 'dontAsk'
  const bash = (glob: string) => `Bash(${glob})`
  return {
    permissionMode,
    allowedTools: policy.commands.allow.map(bash),
    disallowedTools: [
      ...policy.commands.deny.map(bash),
      ...policy.commands.ask.map(bash),
      ...(policy.capabilities.fileWrite ? [] : CLAUDE_FILE_WRITE_TOOLS),
      ...(policy.capabilities.network ? [] : CLAUDE_NETWORK_TOOLS),
    ],
  }
}
