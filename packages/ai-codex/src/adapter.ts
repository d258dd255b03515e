/**
 * `codexText`: the Codex harness adapter. Its `chatStream` is core's shared run
 * loop (`runHarness`) plus what is Codex's own: the thread-id rule, the
 * `codex exec --json` translator, the resume check, and `prepare`.
 * Design notes: docs/design/harness-adapters.md
 */
import type { StreamChunk, TextOptions } from '@tanstack/ai'
import { excludeFromGit, harnessOptionFields, harnessRunError, harnessSystemPrompt, harnessTextAdapter, type HarnessAdapterPrepareContext, type HarnessCommonOptions, type HarnessLaunch, type HarnessTextAdapter, type SandboxHandle } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { openCodexToolBridge } from './bridge.js'
import { buildCodexCommand, codexConfigFlag, type CodexSandboxMode, type TomlValue } from './command.js'
import { CodexUnsupportedError } from './errors.js'
import { codexPolicySettings, type CodexPolicySettings } from './policy.js'
import { codexProjection } from './projection.js'
import { codexOutputSchema, withCodexStructuredOutput } from './structured-output.js'
import { codexSessionGoneMessage, codexThreadGone, createCodexTranslator } from './translate.js'

/** Options of {@link codexText}. */
export interface CodexOptions extends HarnessCommonOptions {
  /** The CLI to run: a name on the sandbox's `PATH` or an absolute path inside the sandbox. Default `codex`. */
  executable?: string
  /** Override the sandbox mode mapped from the policy: `'bypass'` (`--dangerously-bypass-approvals-and-sandbox`) or a Codex sandbox mode. */
  sandboxMode?: CodexSandboxMode | 'bypass'
  /** `-c key=value` overrides, e.g. `{ model_reasoning_effort: 'high' }`. Applied after the adapter's own. */
  config?: Record<string, TomlValue>
}

/** Per-call options: `chat({ modelOptions: { sessionId } })` resumes a Codex thread. */
export interface CodexModelOptions {
  /** The id from the `codex.session-id` event of an earlier run (`codex exec resume <id>`). */
  sessionId?: string
  [key: string]: unknown
}

/** The adapter type. */
export type CodexTextAdapter = HarnessTextAdapter<CodexModelOptions>

/** Host credentials forwarded to the CLI when the workspace does not set them. (Codex ignores `OPENAI_BASE_URL`: for another server declare a provider in `config`, `model_providers.<id>` with `wire_api = "responses"`; see docs/adapters/codex.md.) */
const FORWARDED_HOST_ENV = ['OPENAI_API_KEY', 'CODEX_API_KEY'] as const


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

/** The model ids the CLI takes. */
const MODEL_RULE = { pattern: /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/, expected: 'expected a model id such as "gpt-5.5"' }
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
  return harnessTextAdapter<CodexOptions, CodexModelOptions>(model, options, {
    harness: 'codex',
    modelRule: MODEL_RULE,
    optionsSchema,
    credentials: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
    forwardedHostEnv: FORWARDED_HOST_ENV,
    // chat({ outputSchema }) hands the schema to chatStream (--output-schema), which emits structured-output.complete.
    structuredOutput: 'event',
    unsupported: () => new CodexUnsupportedError(),
    run: (config, textOptions) => ({
      // --json on stdout: on a durable run it goes to the run journal, and an attach replays it (docs/replay.md).
      journal: true,
      sessionId: { pattern: SESSION_ID, refused: (id) => `codex: modelOptions.sessionId ${JSON.stringify(id.slice(0, 80))} is not a Codex thread id. Pass the value of an earlier run's codex.session-id event.` },
      sessionGone: (stderrTail) => {
        const gone = codexThreadGone(stderrTail)
        return gone ? codexSessionGoneMessage(gone) : undefined
      },
      translator: (ids) => {
        const translator = createCodexTranslator({ ...ids, model })
        return textOptions.outputSchema === undefined ? translator : withCodexStructuredOutput(translator)
      },
      prepare: (run) => prepareCodex(model, config, textOptions, run),
    }),
  })
}

/** Codex's part of a run: policy settings and rules, projected files, the tool bridge, the command and its environment. */
async function prepareCodex(model: string, config: CodexOptions, options: TextOptions<CodexModelOptions>, run: HarnessAdapterPrepareContext): Promise<HarnessLaunch> {
  const { handle, runId, threadId, prompt, sessionId, projection, cwd } = run
  const policy = codexPolicySettings(run.policy, { scripts: projection?.workspace.scripts, isolated: handle.capabilities.isolated === true })
  for (const warning of policy.warnings) options.logger.warn(`codex: ${warning}`)
  // Skills and MCP servers in Codex's own format (written once per workspace hash).
  const projected = (await projection?.project(codexProjection)) ?? { args: [] }
  const rulesWritten = await syncPolicyRules(handle, policy.rules)
  // chat() tools: served from the host for this run only, as the MCP server `tanstack`.
  const tools = await openCodexToolBridge(options, handle, runId)
  try {
    const instructions = harnessSystemPrompt(options.systemPrompts)
    const outputSchema = codexOutputSchema(options)
    const outputSchemaFile = outputSchema ? await run.writeRunFile('schema.json', JSON.stringify(outputSchema), 'the output schema file') : undefined
    const promptFile = handle.capabilities.writableStdin ? undefined : await run.writeRunFile('prompt', prompt, 'the prompt file')
    const command = buildCodexCommand({
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
      ...(outputSchemaFile ? { outputSchemaFile } : {}),
      extraArgs: [...projected.args.filter((arg) => arg !== '--trust'), ...(config.extraArgs ?? [])],
      ...(promptFile ? { promptFile } : {}),
    })
    const env = { ...run.cliEnv(), ...tools?.flags.env }
    return {
      command,
      cwd,
      env,
      ...(promptFile ? {} : { stdin: prompt }),
      ...(tools ? { bridge: tools.bridge } : {}),
      ...(sessionId ? { inspect: (event: unknown) => resumedElsewhere(event, sessionId, runId, threadId) } : {}),
    }
  } catch (error) {
    await tools?.bridge.close()
    throw error
  }
}

/** Codex answers an unknown thread id by silently starting a new thread: refuse instead of losing the context. */
function resumedElsewhere(event: unknown, sessionId: string, runId: string, threadId: string): StreamChunk | undefined {
  const started = event as { type?: string; thread_id?: string }
  if (started.type !== 'thread.started' || typeof started.thread_id !== 'string' || started.thread_id === sessionId) return undefined
  return harnessRunError(runId, threadId, codexSessionGoneMessage(`no thread ${JSON.stringify(sessionId)} (Codex started a new thread instead, so the run was stopped)`), 'session_not_found') as StreamChunk
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

