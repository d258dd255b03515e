/**
 * `claudeCodeText`: the Claude Code harness adapter. Its `chatStream` is
 * core's shared run loop (`runHarness`) with what is Claude Code's own: the
 * session-id rule, the stream-json translator, and `prepare`, which maps the
 * policy to flags, projects skills and MCP servers, opens the tool bridge and
 * builds the `claude -p` command. `chat({ outputSchema })` runs the same loop
 * with `--json-schema` (see structured-output.ts).
 */
import type { TextOptions } from '@tanstack/ai'
import { harnessOptionFields, harnessSystemPrompt, harnessTextAdapter, type HarnessAdapterPrepareContext, type HarnessCommonOptions, type HarnessLaunch, type HarnessTextAdapter } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { openClaudeToolBridge } from './bridge.js'
import { buildClaudeCommand, type ClaudePermissionMode } from './command.js'
import { ClaudeCodeUnsupportedError } from './errors.js'
import { claudePolicyFlags } from './policy.js'
import { claudeCodeProjection } from './projection.js'
import { claudeOutputSchema, withClaudeStructuredOutput } from './structured-output.js'
import { createClaudeCodeTranslator } from './translate.js'

/** Options of {@link claudeCodeText}. */
export interface ClaudeCodeOptions extends HarnessCommonOptions {
  /** The CLI to run: a name on the sandbox's `PATH` or an absolute path inside the sandbox. Default `claude`. */
  executable?: string
  /** `--max-turns`: stop after this many agent turns. */
  maxTurns?: number
  /** `--allowedTools` entries, e.g. `Bash(git status)`, `Edit`. Added to those the policy allows. */
  allowedTools?: string[]
  /** `--disallowedTools` entries. Added to those the policy denies. */
  disallowedTools?: string[]
  /** Replace Claude Code's own system prompt (`--system-prompt`). `chat({ systemPrompts })` are appended either way. */
  systemPrompt?: string
  /** `--permission-mode`, overriding the mode mapped from the sandbox policy. */
  permissionMode?: ClaudePermissionMode
}

/** Per-call options: `chat({ modelOptions: { sessionId } })` resumes a CLI session. */
export interface ClaudeCodeModelOptions {
  /** The id from the `claude-code.session-id` event of an earlier run. */
  sessionId?: string
  [key: string]: unknown
}

/** The adapter type. */
export type ClaudeCodeTextAdapter = HarnessTextAdapter<ClaudeCodeModelOptions>

/** Host environment variables forwarded to the CLI when the workspace does not set them. */
const FORWARDED_HOST_ENV = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL', 'CLAUDE_CODE_OAUTH_TOKEN'] as const


/** Environment that keeps the CLI from updating itself or phoning home from inside a sandbox. */
const QUIET_ENV = {
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
}

const optionsSchema = z
  .object({
    executable: z.string().min(1).optional(),
    maxTurns: z.number().int().positive().optional(),
    allowedTools: z.array(z.string().min(1)).optional(),
    disallowedTools: z.array(z.string().min(1)).optional(),
    systemPrompt: z.string().optional(),
    permissionMode: z.enum(['acceptEdits', 'auto', 'bypassPermissions', 'manual', 'dontAsk', 'plan']).optional(),
    ...harnessOptionFields,
  })
  .strict()

/**
 * Claude Code 2.1.332 refuses a prompt of about 2.92 to 2.95 million characters or more with "Prompt is too long"
 * (measured for every model alias, ASCII and two-byte text alike: the count is characters, not bytes). Beyond 3 million
 * no text gets through, so withSandbox refuses such a request before a sandbox boots; between the CLI's own bound and this
 * one the CLI refuses it and the run ends with the same `prompt_too_large` code.
 */
const CLAUDE_CODE_PROMPT_LIMIT = { maxPromptChars: 3_000_000, source: 'Claude Code refuses about 2.9 million characters as "Prompt is too long"' }

/** The model ids the CLI takes. */
const MODEL_RULE = { pattern: /^[A-Za-z0-9][A-Za-z0-9._:@/[\]-]*$/, expected: 'expected a model alias such as "sonnet" or a model id such as "claude-sonnet-4-5"' }
/** A Claude Code session id (a UUID; other id forms allowed): never starts with `-`, so the CLI cannot read it as a flag. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/

/**
 * Create the Claude Code adapter. It requires a sandbox (`withSandbox`).
 *
 * @param model - A Claude Code model alias (`sonnet`, `opus`, `haiku`) or full model id.
 * @param options - See {@link ClaudeCodeOptions}.
 * @throws SandboxConfigError naming the field for an invalid model or option.
 * @example
 * ```ts
 * chat({ adapter: claudeCodeText('sonnet', { maxTurns: 20 }), threadId, messages, middleware: [withSandbox(sandbox)] })
 * ```
 */
