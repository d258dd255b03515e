/**
 * `codexText`: the Codex harness adapter. Its `chatStream` reads the run's
 * sandbox from the capability bus, builds the prompt and the command, runs
 * `codex exec --json` inside the sandbox through `spawnNdjson`, and translates
 * each stdout line into chat chunks. It owns no process management itself:
 * abort and early stop kill the CLI's process group through the spawn handle.
 * Invariant: the stream never throws; every failure ends it with `RUN_ERROR`.
 */
import type { AdapterYieldChunk, ModelMessage, TextAdapter, TextOptions } from '@tanstack/ai'
import {
  createRunScopedIdGen,
  defineSandboxPolicy,
  excludeFromGit,
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
  type SandboxHandle,
  type SecretRef,
  buildHarnessPrompt,
} from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { openCodexToolBridge } from './bridge.js'
import { buildCodexCommand, codexConfigFlag, type CodexSandboxMode, type TomlValue } from './command.js'
import { CodexUnsupportedError } from './errors.js'
import { codexPolicySettings, type CodexPolicySettings } from './policy.js'
import { codexProjection } from './projection.js'
import { codexSessionGoneMessage, createCodexTranslator, type CodexExit } from './translate.js'

/** Options of {@link codexText}. */
export interface CodexOptions {
  /** The CLI to run: a name on the sandbox's `PATH` or an absolute path inside the sandbox. Default `codex`. */
  executable?: string
  /** Override the sandbox mode mapped from the policy: `'bypass'` (`--dangerously-bypass-approvals-and-sandbox`) or a Codex sandbox mode. */
  sandboxMode?: CodexSandboxMode | 'bypass'
  /** `-c key=value` overrides, e.g. `{ model_reasoning_effort: 'high' }`. Applied after the adapter's own. */
  config?: Record<string, TomlValue>
  /** Working directory inside the workspace. Default: the workspace root. */
  cwd?: string
  /** Extra environment for the CLI (e.g. `CODEX_HOME`, `HOME`, `OPENAI_API_KEY`). Values may be secret references. */
  env?: Record<string, string | SecretRef>
  /** Extra CLI flags, appended verbatim before the positional arguments. */
  extraArgs?: string[]
  /** Stop the run after this many ms: the CLI's process group is killed and the run ends with `RUN_ERROR` `timeout`. Default: no limit. */
  timeoutMs?: number
}

/** Per-call options: `chat({ modelOptions: { sessionId } })` resumes a Codex thread. */
export interface CodexModelOptions {
  /** The id from the `codex.session-id` event of an earlier run (`codex exec resume <id>`). */
  sessionId?: string
  [key: string]: unknown
}

/** The adapter type. */
export type CodexTextAdapter = TextAdapter<string, CodexModelOptions, readonly ['text'], any>

/** Host credentials forwarded to the CLI when the workspace does not set them. (Codex ignores `OPENAI_BASE_URL`: for another server declare a provider in `config`, `model_providers.<id>` with `wire_api = "responses"`; see docs/adapters/codex.md.) */
const FORWARDED_HOST_ENV = ['OPENAI_API_KEY', 'CODEX_API_KEY'] as const

/** Where the prompt file goes on providers without writable stdin; the command removes it when the CLI starts. */
const RUN_FILES_DIR = '/tmp/tanstack-codex'

/** Settings that keep the CLI from loading plugins or sending analytics from inside a sandbox. */
const QUIET_CONFIG = [codexConfigFlag('analytics.enabled', false), codexConfigFlag('features.plugins', false)]

/** The execpolicy file the adapter writes for the sandbox policy's command rules (loaded with `--trust`). */
export const CODEX_POLICY_RULES = '.codex/rules/tanstack-policy.rules'

const tomlValueSchema: z.ZodType<TomlValue> = z.lazy(() => z.union([z.string(), z.number(), z.boolean(), z.array(tomlValueSchema)]))

const optionsSchema = z
  .object({
    executable: z.string().min(1).optional(),
    sandboxMode: z.enum(['bypass', 'read-only', 'workspace-write', 'danger-full-access']).optional(),
    config: z.record(z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'config keys are dotted TOML paths such as "model_reasoning_effort"'), tomlValueSchema).optional(),
    ...harnessOptionFields,
  })
  .strict()

