/**
 * `opencodeText`: the OpenCode harness adapter. Its `chatStream` is core's
 * shared run loop (`runHarness`) with what is OpenCode's own: the session-id
 * rule, the `opencode run --format json` translator, and `prepare`, which maps
 * the policy to OpenCode permissions, writes the run's inline config and run
 * files, opens the tool bridge and builds the command.
 */
import { posix } from 'node:path'
import type { TextOptions } from '@tanstack/ai'
import { harnessOptionFields, harnessSystemPrompt, harnessTextAdapter, type HarnessAdapterPrepareContext, type HarnessCommonOptions, type HarnessLaunch, type HarnessTextAdapter } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { openOpencodeToolBridge } from './bridge.js'
import { buildOpencodeCommand } from './command.js'
import { OpencodeUnsupportedError } from './errors.js'
import { mergePermission, opencodePermission, type OpencodePermission } from './policy.js'
import { hasProjectedConfig, OPENCODE_PROJECTED_CONFIG, opencodeProjection } from './projection.js'
import { FORWARDED_HOST_ENV, QUIET_ENV } from './cli-env.js'
import { createOpencodeTranslator } from './translate.js'

/** Options of {@link opencodeText}. */
export interface OpencodeOptions extends HarnessCommonOptions {
  /** The CLI to run: a name on the sandbox's `PATH` or an absolute path inside the sandbox. Default `opencode`. */
  executable?: string
  /** OpenCode agent (`--agent`), e.g. `build` (OpenCode's default) or `plan`. */
  agent?: string
  /** Provider-specific reasoning effort (`--variant`), e.g. `high`. */
  variant?: string
  /** Stream the model's reasoning as reasoning chunks (`--thinking`). Default `true`. */
  thinking?: boolean
  /**
   * Title of a new session. Default `tanstack <threadId>`. `false` lets OpenCode
   * generate one, which costs one more model request per new session.
   */
  title?: string | false
  /**
   * OpenCode configuration for every run (providers, models, agents, …), merged
   * over the project's `opencode.json`. Passed as `OPENCODE_CONFIG_CONTENT`;
   * strings may use OpenCode's `{env:NAME}` substitution.
   */
  config?: Record<string, unknown>
  /** OpenCode `permission` rules merged over those mapped from the sandbox policy (patterns given here win). */
  permission?: OpencodePermission
}

/** Per-call options: `chat({ modelOptions: { sessionId } })` resumes an OpenCode session. */
export interface OpencodeModelOptions {
  /** The id from the `opencode.session-id` event of an earlier run (`ses_…`). */
  sessionId?: string
  [key: string]: unknown
}

/** The adapter type. */
export type OpencodeTextAdapter = HarnessTextAdapter<OpencodeModelOptions>


const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/
const permissionAction = z.enum(['allow', 'ask', 'deny'])
const optionsSchema = z
  .object({
    executable: z.string().min(1).optional(),
    agent: z.string().regex(NAME, 'expected an agent name such as "build"').optional(),
    variant: z.string().regex(NAME, 'expected a variant name such as "high"').optional(),
    thinking: z.boolean().optional(),
    title: z.union([z.string().min(1), z.literal(false)]).optional(),
    config: z.record(z.string(), z.unknown()).optional(),
    permission: z.record(z.string(), z.union([permissionAction, z.record(z.string(), permissionAction)])).optional(),
    ...harnessOptionFields,
  })
  .strict()

/** The model ids the CLI takes. */
const MODEL_RULE = { pattern: /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:@/+-]*$/, expected: 'expected "provider/model", such as "anthropic/claude-sonnet-4-5"' }
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,199}$/
/** What OpenCode prints when `--session` names a session it does not have. */
const SESSION_GONE = /Session not found/

/**
 * Create the OpenCode adapter. It requires a sandbox (`withSandbox`).
 *
 * @param model - `provider/model` as OpenCode names it, e.g. `anthropic/claude-sonnet-4-5`.
 * @param options - See {@link OpencodeOptions}.
 * @returns A `TextAdapter` whose `chatStream` runs `opencode run` in the run's sandbox.
 * @throws SandboxConfigError naming the field for an invalid model or option.
 * @example
 * ```ts
 * chat({ adapter: opencodeText('anthropic/claude-sonnet-4-5'), threadId, messages, middleware: [withSandbox(sandbox)] })
 * ```
 */
