/**
 * The sandbox policy mapped onto Grok Build's two native controls: the
 * approve flag (the CLI then runs every tool without asking) and the answers
 * to the agent's ACP `session/request_permission` requests. A policy that
 * allows everything passes the flag (headless auto-approve); any other policy
 * leaves it off and answers each request from the policy. A headless run has
 * nobody to answer an `ask`, so asks are refused. Pure: no IO.
 */
import { evaluateCommand, shellJoin, type PolicyDecision, type SandboxPolicy } from '@tanstack/ai-sandbox'
import type { AcpPermissionRequest, AcpSessionUpdate } from './cli-events.js'

/** Tool kinds (ACP `ToolKind`) that change nothing, allowed under every policy. */
export const GROK_READ_ONLY_KINDS = ['read', 'search', 'think', 'switch_mode'] as const
/** Tool kinds that change files, gated by `capabilities.fileWrite`. */
export const GROK_FILE_WRITE_KINDS = ['edit', 'delete', 'move'] as const
/** Tool kinds that reach the network, gated by `capabilities.network`. */
export const GROK_NETWORK_KINDS = ['fetch'] as const

/** What a policy becomes for one run. */
export interface GrokPolicySettings {
  /** Pass the approve flag: the CLI runs every tool without asking. */
  autoApprove: boolean
}

/** The answer to one permission request, as ACP's `RequestPermissionResponse`. */
export interface GrokPermissionAnswer {
  outcome: { outcome: 'selected'; optionId: string } | { outcome: 'cancelled' }
}

/**
 * Map a policy to run settings.
 *
 * | policy | Grok Build |
 * |---|---|
 * | `default: 'allow'`, no `commands.ask`/`commands.deny`, both capabilities on | approve flag (auto-approve; the sandbox is the boundary) |
 * | anything else | no flag; every permission request answered by {@link decideGrokPermission} |
 *
 * @example
 * ```ts
 * grokPolicySettings(defineSandboxPolicy()).autoApprove // true
 * ```
 */
export function grokPolicySettings(policy: SandboxPolicy): GrokPolicySettings {
  const everything = policy.default === 'allow' && policy.commands.ask.length === 0 && policy.commands.deny.length === 0 && policy.capabilities.fileWrite && policy.capabilities.network
  return { autoApprove: everything }
}

/**
 * The policy's verdict on one tool call the agent asks permission for.
 *
 * | tool kind | verdict |
 * |---|---|
 * | `read`, `search`, `think`, `switch_mode` | allow |
 * | `execute` with a command in `rawInput` (`command`, `cmd`, argv array) | `evaluateCommand(policy, command, { scripts })`: each simple command of the line judged, deny/ask looking into substitutions and `sh -c`, nothing opaque allow-listed |
 * | `edit`, `delete`, `move` | deny when `capabilities.fileWrite` is false, else `policy.default` |
 * | `fetch` | deny when `capabilities.network` is false, else `policy.default` |
 * | anything else | `policy.default` |
 *
 * `ask` is answered as a refusal: nobody can answer it in a headless run.
 * `evaluateCommand` is a best-effort judge, not a shell parser that
 * guarantees safety; the provider (a container, `network: 'none'`) is the
 * boundary.
 *
 * @param policy - The validated sandbox policy.
 * @param toolCall - The tool call of the permission request.
 * @param scripts - The workspace's `scripts`, for `script:<name>` rules. Default none.
 * @returns The verdict.
 * @example
 * ```ts
 * grokPermissionVerdict(defineSandboxPolicy({ commands: { deny: ['git push *'] } }), { kind: 'execute', rawInput: { command: 'npm test && git push' } }) // 'deny'
 * ```
 */
export function grokPermissionVerdict(policy: SandboxPolicy, toolCall: AcpSessionUpdate | undefined, scripts?: Readonly<Record<string, string>>): PolicyDecision {
  const kind = typeof toolCall?.kind === 'string' ? toolCall.kind : 'other'
  if ((GROK_READ_ONLY_KINDS as readonly string[]).includes(kind)) return 'allow'
  if (kind === 'execute') {
    const command = commandOf(toolCall?.rawInput)
    return command === undefined ? policy.default : evaluateCommand(policy, command, scripts ? { scripts } : {})
  }
  if ((GROK_FILE_WRITE_KINDS as readonly string[]).includes(kind)) return policy.capabilities.fileWrite ? policy.default : 'deny'
  if ((GROK_NETWORK_KINDS as readonly string[]).includes(kind)) return policy.capabilities.network ? policy.default : 'deny'
  return policy.default
}

/**
 * Answer a `session/request_permission` request from the policy: the agent's
 * one-time allow option for `allow`, its one-time reject option otherwise
 * (the `always` variants only when no one-time option is offered, so the
 * policy decides every call), and `cancelled` when no option fits.
 * @example
 * ```ts
 * decideGrokPermission(policy, request) // { outcome: { outcome: 'selected', optionId: 'allow-once' } }
 * ```
 */
export function decideGrokPermission(policy: SandboxPolicy, request: AcpPermissionRequest, scripts?: Readonly<Record<string, string>>): GrokPermissionAnswer {
  const verdict = grokPermissionVerdict(policy, request.toolCall, scripts)
  const options = Array.isArray(request.options) ? request.options : []
  const pick = (...kinds: string[]) => kinds.map((kind) => options.find((o) => o?.kind === kind && typeof o.optionId === 'string')).find(Boolean)
  const option = verdict === 'allow' ? pick('allow_once', 'allow_always') : pick('reject_once', 'reject_always')
  return option ? { outcome: { outcome: 'selected', optionId: option.optionId! } } : { outcome: { outcome: 'cancelled' } }
}

/** The shell command of an execute tool call's input, when it has one. */
function commandOf(input: unknown): string | undefined {
  if (typeof input === 'string') return input
  if (typeof input !== 'object' || input === null) return undefined
  const record = input as Record<string, unknown>
  for (const key of ['command', 'cmd']) {
    const value = record[key]
    if (typeof value === 'string' && value.trim() !== '') return value
    // An argv is quoted back into one line, so `['sh', '-c', 'a; b']` keeps its script as one word.
    if (Array.isArray(value) && value.length > 0 && value.every((part) => typeof part === 'string')) return shellJoin(value)
  }
  return undefined
}