const MODEL = /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/
/** A Codex thread id (a UUID) or thread name: never starts with `-`, so it cannot pass as a flag. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/

/**
 * Create the Codex adapter. It requires a sandbox (`withSandbox`).
 *
 * @param model - A model id the configured provider serves, e.g. `gpt-5.5` (`codex exec -m`).
 * @param options - See {@link CodexOptions}.
 * @throws SandboxConfigError naming the field for an invalid model or option.
 * @example
 * ```ts
 * chat({ adapter: codexText('gpt-5.5', { timeoutMs: 600_000 }), threadId, messages, middleware: [withSandbox(sandbox)] })
 * ```
 */
export function codexText(model: string, options: CodexOptions = {}): CodexTextAdapter {
  parseOptions(z.string().regex(MODEL, 'expected a model id such as "gpt-5.5"'), model, 'codexText.model')
  const config = parseOptions(optionsSchema, options, 'codexText.options') as CodexOptions

  return {
    kind: 'text',
    name: 'codex',
    model,
    requires: [SandboxCapability],
    '~types': undefined as unknown as CodexTextAdapter['~types'],
    chatStream: (textOptions) =>
      guardHarnessRun({ harness: 'codex', options: textOptions, secrets: { forwardedHostEnv: FORWARDED_HOST_ENV, env: config.env }, run: (run) => runCodex(model, config, textOptions, run) }),
    async structuredOutput() {
      throw new CodexUnsupportedError()
    },
  }
}

/** The run itself: prompt, policy rules, command, the CLI through `spawnNdjson`, its lines translated. Inside `guardHarnessRun`, which reports what it throws as `adapter_error`. */
async function* runCodex(model: string, config: CodexOptions, options: TextOptions<CodexModelOptions>, run: HarnessRunContext): AsyncIterable<AdapterYieldChunk> {
  const capabilities = options.capabilities!
  const handle = getSandbox(capabilities)
  const { runId, threadId } = run
  const translator = createCodexTranslator({ runId, threadId, model, genId: createRunScopedIdGen(runId) })
  const sessionId = typeof options.modelOptions?.sessionId === 'string' ? options.modelOptions.sessionId : undefined
  const prompt = buildHarnessPrompt(options.messages as ModelMessage[], sessionId !== undefined)
  yield* translator.start() as AdapterYieldChunk[]
  if (sessionId !== undefined && !SESSION_ID.test(sessionId)) {
    yield harnessRunError(runId, threadId, `codex: modelOptions.sessionId ${JSON.stringify(sessionId.slice(0, 80))} is not a Codex thread id. Pass the value of an earlier run's codex.session-id event.`, 'invalid_session_id')
    return
  }
  if (prompt.trim() === '') {
    yield harnessRunError(runId, threadId, 'codex: the latest user message has no text to send. Pass a { role: "user" } message with text to chat().', 'no_prompt')
    return
  }

  const policy = codexPolicySettings(getSandboxPolicy(capabilities, { optional: true }) ?? defineSandboxPolicy(), { scripts: getProjection(capabilities, { optional: true })?.workspace.scripts })
  for (const warning of policy.warnings) options.logger.warn(`codex: ${warning}`)
  const requestSignal = (options.request as RequestInit | undefined)?.signal ?? undefined
  const timeout = config.timeoutMs ? AbortSignal.timeout(config.timeoutMs) : undefined
  // Stops the CLI when the consumer leaves while a read is pending (the merged stream cannot return it).
  const stop = new AbortController()
  const signal = AbortSignal.any([stop.signal, ...(requestSignal ? [requestSignal] : []), ...(timeout ? [timeout] : [])])
  // Skills and MCP servers in Codex's own format (written once per workspace hash).
  const projected = (await getProjection(capabilities, { optional: true })?.project(codexProjection)) ?? { args: [] }
  const rulesWritten = await syncPolicyRules(handle, policy.rules)
  // chat() tools: served from the host for this run only, as the MCP server `tanstack`.
  const tools = await openCodexToolBridge(options, handle, runId)
  try {
    const instructions = harnessSystemPrompt(options.systemPrompts)
    const projectedArgs = projected.args.filter((arg) => arg !== '--trust')
    const commandInput = {
      model,
      ...(config.executable ? { executable: config.executable } : {}),
      ...(sessionId ? { sessionId } : {}),
      bypassSandbox: config.sandboxMode ? config.sandboxMode === 'bypass' : policy.bypassSandbox,
      config: [
        ...QUIET_CONFIG,
        ...sandboxConfig(config.sandboxMode, policy),
        ...(instructions ? [codexConfigFlag('developer_instructions', instructions)] : []),
        ...(tools?.flags.config ?? []),
        ...Object.entries(config.config ?? {}).map(([key, value]) => codexConfigFlag(key, value)),
      ],
      trust: rulesWritten || projected.args.includes('--trust'),
      extraArgs: [...projectedArgs, ...(config.extraArgs ?? [])],
    }
    const env = { ...cliEnv(config, capabilities), ...tools?.flags.env }
    const cwd = toSandboxPath(config.cwd ?? '.', handle.workspaceRoot)
    const promptFile = handle.capabilities.writableStdin ? undefined : await writeSandboxRunFile(handle, { file: sandboxRunFilePath(RUN_FILES_DIR, runId, 'prompt'), content: prompt, harness: 'codex', what: 'the prompt file' })
    const command = buildCodexCommand({ ...commandInput, ...(promptFile ? { promptFile } : {}) })
    options.logger.request(`codex: ${run.redact(command)}`, { provider: 'codex', model, cwd })

    let exit: CodexExit = { exitCode: 0, stderrTail: '' }
    let resumedElsewhere = false
    const translated = async function* (): AsyncGenerator<AdapterYieldChunk> {
      for await (const line of spawnNdjson(handle, command, {
        cwd,
        env,
        ...(promptFile ? {} : { stdin: prompt }),
        signal,
        onNonJsonLine: (text) => options.logger.provider(`codex: non-JSON stdout line: ${run.redact(text.slice(0, 200))}`),
        onExit: (result) => {
          exit = result
        },
      })) {
        options.logger.provider('codex line', { line: run.redact(JSON.stringify(line)) })
        const started = line as { type?: string; thread_id?: string }
        if (sessionId !== undefined && started.type === 'thread.started' && typeof started.thread_id === 'string' && started.thread_id !== sessionId) {
          // Codex answers an unknown thread id by silently starting a new thread: refuse instead of losing the context.
          resumedElsewhere = true
          yield harnessRunError(runId, threadId, codexSessionGoneMessage(`no thread ${JSON.stringify(sessionId)} (Codex started a new thread instead, so the run was stopped)`), 'session_not_found')
          return // leaving the loop kills the CLI
        }
        yield* translator.push(line) as AdapterYieldChunk[]
      }
    }
    // Live bridged-tool events (CUSTOM chunks) are spliced in as they happen.
    yield* tools ? mergeChunkStreams(translated(), tools.bridge.chunks as AsyncIterable<AdapterYieldChunk>) : translated()
    if (timeout?.aborted && !requestSignal?.aborted) {
      yield harnessRunError(runId, threadId, `codex: the run took longer than timeoutMs (${config.timeoutMs} ms); the CLI was stopped.`, 'timeout')
      return
    }
    if (requestSignal?.aborted || resumedElsewhere) return
    yield* translator.finish(exit) as AdapterYieldChunk[]
  } finally {
    stop.abort()
    await tools?.bridge.close()
  }
}

