/**
 * `opencodeText`: the OpenCode harness adapter. Its `chatStream` reads the
 * run's sandbox from the capability bus, builds the prompt, the command and
 * the CLI's environment (permissions from the policy, the run's inline
 * config), runs `opencode run --format json` inside the sandbox through
 * `spawnNdjson`, and translates each stdout line into chat chunks. It owns no
 * process management itself: abort and early stop kill the CLI's process
 * group through the spawn handle.
 */
import { posix } from 'node:path'
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
  removeSandboxRunFiles,
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
import { openOpencodeToolBridge } from './bridge.js'
import { buildOpencodeCommand } from './command.js'
import { OpencodeUnsupportedError } from './errors.js'
import { mergePermission, opencodePermission, type OpencodePermission } from './policy.js'
import { hasProjectedConfig, OPENCODE_PROJECTED_CONFIG, opencodeProjection } from './projection.js'
import { cliEnv, FORWARDED_HOST_ENV } from './cli-env.js'
import { createOpencodeTranslator, type OpencodeExit } from './translate.js'

/** Options of {@link opencodeText}. */
export interface OpencodeOptions {
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
  /** Working directory inside the workspace. Default: the workspace root. */
  cwd?: string
  /** Extra environment for the CLI (e.g. `HOME`, a provider key). Values may be secret references. */
  env?: Record<string, string | SecretRef>
  /** Extra CLI flags, appended verbatim. */
  extraArgs?: string[]
  /** Stop the run after this many ms: the CLI's process group is killed and the run ends with `RUN_ERROR` `timeout`. Default: no limit. */
  timeoutMs?: number
}

/** Per-call options: `chat({ modelOptions: { sessionId } })` resumes an OpenCode session. */
export interface OpencodeModelOptions {
  /** The id from the `opencode.session-id` event of an earlier run (`ses_…`). */
  sessionId?: string
  [key: string]: unknown
}

/** The adapter type. */
export type OpencodeTextAdapter = TextAdapter<string, OpencodeModelOptions, readonly ['text'], any>

/** Where run files go: the prompt on providers without writable stdin, and the system-prompt instruction file. Removed when the run ends. */
const RUN_FILES_DIR = '/tmp/tanstack-opencode'

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

const MODEL = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:@/+-]*$/
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,199}$/

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
  parseOptions(z.string().regex(MODEL, 'expected "provider/model", such as "anthropic/claude-sonnet-4-5"'), model, 'opencodeText.model')
  const config = parseOptions(optionsSchema, options, 'opencodeText.options') as OpencodeOptions

  return {
    kind: 'text',
    name: 'opencode',
    model,
    requires: [SandboxCapability],
    '~types': undefined as unknown as OpencodeTextAdapter['~types'],
    chatStream: (textOptions) =>
      guardHarnessRun({ harness: 'opencode', options: textOptions, secrets: { forwardedHostEnv: FORWARDED_HOST_ENV, env: config.env }, run: (run) => runOpencode(model, config, textOptions, run) }),
    async structuredOutput() {
      throw new OpencodeUnsupportedError()
    },
  }
}

