/**
 * The sandbox policy mapped onto OpenCode's native `permission` settings, so
 * the CLI itself refuses what the policy denies. The adapter hands the result
 * to the CLI as `OPENCODE_PERMISSION`, which OpenCode merges over every
 * config file. A headless `opencode run` rejects every `ask`, so asks become
 * denies. Limits of the mapping are listed on {@link opencodePermission}.
 */
import { expandScriptPattern, type PolicyDecision, type SandboxPolicy } from '@tanstack/ai-sandbox'

/** An OpenCode permission action. */
export type OpencodePermissionAction = 'allow' | 'ask' | 'deny'

/** OpenCode's `permission` setting: per permission key, one action or `{ pattern: action }` (the LAST matching pattern wins). */
export type OpencodePermission = Record<string, OpencodePermissionAction | Record<string, OpencodePermissionAction>>

/** Permission keys of OpenCode's network tools. */
export const OPENCODE_NETWORK_PERMISSIONS = ['webfetch', 'websearch'] as const

/** Options of {@link opencodePermission}. */
export interface OpencodePermissionOptions {
  /** Receives one warning per mapping naming the `script:<name>` rules with no such workspace script. Default `console.warn`. */
  warn?: (message: string) => void
}

/**
 * Map a policy to OpenCode's `permission` setting.
 *
 * | policy | permission |
 * |---|---|
 * | `default` | `bash: { "*": <default> }` (`ask` becomes `deny`) |
 * | `commands.allow` | `bash: { "<glob>": "allow" }` |
 * | `commands.ask`, `commands.deny` | `bash: { "<glob>": "deny" }` (nobody can answer an ask headless) |
 * | `script:<name>` patterns | the commands of core's `expandScriptPattern`: the script's command and `npm run <name>`, `pnpm <name>`, … (an unknown script is left out with a warning) |
 * | `capabilities.fileWrite: false` | `edit: "deny"` (covers edit, write and patch) |
 * | `capabilities.network: false` | `webfetch: "deny"`, `websearch: "deny"` |
 *
 * Bash entries are ordered default, allow, ask, deny, so OpenCode's
 * last-match rule gives core's precedence (deny over ask over allow over the
 * default). Nothing else is set: OpenCode's own defaults stay (edits and
 * reads allowed; `external_directory`, `doom_loop` and reading `.env` files
 * ask, which a headless run rejects), and so do the per-agent rules (the
 * `plan` agent still cannot edit), since a top-level `"*"` rule would
 * override them. OpenCode, like core's `evaluateCommand`, judges each simple
 * command of a compound command (`a && b`, pipelines) on its own, and a
 * pattern ending in ` *` also matches the bare command (`git push *` matches
 * `git push`). Limits: a `deny` on a script's underlying command does not
 * catch the package-manager form that runs it unless the policy names
 * `script:<name>`; core's look past wrappers (`sudo git push`) and its
 * refusal to allow-list lines with substitutions are core's, not OpenCode's.
 *
 * @param policy - The validated sandbox policy.
 * @param scripts - The workspace's `scripts`, to expand `script:<name>` patterns. Default none.
 * @param options - `warn` for unknown scripts (default `console.warn`).
 * @returns The `permission` object (plain JSON).
 * @example
 * ```ts
 * opencodePermission(defineSandboxPolicy({ commands: { deny: ['git push *'] } }))
 * // { bash: { '*': 'allow', 'git push *': 'deny' } }
 * ```
 */
export function opencodePermission(policy: SandboxPolicy, scripts: Readonly<Record<string, string>> = {}, options: OpencodePermissionOptions = {}): OpencodePermission {
  const { warn = (message: string) => console.warn(message) } = options
  const fallback = headless(policy.default)
  const bash: Record<string, OpencodePermissionAction> = { '*': fallback }
  const unknown: string[] = []
  for (const [list, action, source] of [
    [policy.commands.allow, 'allow', 'commands.allow'],
    [policy.commands.ask, 'deny', 'commands.ask'],
    [policy.commands.deny, 'deny', 'commands.deny'],
  ] as const) {
    const expanded = list.flatMap((p) => {
      const commands = expandScriptPattern(p, scripts)
      if (commands.length === 0) unknown.push(`${source} ${JSON.stringify(p)}`)
      return commands
    })
    for (const pattern of expanded) {
      // Re-inserting moves the key last, so a later list wins over an earlier one.
      delete bash[pattern]
      bash[pattern] = action
    }
  }
  if (unknown.length > 0) warn(`opencode: the policy rule${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} name${unknown.length > 1 ? '' : 's'} no workspace script (the workspace has ${Object.keys(scripts).join(', ') || 'none'}); left out of the OpenCode permissions.`)
  const permission: OpencodePermission = { bash }
  if (!policy.capabilities.fileWrite) permission.edit = 'deny'
  if (!policy.capabilities.network) for (const key of OPENCODE_NETWORK_PERMISSIONS) permission[key] = 'deny'
  return permission
}

/**
 * Merge `extra` over `base`: an action replaces, pattern objects merge with
 * `extra`'s patterns moved last (so they win under last-match).
 * @example
 * ```ts
 * mergePermission({ bash: { '*': 'deny' } }, { bash: { 'ls *': 'allow' } }) // { bash: { '*': 'deny', 'ls *': 'allow' } }
 * ```
 */
export function mergePermission(base: OpencodePermission, extra: OpencodePermission): OpencodePermission {
  const out: OpencodePermission = { ...base }
  for (const [key, value] of Object.entries(extra)) {
    const current = out[key]
    delete out[key]
    if (typeof value === 'object' && typeof current === 'object') {
      const merged = { ...current }
      for (const [pattern, action] of Object.entries(value)) {
        delete merged[pattern]
        merged[pattern] = action
      }
      out[key] = merged
    } else {
      out[key] = typeof value === 'object' ? { ...value } : value
    }
  }
  return out
}

/** A headless run has nobody to answer an ask. */
function headless(decision: PolicyDecision): OpencodePermissionAction {
  return decision === 'allow' ? 'allow' : 'deny'
}