export function opencodeText(model: string, options: OpencodeOptions = {}): OpencodeTextAdapter {
  return harnessTextAdapter<OpencodeOptions, OpencodeModelOptions>(model, options, {
    harness: 'opencode',
    modelRule: MODEL_RULE,
    optionsSchema,
    credentials: ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY', 'OPENCODE_API_KEY'],
    forwardedHostEnv: FORWARDED_HOST_ENV,
    structuredOutput: 'refused',
    unsupported: () => new OpencodeUnsupportedError(),
    run: (config, textOptions) => ({
      // No `journal`: OpenCode runs are not journaled, so runHarness refuses an attach (DurableAttachNotSupportedError).
      sessionId: { pattern: SESSION_ID, refused: (id) => `opencode: modelOptions.sessionId ${JSON.stringify(id.slice(0, 80))} is not an OpenCode session id. Pass the value of an earlier run's opencode.session-id event.` },
      sessionGone: (stderrTail) => (SESSION_GONE.test(stderrTail) ? `opencode: could not resume the session: Session not found (sessions live in OpenCode's data directory under $HOME inside the sandbox that ran them). Leave modelOptions.sessionId out to start a new session.` : undefined),
      translator: (ids) => createOpencodeTranslator({ ...ids, model, ...(ids.sessionId ? { resumeSessionId: ids.sessionId } : {}) }),
      prepare: (run) => prepareOpencode(model, config, textOptions, run),
    }),
  })
}

/** OpenCode's part of a run: permissions, run files, inline config, the tool bridge, the command and its environment. */
async function prepareOpencode(model: string, config: OpencodeOptions, options: TextOptions<OpencodeModelOptions>, run: HarnessAdapterPrepareContext): Promise<HarnessLaunch> {
  const { handle, runId, threadId, prompt, sessionId, projection, cwd } = run
  const permission = mergePermission(opencodePermission(run.policy, projection?.workspace.scripts, { warn: (message) => options.logger.warn(message) }), config.permission ?? {})
  // Skills and MCP servers in OpenCode's own format (written once per workspace hash).
  await projection?.project(opencodeProjection)
  // chat() tools: served from the host for this run only, as the MCP server `tanstack`.
  const tools = await openOpencodeToolBridge(options, handle, runId)
  try {
    const system = harnessSystemPrompt(options.systemPrompts)
    const systemFile = system ? await run.writeRunFile('system.md', system, 'the system prompt file') : undefined
    const inline = inlineConfig(config.config, tools?.config.mcp, systemFile)
    const env: Record<string, string> = {
      ...run.cliEnv({
        base: QUIET_ENV,
        settings: {
          OPENCODE_PERMISSION: JSON.stringify(permission),
          ...(inline ? { OPENCODE_CONFIG_CONTENT: JSON.stringify(inline) } : {}),
          ...(projection && hasProjectedConfig(projection.workspace) ? { OPENCODE_CONFIG: posix.join(handle.workspaceRoot, OPENCODE_PROJECTED_CONFIG) } : {}),
        },
      }),
      ...tools?.config.env,
    }
    const promptFile = handle.capabilities.writableStdin ? undefined : await run.writeRunFile('prompt', prompt, 'the prompt file')
    const command = buildOpencodeCommand({
      model,
      ...(config.executable ? { executable: config.executable } : {}),
      ...(sessionId ? { sessionId } : {}),
      ...(config.title !== false ? { title: config.title ?? `tanstack ${threadId}` } : {}),
      ...(config.agent ? { agent: config.agent } : {}),
      ...(config.variant ? { variant: config.variant } : {}),
      thinking: config.thinking ?? true,
      ...(config.extraArgs ? { extraArgs: config.extraArgs } : {}),
      ...(promptFile ? { promptFile } : {}),
    })
    return { command, cwd, env, ...(promptFile ? {} : { stdin: prompt }), ...(tools ? { bridge: tools.bridge } : {}) }
  } catch (error) {
    await tools?.bridge.close()
    throw error
  }
}

/** The run's inline OpenCode config: the caller's `config`, plus the bridge's MCP server and the system-prompt instruction file. `undefined` when empty. */
function inlineConfig(base: Record<string, unknown> | undefined, bridgeMcp: Record<string, unknown> | undefined, systemFile: string | undefined): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = { ...base }
  if (bridgeMcp) out.mcp = { ...(isRecord(out.mcp) ? out.mcp : {}), ...bridgeMcp }
  if (systemFile) out.instructions = [...(Array.isArray(out.instructions) ? out.instructions : []), systemFile]
  return Object.keys(out).length > 0 ? out : undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
