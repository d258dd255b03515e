/**
 * `claudeCodeText`: the Claude Code harness adapter. Its `chatStream` reads
 * the run's sandbox from the capability bus, builds the prompt and the
 * command, runs the `claude` CLI inside the sandbox through `spawnNdjson`,
 * and translates each stdout line into chat chunks. It owns no process
 * management itself: abort and early stop kill the CLI's process group
 * through the spawn handle.
 */
import type { AdapterYieldChunk, ModelMessage, TextAdapter, TextOptions } from '@tanstack/ai'
import {
  createRunScopedIdGen,
  defineSandboxPolicy,
  getProjection,
  getSandbox,
  getSandboxPolicy,
  guardHarnessRun,
  harnessOptionFields,
  harnessRunError,
  harnessSystemPrompt,
  mergeChunkStreams,
  parseOptions,
  resolveSecret,
  SandboxCapability,
  sandboxRunFilePath,
  spawnNdjson,
  toSandboxPath,
  writeSandboxRunFile,
  type HarnessRunContext,
  type SecretRef,
  buildHarnessPrompt,
} from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { openClaudeToolBridge } from './bridge.js'
import { buildClaudeCommand, type ClaudePermissionMode } from './command.js'
import { ClaudeCodeUnsupportedError } from './errors.js'
import { claudePolicyFlags } from './policy.js'
import { claudeCodeProjection } from './projection.js'
import { createClaudeCodeTranslator, type ClaudeCodeExit } from './translate.js'

/** Options of {@link claudeCodeText}. */
export interface ClaudeCodeOptions {
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
  /** Working directory inside the workspace. Default: the workspace root. */
  cwd?: string
  /** Extra environment for the CLI (e.g. `ANTHROPIC_BASE_URL`, `HOME`). Values may be secret references. */
  env?: Record<string, string | SecretRef>
  /** Extra CLI flags, appended verbatim. */
  extraArgs?: string[]
  /** Stop the run after this many ms: the CLI's process group is killed and the run ends with `RUN_ERROR` `timeout`. Default: no limit. */
  timeoutMs?: number
}

/** Per-call options: `chat({ modelOptions: { sessionId } })` resumes a CLI session. */
export interface ClaudeCodeModelOptions {
  /** The id from the `claude-code.session-id` event of an earlier run. */
  sessionId?: string
  [key: string]: unknown
}

/** The adapter type. */
export type ClaudeCodeTextAdapter = TextAdapter<string, ClaudeCodeModelOptions, readonly ['text'], any>

/** Host environment variables forwarded to the CLI when the workspace does not set them. */
const FORWARDED_HOST_ENV = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL', 'CLAUDE_CODE_OAUTH_TOKEN'] as const

/** Where the prompt file goes on providers without writable stdin; the command removes it when the CLI starts. */
const RUN_FILES_DIR = '/tmp/tanstack-claude-code'

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

const MODEL = /^[A-Za-z0-9][A-Za-z0-9._:@/[\]-]*$/
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
  parseOptions(z.string().regex(MODEL, 'expected a model alias such as "sonnet" or a model id such as "claude-sonnet-4-5"'), model, 'claudeCodeText.model')
  const config = parseOptions(optionsSchema, options, 'claudeCodeText.options') as ClaudeCodeOptions

  return {
    kind: 'text',
    name: 'claude-code',
    model,
    requires: [SandboxCapability],
    '~types': undefined as unknown as ClaudeCodeTextAdapter['~types'],
    chatStream: (textOptions) =>
      guardHarnessRun({ harness: 'claude-code', runIdPrefix: 'claude', options: textOptions, secrets: { forwardedHostEnv: FORWARDED_HOST_ENV, env: config.env }, run: (run) => runClaudeCode(model, config, textOptions, run) }),
    async structuredOutput() {
      throw new ClaudeCodeUnsupportedError()
    },
  }
}