export function claudeCodeText(model: string, options: ClaudeCodeOptions = {}): ClaudeCodeTextAdapter {
  return harnessTextAdapter<ClaudeCodeOptions, ClaudeCodeModelOptions>(model, options, {
    harness: 'claude-code',
    modelRule: MODEL_RULE,
    optionsSchema,
    credentials: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'],
    forwardedHostEnv: FORWARDED_HOST_ENV,
    promptLimit: CLAUDE_CODE_PROMPT_LIMIT,
    // chat({ outputSchema }) hands the schema to chatStream (--json-schema), which emits structured-output.complete.
    structuredOutput: 'event',
    unsupported: () => new ClaudeCodeUnsupportedError(),
    run: (config, textOptions) => ({
      runIdPrefix: 'claude',
      // stream-json on stdout: on a durable run it goes to the run journal, and an attach replays it (docs/replay.md).
      journal: true,
      sessionId: { pattern: SESSION_ID, refused: refusedSessionId },
      translator: (ids) => {
        const translator = createClaudeCodeTranslator({ ...ids, model })
        return textOptions.outputSchema === undefined ? translator : withClaudeStructuredOutput(translator)
      },
      prepare: (run) => prepareClaudeCode(model, config, textOptions, run),
    }),
  })
}

function refusedSessionId(sessionId: string): string {
  return `claude-code: modelOptions.sessionId ${JSON.stringify(sessionId.slice(0, 80))} is not a Claude Code session id: expected a session UUID such as "0b5c3f0e-8a1d-4e0a-9f3b-2d6c1e7a4b90" (letters, digits, ".", "_", ":" or "-", not starting with "-"). Pass the value of an earlier run's claude-code.session-id event, or leave sessionId out to start a new session.`
}

/** Claude Code's part of a run: policy flags, projected files, the tool bridge, the command and its environment. */
async function prepareClaudeCode(model: string, config: ClaudeCodeOptions, options: TextOptions<ClaudeCodeModelOptions>, run: HarnessAdapterPrepareContext): Promise<HarnessLaunch> {
  const { handle, runId, prompt, sessionId, projection, cwd } = run
  const policyFlags = claudePolicyFlags(run.policy, { scripts: projection?.workspace.scripts, warn: (message) => options.logger.warn(message) })
  const permissionMode = config.permissionMode ?? policyFlags.permissionMode
  const appendSystemPrompt = harnessSystemPrompt(options.systemPrompts)
  const jsonSchema = claudeOutputSchema(options)
  // Skills, MCP servers and plugins in Claude Code's own format (written once per workspace hash).
  const projected = (await projection?.project(claudeCodeProjection)) ?? { args: [] }
  // chat() tools: served from the host for this run only, as the MCP server `tanstack`.
  const tools = await openClaudeToolBridge(options, handle, runId)
  try {
    const promptFile = handle.capabilities.writableStdin ? undefined : await run.writeRunFile('prompt', prompt, 'the prompt file')
    const command = buildClaudeCommand({
      model,
      ...(config.executable ? { executable: config.executable } : {}),
      ...(sessionId ? { sessionId } : {}),
      ...(config.maxTurns ? { maxTurns: config.maxTurns } : {}),
      allowedTools: [...policyFlags.allowedTools, ...(tools?.flags.allowedTools ?? []), ...(config.allowedTools ?? [])],
      disallowedTools: [...policyFlags.disallowedTools, ...(config.disallowedTools ?? [])],
      ...(config.systemPrompt ? { systemPrompt: config.systemPrompt } : {}),
      ...(appendSystemPrompt ? { appendSystemPrompt } : {}),
      permissionMode,
      ...(jsonSchema ? { jsonSchema } : {}),
      extraArgs: [...projected.args, ...(tools?.flags.args ?? []), ...(config.extraArgs ?? [])],
      ...(promptFile ? { promptFile } : {}),
    })
    // Running as root, Claude Code accepts bypassPermissions only when told it is isolated; only a provider that promises isolation may say so.
    const claimsIsolation = permissionMode === 'bypassPermissions' && handle.capabilities.isolated === true
    const env = { ...run.cliEnv({ base: QUIET_ENV, settings: claimsIsolation ? { IS_SANDBOX: '1' } : {} }), ...tools?.flags.env }
    return { command, cwd, env, ...(promptFile ? {} : { stdin: prompt }), ...(tools ? { bridge: tools.bridge } : {}) }
  } catch (error) {
    await tools?.bridge.close()
    throw error
  }
}