/** `-c` overrides for the sandbox: the explicit `sandboxMode` option, else the policy's. */
function sandboxConfig(mode: CodexOptions['sandboxMode'], policy: CodexPolicySettings): string[] {
  if (mode === undefined) return policy.config
  const rest = policy.config.filter((entry) => !entry.startsWith('sandbox_mode=') && !entry.startsWith('approval_policy='))
  return mode === 'bypass' ? rest : [codexConfigFlag('sandbox_mode', mode), codexConfigFlag('approval_policy', 'never'), ...rest]
}

/**
 * Keep {@link CODEX_POLICY_RULES} in step with the policy: written (and kept
 * out of git) when there are rules, removed when there are none.
 * @returns Whether the run has a rules file (and so needs `--trust`).
 */
async function syncPolicyRules(handle: SandboxHandle, rules: string): Promise<boolean> {
  if (rules === '') {
    await handle.fs.remove(CODEX_POLICY_RULES) // no error when it is missing
    return false
  }
  await handle.fs.write(CODEX_POLICY_RULES, `# Written by @tanstack/ai-codex from the sandbox policy on every run; edit the policy, not this file.\n${rules}`)
  await excludeFromGit(handle, [CODEX_POLICY_RULES])
  return true
}

/** The CLI's environment: workspace secrets and forwarded host credentials, then `options.env`. */
function cliEnv(config: CodexOptions, capabilities: NonNullable<TextOptions<CodexModelOptions>['capabilities']>): Record<string, string> {
  const secrets = getProjection(capabilities, { optional: true })?.resolveSecretEnv() ?? {}
  const env: Record<string, string> = {}
  for (const name of FORWARDED_HOST_ENV) {
    const value = secrets[name] || process.env[name]
    if (value) env[name] = value
  }
  for (const [name, value] of Object.entries(config.env ?? {})) env[name] = typeof value === 'string' ? value : resolveSecret(value)
  return env
}