/** The run itself: prompt, command, the CLI through `spawnNdjson`, its lines translated. Inside `guardHarnessRun`, which reports what it throws as `adapter_error`. */
async function* runClaudeCode(model: string, config: ClaudeCodeOptions, options: TextOptions<ClaudeCodeModelOptions>, run: HarnessRunContext): AsyncIterable<AdapterYieldChunk> {
  const capabilities = options.capabilities!
  const handle = getSandbox(capabilities)
  const { runId, threadId } = run
  const translator = createClaudeCodeTranslator({ runId, threadId, model, genId: createRunScopedIdGen(runId) })
  const sessionId = typeof options.modelOptions?.sessionId === 'string' ? options.modelOptions.sessionId : undefined
  const prompt = buildHarnessPrompt(options.messages as ModelMessage[], sessionId !== undefined)
  yield* translator.start() as AdapterYieldChunk[]
  if (sessionId !== undefined && !SESSION_ID.test(sessionId)) {
    yield harnessRunError(runId, threadId, `claude-code: modelOptions.sessionId ${JSON.stringify(sessionId.slice(0, 80))} is not a Claude Code session id: expected a session UUID such as "0b5c3f0e-8a1d-4e0a-9f3b-2d6c1e7a4b90" (letters, digits, ".", "_", ":" or "-", not starting with "-"). Pass the value of an earlier run's claude-code.session-id event, or leave sessionId out to start a new session.`, 'invalid_session_id')
    return
  }
  if (prompt.trim() === '') {
    yield harnessRunError(runId, threadId, 'claude-code: the latest user message has no text to send. Pass a { role: "user" } message with text to chat().', 'no_prompt')
    return
  }

  const policyFlags = claudePolicyFlags(getSandboxPolicy(capabilities, { optional: true }) ?? defineSandboxPolicy(), { scripts: getProjection(capabilities, { optional: true })?.workspace.scripts, warn: (message) => options.logger.warn(message) })
  const permissionMode = config.permissionMode ?? policyFlags.permissionMode
  const requestSignal = (options.request as RequestInit | undefined)?.signal ?? undefined
  const timeout = config.timeoutMs ? AbortSignal.timeout(config.timeoutMs) : undefined
  // Stops the CLI when the consumer leaves while a read is pending (the merged stream cannot return it).
  const stop = new AbortController()
  const signal = AbortSignal.any([stop.signal, ...(requestSignal ? [requestSignal] : []), ...(timeout ? [timeout] : [])])
  const appendSystemPrompt = harnessSystemPrompt(options.systemPrompts)
  // Skills, MCP servers and plugins in Claude Code's own format (written once per workspace hash).
  const projected = (await getProjection(capabilities, { optional: true })?.project(claudeCodeProjection)) ?? { args: [] }
  // chat() tools: served from the host for this run only, as the MCP server `tanstack`.
  const tools = await openClaudeToolBridge(options, handle, runId)
  try {
    const commandInput = {
      model,
      ...(config.executable ? { executable: config.executable } : {}),
      ...(sessionId ? { sessionId } : {}),
      ...(config.maxTurns ? { maxTurns: config.maxTurns } : {}),
      allowedTools: [...policyFlags.allowedTools, ...(tools?.flags.allowedTools ?? []), ...(config.allowedTools ?? [])],
      disallowedTools: [...policyFlags.disallowedTools, ...(config.disallowedTools ?? [])],
      ...(config.systemPrompt ? { systemPrompt: config.systemPrompt } : {}),
      ...(appendSystemPrompt ? { appendSystemPrompt } : {}),
      permissionMode,
      extraArgs: [...projected.args, ...(tools?.flags.args ?? []), ...(config.extraArgs ?? [])],
    }
    const env = { ...cliEnv(config, capabilities, permissionMode), ...tools?.flags.env }
    const cwd = toSandboxPath(config.cwd ?? '.', handle.workspaceRoot)
    const promptFile = handle.capabilities.writableStdin ? undefined : await writeSandboxRunFile(handle, { file: sandboxRunFilePath(RUN_FILES_DIR, runId, 'prompt'), content: prompt, harness: 'claude-code', what: 'the prompt file' })
    const command = buildClaudeCommand({ ...commandInput, ...(promptFile ? { promptFile } : {}) })
    options.logger.request(`claude-code: ${command}`, { provider: 'claude-code', model, cwd })

    let exit: ClaudeCodeExit = { exitCode: 0, stderrTail: '' }
    const translated = async function* (): AsyncGenerator<AdapterYieldChunk> {
      for await (const line of spawnNdjson(handle, command, {
        cwd,
        env,
        ...(promptFile ? {} : { stdin: prompt }),
        signal,
        onNonJsonLine: (text) => options.logger.provider(`claude-code: non-JSON stdout line: ${run.redact(text.slice(0, 200))}`),
        onExit: (result) => {
          exit = result
        },
      })) {
        options.logger.provider('claude-code line', { line: run.redact(JSON.stringify(line)) })
        yield* translator.push(line) as AdapterYieldChunk[]
      }
    }
    // Live bridged-tool events (CUSTOM chunks) are spliced in as they happen.
    yield* tools ? mergeChunkStreams(translated(), tools.bridge.chunks as AsyncIterable<AdapterYieldChunk>) : translated()
    if (timeout?.aborted && !requestSignal?.aborted) {
      yield harnessRunError(runId, threadId, `claude-code: the run took longer than timeoutMs (${config.timeoutMs} ms); the CLI was stopped.`, 'timeout')
      return
    }
    if (requestSignal?.aborted) return
    yield* translator.finish(exit) as AdapterYieldChunk[]
  } finally {
    stop.abort()
    await tools?.bridge.close()
  }
}

/** The CLI's environment: quiet defaults, workspace secrets, forwarded host credentials, then `options.env`. */
function cliEnv(config: ClaudeCodeOptions, capabilities: NonNullable<TextOptions<ClaudeCodeModelOptions>['capabilities']>, permissionMode: ClaudePermissionMode): Record<string, string> {
  const secrets = getProjection(capabilities, { optional: true })?.resolveSecretEnv() ?? {}
  const env: Record<string, string> = { ...QUIET_ENV }
  for (const name of FORWARDED_HOST_ENV) {
    const value = secrets[name] || process.env[name]
    if (value) env[name] = value
  }
  // Running as root, Claude Code accepts bypassPermissions only inside a declared sandbox.
  if (permissionMode === 'bypassPermissions') env.IS_SANDBOX = '1'
  for (const [name, value] of Object.entries(config.env ?? {})) env[name] = typeof value === 'string' ? value : resolveSecret(value)
  return env
}
