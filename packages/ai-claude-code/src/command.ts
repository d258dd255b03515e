/**
 * The `claude` command line. Pure: options in, argv out. The prompt is never
 * part of argv (it goes through stdin or a file redirect), so no prompt byte
 * is ever interpreted by a shell. Flags follow `claude --help` of 2.1.x.
 */
import { shellJoin, shellQuote } from '@tanstack/ai-sandbox'

/** Claude Code permission modes (`--permission-mode`). */
export type ClaudePermissionMode = 'acceptEdits' | 'auto' | 'bypassPermissions' | 'manual' | 'dontAsk' | 'plan'

/** Inputs of {@link buildClaudeArgs}. */
export interface ClaudeCommandInput {
  /** Path or name of the CLI. Default `claude`. */
  executable?: string
  model: string
  /** Session to continue (`--resume=<id>`: one argument, so the CLI never reads the id as a flag of its own). */
  sessionId?: string
  maxTurns?: number
  allowedTools?: readonly string[]
  disallowedTools?: readonly string[]
  /** Replaces Claude Code's default system prompt. */
  systemPrompt?: string
  /** Appended to Claude Code's default system prompt. */
  appendSystemPrompt?: string
  permissionMode?: ClaudePermissionMode
  /** `--json-schema <json>`: the JSON Schema the run's answer must match (structured output), as one argument of JSON text. */
  jsonSchema?: object
  /** Extra flags passed through verbatim (after ours). */
  extraArgs?: readonly string[]
}

/**
 * Build argv for a headless, streaming run: `-p` (prompt from stdin),
 * `--output-format stream-json --verbose --include-partial-messages`.
 */
export function buildClaudeArgs(input: ClaudeCommandInput): string[] {
  const args = [input.executable ?? 'claude', '-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--model', input.model]
  if (input.sessionId) args.push(`--resume=${input.sessionId}`)
  if (input.maxTurns !== undefined) args.push('--max-turns', String(input.maxTurns))
  if (input.allowedTools && input.allowedTools.length > 0) args.push('--allowedTools', ...input.allowedTools)
  if (input.disallowedTools && input.disallowedTools.length > 0) args.push('--disallowedTools', ...input.disallowedTools)
  if (input.systemPrompt) args.push('--system-prompt', input.systemPrompt)
  if (input.appendSystemPrompt) args.push('--append-system-prompt', input.appendSystemPrompt)
  if (input.permissionMode) args.push('--permission-mode', input.permissionMode)
  if (input.jsonSchema) args.push('--json-schema', JSON.stringify(input.jsonSchema))
  if (input.extraArgs) args.push(...input.extraArgs)
  return args
}

/**
 * The shell command for a run. With `promptFile`, stdin is redirected from
 * that file (for providers without writable stdin) and the file is unlinked
 * once the shell has opened it, before the CLI starts, so no prompt is left
 * behind however the run ends; otherwise the prompt is written to the
 * process's stdin.
 */
export function buildClaudeCommand(input: ClaudeCommandInput & { promptFile?: string }): string {
  const command = shellJoin(buildClaudeArgs(input))
  if (!input.promptFile) return command
  const file = shellQuote(input.promptFile)
  return `{ rm -f ${file}; ${command}; } < ${file}`
}
