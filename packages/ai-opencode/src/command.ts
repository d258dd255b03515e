/**
 * The `opencode run` command line. Pure: options in, argv out. The prompt is
 * never part of argv: `opencode run` appends whatever it reads on a non-TTY
 * stdin to the message, so the prompt goes through stdin or a file redirect
 * and no prompt byte is ever interpreted by a shell. Flags follow
 * `opencode run --help` of 1.18.x.
 */
import { shellJoin, shellQuote } from '@tanstack/ai-sandbox'

/** Inputs of {@link buildOpencodeArgs}. */
export interface OpencodeCommandInput {
  /** Path or name of the CLI. Default `opencode`. */
  executable?: string
  /** `provider/model`, e.g. `anthropic/claude-sonnet-4-5`. */
  model: string
  /** Session to continue (`--session`). */
  sessionId?: string
  /** `--title` of a new session. Giving one spares the model request OpenCode otherwise spends generating a title. */
  title?: string
  /** `--agent`, e.g. `build` (OpenCode's default) or `plan`. */
  agent?: string
  /** `--variant`: provider-specific reasoning effort, e.g. `high`. */
  variant?: string
  /** `--thinking`: print reasoning parts (they become reasoning chunks). */
  thinking?: boolean
  /** Extra flags passed through verbatim (after ours). */
  extraArgs?: readonly string[]
}

/**
 * Build argv for a headless run that prints raw JSON events:
 * `opencode run --format json --model <provider/model>` plus the options.
 * @example
 * ```ts
 * buildOpencodeArgs({ model: 'anthropic/claude-sonnet-4-5', sessionId: 'ses_1' })
 * // ['opencode', 'run', '--format', 'json', '--model', 'anthropic/claude-sonnet-4-5', '--session', 'ses_1']
 * ```
 */
export function buildOpencodeArgs(input: OpencodeCommandInput): string[] {
  const args = [input.executable ?? 'opencode', 'run', '--format', 'json', '--model', input.model]
  if (input.sessionId) args.push('--session', input.sessionId)
  // `--title=<text>`: a free-text value starting with `-` must not be read as a flag.
  else if (input.title) args.push(`--title=${input.title}`)
  if (input.agent) args.push('--agent', input.agent)
  if (input.variant) args.push('--variant', input.variant)
  if (input.thinking) args.push('--thinking')
  if (input.extraArgs) args.push(...input.extraArgs)
  return args
}

/**
 * The shell command for a run. With `promptFile`, stdin is redirected from
 * that file (for providers without writable stdin) and the file is unlinked
 * once the shell has opened it, before the CLI starts, so no prompt is left
 * behind however the run ends; otherwise the prompt is written to the
 * process's stdin.
 * @example
 * ```ts
 * buildOpencodeCommand({ model: 'anthropic/claude-sonnet-4-5', promptFile: '/tmp/p' })
 * // "{ rm -f '/tmp/p'; opencode run --format json --model anthropic/claude-sonnet-4-5; } < '/tmp/p'"
 * ```
 */
export function buildOpencodeCommand(input: OpencodeCommandInput & { promptFile?: string }): string {
  const command = shellJoin(buildOpencodeArgs(input))
  if (!input.promptFile) return command
  const file = shellQuote(input.promptFile)
  return `{ rm -f ${file}; ${command}; } < ${file}`
}
