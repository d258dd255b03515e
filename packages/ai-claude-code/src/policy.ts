/**
 * The sandbox policy mapped onto Claude Code's native permissions, so the CLI
 * itself refuses what the policy denies: `--permission-mode`, `Bash(<glob>)`
 * entries in `--allowedTools`/`--disallowedTools`, whole tools for the
 * capability gates. A headless run has nobody to answer, so `ask` is denied.
 * Design notes: docs/design/harness-adapters.md
 */
import { expandScriptPattern, type SandboxPolicy } from '@tanstack/ai-sandbox'
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

/** Options of {@link claudePolicyFlags}. */
export interface ClaudePolicyOptions {
  /** The workspace's `scripts` (name → command), to expand `script:<name>` rules. Default none. */
  scripts?: Readonly<Record<string, string>>
  /** Receives one warning per mapping naming the `script:<name>` rules with no such workspace script. Default `console.warn`. */
  warn?: (message: string) => void
}

/**
 * Map a policy to Claude Code flags.
 *
 * | policy | flags |
 * |---|---|
 * | `default: 'allow'` | `--permission-mode bypassPermissions` (the sandbox is the boundary) |
 * | `default: 'ask'` | `--permission-mode manual` (nothing unlisted is approved headless) |
 * | `default: 'deny'` | `--permission-mode dontAsk`: what would prompt is refused; the CLI still runs what it deems read-only (file reads, `git status`, `ls`) unless it is disallowed |
 * | `commands.allow` | `--allowedTools Bash(<glob>)` |
 * | `commands.deny`, `commands.ask` | `--disallowedTools Bash(<glob>)` |
 * | `script:<name>` in any list | one `Bash(…)` entry per command of {@link expandScriptPattern}: the script's command, `npm run <name>`, `pnpm <name>`, … (an unknown script is left out with a warning) |
 * | `capabilities.fileWrite: false` | `--disallowedTools Edit Write NotebookEdit` |
 * | `capabilities.network: false` | `--disallowedTools WebFetch WebSearch` |
 *
 * Claude Code matches `Bash(<glob>)` per simple command of a compound
 * command, and a trailing ` *` also matches the bare command, as core's
 * `evaluateCommand` does.
 *
 * @param policy - The validated sandbox policy.
 * @param options - `scripts` for `script:<name>` rules (default none) and `warn` (default `console.warn`).
 * @returns The permission mode and the `--allowedTools` / `--disallowedTools` entries.
 * @example
 * ```ts
 * claudePolicyFlags(defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:test'] } }), { scripts: { test: 'vitest run' } }).allowedTools
 * // ['Bash(vitest run)', 'Bash(npm run test)', 'Bash(npm test)', 'Bash(pnpm run test)', 'Bash(pnpm test)', 'Bash(yarn run test)', 'Bash(yarn test)', 'Bash(bun run test)']
 * ```
 */
export function claudePolicyFlags(policy: SandboxPolicy, options: ClaudePolicyOptions = {}): ClaudePolicyFlags {
  const { scripts = {}, warn = (message: string) => console.warn(message) } = options
  const permissionMode: ClaudePermissionMode = policy.default === 'allow' ? 'bypassPermissions' : policy.default === 'ask' ? 'manual' : 'dontAsk'
  const unknown: string[] = []
  const bash = (list: readonly string[], source: string) =>
    list.flatMap((pattern) => {
      const commands = expandScriptPattern(pattern, scripts)
      if (commands.length === 0) unknown.push(`${source} ${JSON.stringify(pattern)}`)
      return commands.map((command) => `Bash(${command})`)
    })
  const flags = {
    permissionMode,
    allowedTools: bash(policy.commands.allow, 'commands.allow'),
    disallowedTools: [
      ...bash(policy.commands.deny, 'commands.deny'),
      ...bash(policy.commands.ask, 'commands.ask'),
      ...(policy.capabilities.fileWrite ? [] : CLAUDE_FILE_WRITE_TOOLS),
      ...(policy.capabilities.network ? [] : CLAUDE_NETWORK_TOOLS),
    ],
  }
  if (unknown.length > 0) warn(`claude-code: the policy rule${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} name${unknown.length > 1 ? '' : 's'} no workspace script (the workspace has ${Object.keys(scripts).length > 0 ? Object.keys(scripts).join(', ') : 'none'}); left out of the Claude Code permissions.`)
  return flags
}
