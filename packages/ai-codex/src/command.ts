/**
 * The `codex exec` command line. Pure: options in, argv out. The prompt is
 * never part of argv: the last argument is `-`, which makes Codex read the
 * prompt from stdin (fed directly, or redirected from a file), so no prompt
 * byte is ever interpreted by a shell. Flags follow `codex exec --help` of
 * 0.171.x; `exec resume` lacks `--sandbox`, so settings go through `-c`.
 */
import { shellJoin, shellQuote } from '@tanstack/ai-sandbox'

/** Codex sandbox modes (`sandbox_mode`). */
export type CodexSandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access'

/** A TOML value for a `-c key=value` override. */
export type TomlValue = string | number | boolean | readonly TomlValue[]

/** Inputs of {@link buildCodexArgs}. */
export interface CodexCommandInput {
  /** Path or name of the CLI. Default `codex`. */
  executable?: string
  model: string
  /** Thread to continue (`codex exec resume <id>`). */
  sessionId?: string
  /** `--dangerously-bypass-approvals-and-sandbox`: no Codex sandbox, no approvals (the outer sandbox is the boundary). */
  bypassSandbox?: boolean
  /** `-c key=value` overrides, values already TOML (see {@link codexConfigFlag}). */
  config?: readonly string[]
  /** `--trust`: load the workspace's `.codex/config.toml` and `.codex/rules/` (Codex ignores them in untrusted projects). */
  trust?: boolean
  /** `--output-schema <file>`: a JSON Schema file in the sandbox that the final answer must match (structured output). */
  outputSchemaFile?: string
  /** Extra flags passed through verbatim (after ours, before the positional arguments). */
  extraArgs?: readonly string[]
}

/**
 * Build argv for a headless JSONL run that reads its prompt from stdin.
 * @example
 * ```ts
 * buildCodexArgs({ model: 'gpt-5.5', sessionId: '01a2…' })
 * // ['codex', 'exec', 'resume', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', '01a2…', '-']
 * ```
 */
export function buildCodexArgs(input: CodexCommandInput): string[] {
  const args = [input.executable ?? 'codex', 'exec']
  if (input.sessionId) args.push('resume')
  args.push('--json', '--skip-git-repo-check', '-m', input.model)
  if (input.bypassSandbox) args.push('--dangerously-bypass-approvals-and-sandbox')
  for (const entry of input.config ?? []) args.push('-c', entry)
  if (input.trust) args.push('--trust')
  if (input.outputSchemaFile) args.push('--output-schema', input.outputSchemaFile)
  if (input.extraArgs) args.push(...input.extraArgs)
  if (input.sessionId) args.push(input.sessionId)
  args.push('-')
  return args
}

/**
 * The shell command for a run. With `promptFile`, stdin is redirected from
 * that file (for providers without writable stdin) and the file is unlinked
 * once the shell has opened it, before the CLI starts, so no prompt is left
 * behind however the run ends; otherwise the prompt is written to stdin.
 */
export function buildCodexCommand(input: CodexCommandInput & { promptFile?: string }): string {
  const command = shellJoin(buildCodexArgs(input))
  if (!input.promptFile) return command
  const file = shellQuote(input.promptFile)
  return `{ rm -f ${file}; ${command}; } < ${file}`
}

/**
 * One `-c` override: `key=<TOML value>`.
 * @example
 * ```ts
 * codexConfigFlag('sandbox_mode', 'read-only') // 'sandbox_mode="read-only"'
 * ```
 */
export function codexConfigFlag(key: string, value: TomlValue): string {
  return `${key}=${tomlValue(value)}`
}

/** A TOML value: strings as basic strings, arrays inline. */
export function tomlValue(value: TomlValue): string {
  if (typeof value === 'string') return tomlString(value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return `[${value.map(tomlValue).join(', ')}]`
}

/**
 * A TOML basic string (`"..."`): backslash, quote and control characters
 * escaped, lone surrogates (not valid TOML) replaced with U+FFFD.
 */
export function tomlString(value: string): string {
  const escaped = value.replace(LONE_SURROGATE, '\uFFFD').replace(TOML_ESCAPED, (ch) => {
    switch (ch) {
      case '\\':
        return '\\\\'
      case '"':
        return '\\"'
      case '\n':
        return '\\n'
      case '\t':
        return '\\t'
      case '\r':
        return '\\r'
      default:
        return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`
    }
  })
  return `"${escaped}"`
}

/** Characters a TOML basic string must escape: backslash, quote, and control characters (anything below space, and DEL). */
const TOML_ESCAPED = /[\\"]|[^ -~\u0080-\uffff]/g
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

