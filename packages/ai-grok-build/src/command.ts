/**
 * The `grok agent … stdio` command line. Pure: options in, argv and a shell
 * command out. The prompt never appears here (it travels as an ACP
 * `session/prompt` request over stdin), so no prompt byte is ever interpreted
 * by a shell. Without an explicit executable the command looks for the CLI
 * where xAI's installer puts it, `$HOME/.grok/bin/grok`, then on `PATH`.
 */
import { shellJoin, shellQuote } from '@tanstack/ai-sandbox'

/** Where xAI's install script puts the CLI, relative to `$HOME`. */
export const GROK_HOME_BINARY = '.grok/bin/grok'
/** The flag that makes the CLI run tools without asking (auto-approve). Not verified against a real CLI here: override with `approveFlag`. */
export const GROK_APPROVE_FLAG = '--auto-approve'

/** Inputs of {@link buildGrokArgs}. */
export interface GrokCommandInput {
  /** Path or name of the CLI. Default: `$HOME/.grok/bin/grok` when it is executable, else `grok` on `PATH`. */
  executable?: string
  model: string
  /** Pass the approve flag (the CLI runs tools without asking). */
  autoApprove?: boolean
  /** The approve flag's spelling. Default {@link GROK_APPROVE_FLAG}. */
  approveFlag?: string
  /** Extra flags passed through verbatim, before the `stdio` transport word. */
  extraArgs?: readonly string[]
}

/**
 * argv after the executable: `agent --model <model> [<approve flag>] [...extraArgs] stdio`.
 * @example
 * ```ts
 * buildGrokArgs({ model: 'grok-4.5', autoApprove: true }) // ['agent', '--model', 'grok-4.5', '--auto-approve', 'stdio']
 * ```
 */
export function buildGrokArgs(input: GrokCommandInput): string[] {
  const args = ['agent', '--model', input.model]
  if (input.autoApprove) args.push(input.approveFlag ?? GROK_APPROVE_FLAG)
  if (input.extraArgs) args.push(...input.extraArgs)
  args.push('stdio')
  return args
}

/**
 * The shell command for a run. With an explicit executable it runs that;
 * otherwise it prefers `$HOME/.grok/bin/grok` and falls back to `grok` on
 * `PATH`. `exec` replaces the shell, so the CLI itself owns the process
 * group's stdio, and a missing CLI exits 127 (the shell's "not found").
 * @example
 * ```ts
 * buildGrokCommand({ model: 'grok-4.5' })
 * // g="$HOME/.grok/bin/grok"; [ -x "$g" ] || g=grok; exec "$g" agent --model grok-4.5 stdio
 * ```
 */
export function buildGrokCommand(input: GrokCommandInput): string {
  const args = shellJoin(buildGrokArgs(input))
  if (input.executable) return `exec ${shellQuote(input.executable)} ${args}`
  return `g="$HOME/${GROK_HOME_BINARY}"; [ -x "$g" ] || g=grok; exec "$g" ${args}`
}