/** The run itself: prompt and run files, permissions and inline config, the CLI through `spawnNdjson`, its lines translated. Inside `guardHarnessRun`, which reports what it throws as `adapter_error`. */
async function* runOpencode(model: string, config: OpencodeOptions, options: TextOptions<OpencodeModelOptions>, run: HarnessRunContext): AsyncIterable<AdapterYieldChunk> {
  const capabilities = options.capabilities!
  const handle = getSandbox(capabilities)
  const { runId, threadId } = run
  const sessionId = typeof options.modelOptions?.sessionId === 'string' ? options.modelOptions.sessionId : undefined
  const translator = createOpencodeTranslator({ runId, threadId, model, genId: createRunScopedIdGen(runId), ...(sessionId ? { resumeSessionId: sessionId } : {}) })
  const prompt = buildHarnessPrompt(options.messages as ModelMessage[], sessionId !== undefined)
  yield* translator.start() as AdapterYieldChunk[]
  if (sessionId !== undefined && !SESSION_ID.test(sessionId)) {
    yield harnessRunError(runId, threadId, `opencode: modelOptions.sessionId ${JSON.stringify(sessionId.slice(0, 80))} is not an OpenCode session id. Pass the value of an earlier run's opencode.session-id event.`, 'invalid_session_id')
    return
  }
  if (prompt.trim() === '') {
    yield harnessRunError(runId, threadId, 'opencode: the latest user message has no text to send. Pass a { role: "user" } message with text to chat().', 'no_prompt')
    return
  }

  const projection = getProjection(capabilities, { optional: true })
  const permission = mergePermission(opencodePermission(getSandboxPolicy(capabilities, { optional: true }) ?? defineSandboxPolicy(), projection?.workspace.scripts, { warn: (message) => options.logger.warn(message) }), config.permission ?? {})
  const requestSignal = (options.request as RequestInit | undefined)?.signal ?? undefined
  const timeout = config.timeoutMs ? AbortSignal.timeout(config.timeoutMs) : undefined
  // Stops the CLI when the consumer leaves while a read is pending (the merged stream cannot return it).
  const stop = new AbortController()
  const signal = AbortSignal.any([stop.signal, ...(requestSignal ? [requestSignal] : []), ...(timeout ? [timeout] : [])])
  // Skills and MCP servers in OpenCode's own format (written once per workspace hash).
  await projection?.project(opencodeProjection)
  // chat() tools: served from the host for this run only, as the MCP server `tanstack`.
  const tools = await openOpencodeToolBridge(options, handle, runId)
  const runFiles: string[] = []
  try {
    const system = harnessSystemPrompt(options.systemPrompts)
    const systemFile = system ? sandboxRunFilePath(RUN_FILES_DIR, runId, 'system.md') : undefined
    if (systemFile) await writeSandboxRunFile(handle, { file: systemFile, content: system, harness: 'opencode' }).finally(() => runFiles.push(systemFile))
    const inline = inlineConfig(config.config, tools?.config.mcp, systemFile)
    const env: Record<string, string> = {
      ...cliEnv(config, capabilities, {
        OPENCODE_PERMISSION: JSON.stringify(permission),
        ...(inline ? { OPENCODE_CONFIG_CONTENT: JSON.stringify(inline) } : {}),
        ...(projection && hasProjectedConfig(projection.workspace) ? { OPENCODE_CONFIG: posix.join(handle.workspaceRoot, OPENCODE_PROJECTED_CONFIG) } : {}),
      }),
      ...tools?.config.env,
    }
    const cwd = toSandboxPath(config.cwd ?? '.', handle.workspaceRoot)
    const promptFile = handle.capabilities.writableStdin ? undefined : sandboxRunFilePath(RUN_FILES_DIR, runId, 'prompt')
    if (promptFile) await writeSandboxRunFile(handle, { file: promptFile, content: prompt, harness: 'opencode' }).finally(() => runFiles.push(promptFile))
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
    options.logger.request(`opencode: ${command}`, { provider: 'opencode', model, cwd })

    let exit: OpencodeExit = { exitCode: 0, stderrTail: '' }
    const translated = async function* (): AsyncGenerator<AdapterYieldChunk> {
      for await (const line of spawnNdjson(handle, command, {
        cwd,
        env,
        ...(promptFile ? {} : { stdin: prompt }),
        signal,
        onNonJsonLine: (text) => options.logger.provider(`opencode: non-JSON stdout line: ${run.redact(text.slice(0, 200))}`),
        onExit: (result) => {
          exit = result
        },
      })) {
        options.logger.provider('opencode line', { line: run.redact(JSON.stringify(line)) })
        yield* translator.push(line) as AdapterYieldChunk[]
      }
    }
    // Live bridged-tool events (CUSTOM chunks) are spliced in as they happen.
    yield* tools ? mergeChunkStreams(translated(), tools.bridge.chunks as AsyncIterable<AdapterYieldChunk>) : translated()
    if (timeout?.aborted && !requestSignal?.aborted) {
      yield harnessRunError(runId, threadId, `opencode: the run took longer than timeoutMs (${config.timeoutMs} ms); the CLI was stopped.`, 'timeout')
      return
    }
    if (requestSignal?.aborted) return
    yield* translator.finish(exit) as AdapterYieldChunk[]
  } finally {
    stop.abort()
    await tools?.bridge.close()
    await removeSandboxRunFiles(handle, runFiles)
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
