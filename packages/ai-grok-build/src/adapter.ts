/**
 * `grokBuildText`: the Grok Build harness adapter. Its `chatStream` reads the
 * run's sandbox from the capability bus, starts `grok agent … stdio` inside
 * it with `handle.process.spawn`, speaks the Agent Client Protocol over the
 * process's stdio (initialize, new or loaded session, prompt, permission
 * answers from the policy), and streams the translated wire traffic. Abort,
 * timeout and early stop kill the CLI's process group through the spawn
 * handle; the stream itself never throws.
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
  toSandboxPath,
  type HarnessRunContext,
  type SecretRef,
  buildHarnessPrompt,
} from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { grokBridgeServer, openGrokToolBridge } from './bridge.js'
import type { GrokAcpTranscriptEntry } from './cli-events.js'
import { buildGrokCommand } from './command.js'
import { GrokBuildUnsupportedError } from './errors.js'
import { decideGrokPermission, grokPolicySettings } from './policy.js'
import { grokBuildProjection, grokMcpServers } from './projection.js'
import { createChunkQueue, settleProcess } from './run-process.js'
import { driveAcpTurn, GrokBuildSessionError } from './session.js'
import { createGrokBuildTranslator } from './translate.js'
import { acpStreamOverProcess } from './transport.js'

/** Options of {@link grokBuildText}. */
export interface GrokBuildOptions {
  /** The CLI: a name on the sandbox's `PATH` or an absolute path inside the sandbox. Default: `$HOME/.grok/bin/grok`, else `grok` on `PATH`. */
  executable?: string
  /** Force the approve flag on or off. Default: on exactly when the sandbox policy allows everything. */
  autoApprove?: boolean
  /** The approve flag's spelling. Default `--auto-approve`. */
  approveFlag?: string
  /** An id from the agent's `authMethods` to `authenticate` with before the session starts. Default: none (the CLI reads `XAI_API_KEY`). */
  authMethod?: string
  /** Working directory inside the workspace. Default: the workspace root. */
  cwd?: string
  /** Extra environment for the CLI (e.g. `XAI_API_KEY`, `HOME`). Values may be secret references. */
  env?: Record<string, string | SecretRef>
  /** Extra CLI flags, placed before the `stdio` transport word. */
  extraArgs?: string[]
  /** Stop the run after this many ms: the CLI's process group is killed and the run ends with `RUN_ERROR` `timeout`. Default: no limit. */
  timeoutMs?: number
  /** How long the CLI may take to exit after the turn, in ms, before it is killed. Default 3000. */
  exitGraceMs?: number
  /** Receives every ACP message on the wire, both directions, in order (a transcript). Raw: MCP header and env values included, so redact before storing. */
  onAcpMessage?: (entry: GrokAcpTranscriptEntry) => void
}

/** Per-call options: `chat({ modelOptions: { sessionId } })` loads an earlier ACP session. */
export interface GrokBuildModelOptions {
  /** The id from the `grok-build.session-id` event of an earlier run. */
  sessionId?: string
  [key: string]: unknown
}

/** The adapter type. */
export type GrokBuildTextAdapter = TextAdapter<string, GrokBuildModelOptions, readonly ['text'], any>

/** Host environment variables forwarded to the CLI when the workspace does not set them. */
const FORWARDED_HOST_ENV = ['XAI_API_KEY'] as const

const optionsSchema = z
  .object({
    executable: z.string().min(1).optional(),
    autoApprove: z.boolean().optional(),
    approveFlag: z.string().regex(/^-{1,2}[A-Za-z0-9][A-Za-z0-9-]*(=\S+)?$/, 'expected a flag such as "--auto-approve"').optional(),
    authMethod: z.string().min(1).optional(),
    ...harnessOptionFields,
    exitGraceMs: z.number().int().nonnegative().optional(),
    onAcpMessage: z.custom<(entry: GrokAcpTranscriptEntry) => void>((v) => typeof v === 'function', { error: 'expected a function' }).optional(),
  })
  .strict()

const MODEL = /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/

type Capabilities = NonNullable<TextOptions<GrokBuildModelOptions>['capabilities']>

/**
 * Create the Grok Build adapter. It requires a sandbox (`withSandbox`) whose
 * provider can write to a spawned process's stdin.
 *
 * @param model - A Grok model id, e.g. `grok-4.5` (passed as `--model`).
 * @param options - See {@link GrokBuildOptions}.
 * @throws SandboxConfigError naming the field for an invalid model or option.
 * @example
 * ```ts
 * chat({ adapter: grokBuildText('grok-4.5', { timeoutMs: 600_000 }), threadId, messages, middleware: [withSandbox(sandbox)] })
 * ```
 */
export function grokBuildText(model: string, options: GrokBuildOptions = {}): GrokBuildTextAdapter {
  parseOptions(z.string().regex(MODEL, 'expected a model id such as "grok-4.5"'), model, 'grokBuildText.model')
  const config = parseOptions(optionsSchema, options, 'grokBuildText.options') as GrokBuildOptions
  return {
    kind: 'text',
    name: 'grok-build',
    model,
    requires: [SandboxCapability],
    '~types': undefined as unknown as GrokBuildTextAdapter['~types'],
    chatStream: (textOptions) =>
      guardHarnessRun({ harness: 'grok-build', runIdPrefix: 'grok', options: textOptions, secrets: { forwardedHostEnv: FORWARDED_HOST_ENV, env: config.env }, run: (run) => runGrokBuild(model, config, textOptions, run) }),
    async structuredOutput() {
      throw new GrokBuildUnsupportedError()
    },
  }
}

/** The run itself: the CLI spawned, one ACP turn driven over its stdio, the wire traffic translated. Inside `guardHarnessRun`, which reports what it throws as `adapter_error`. */
async function* runGrokBuild(model: string, config: GrokBuildOptions, options: TextOptions<GrokBuildModelOptions>, run: HarnessRunContext): AsyncIterable<AdapterYieldChunk> {
  const capabilities = options.capabilities!
  const handle = getSandbox(capabilities)
  const { runId, threadId } = run
  const translator = createGrokBuildTranslator({ runId, threadId, model, genId: createRunScopedIdGen(runId) })
  const sessionId = typeof options.modelOptions?.sessionId === 'string' && options.modelOptions.sessionId !== '' ? options.modelOptions.sessionId : undefined
  const prompt = withSystemPrompts(buildHarnessPrompt(options.messages as ModelMessage[], sessionId !== undefined), options.systemPrompts)
  yield* translator.start() as AdapterYieldChunk[]
  if (buildHarnessPrompt(options.messages as ModelMessage[], true).trim() === '') {
    yield harnessRunError(runId, threadId, 'grok-build: the latest user message has no text to send. Pass a { role: "user" } message with text to chat().', 'no_prompt')
    return
  }
  if (!handle.capabilities.backgroundProcesses || !handle.capabilities.writableStdin) {
    yield harnessRunError(runId, threadId, `grok-build: the ${handle.provider} sandbox cannot write to a spawned process's stdin (capabilities backgroundProcesses and writableStdin), and Grok Build speaks ACP over its stdin and stdout. Use a provider that has both, such as localProcessSandbox() or dockerSandbox().`, 'stdin_unsupported')
    return
  }

  const policy = getSandboxPolicy(capabilities, { optional: true }) ?? defineSandboxPolicy()
  const autoApprove = config.autoApprove ?? grokPolicySettings(policy).autoApprove
  const projection = getProjection(capabilities, { optional: true })
  await projection?.project(grokBuildProjection)
  const requestSignal = (options.request as RequestInit | undefined)?.signal ?? undefined
  const timeout = config.timeoutMs ? AbortSignal.timeout(config.timeoutMs) : undefined
  // Stops the CLI when the consumer leaves while a read is pending.
  const stop = new AbortController()
  const signal = AbortSignal.any([stop.signal, ...(requestSignal ? [requestSignal] : []), ...(timeout ? [timeout] : [])])
  const bridge = await openGrokToolBridge(options, handle, runId)
  try {
    const command = buildGrokCommand({ model, autoApprove, ...(config.executable ? { executable: config.executable } : {}), ...(config.approveFlag ? { approveFlag: config.approveFlag } : {}), ...(config.extraArgs ? { extraArgs: config.extraArgs } : {}) })
    const cwd = toSandboxPath(config.cwd ?? '.', handle.workspaceRoot)
    options.logger.request(`grok-build: ${command}`, { provider: 'grok-build', model, cwd })
    if (signal.aborted) return
    const child = await handle.process.spawn(command, { cwd, env: cliEnv(config, capabilities), signal })
    const queue = createChunkQueue()
    const stderr = drainStderr(child.stderr)
    const stream = acpStreamOverProcess(child, {
      onMessage: (entry) => {
        config.onAcpMessage?.(entry)
        if (!signal.aborted) queue.push(translator.push(entry) as AdapterYieldChunk[])
      },
      onNonJsonLine: (line) => options.logger.provider(`grok-build: non-JSON stdout line: ${run.redact(line.slice(0, 200))}`),
    })
    const warn = (message: string) => options.logger.warn(`grok-build: ${message}`)
    const turn = (async () => {
      try {
        await driveAcpTurn(stream, {
          cwd,
          prompt,
          ...(sessionId ? { sessionId } : {}),
          ...(config.authMethod ? { authMethod: config.authMethod } : {}),
          mcpServers: (agent) => {
            if (bridge && !agent.http) warn('chat() tools are not bridged: the agent did not announce HTTP MCP support (mcpCapabilities.http).')
            return [...(projection ? grokMcpServers(projection.workspace, agent, warn) : []), ...(bridge && agent.http ? [grokBridgeServer(bridge)] : [])]
          },
          decide: (request) => decideGrokPermission(policy, request, projection?.workspace.scripts),
        })
      } catch (error) {
        // The translator already reported an error answer from the agent; a vanished CLI is reported from its exit below.
        if (error instanceof GrokBuildSessionError && !translator.closed) queue.push([harnessRunError(runId, threadId, error.message, 'resume_unsupported')])
        else options.logger.provider(`grok-build: the ACP connection ended: ${run.redact(String(error))}`)
      }
      const exit = await settleProcess(child, config.exitGraceMs ?? 3000)
      const stderrTail = await stderr
      if (!signal.aborted) queue.push(translator.finish({ ...exit, stderrTail }) as AdapterYieldChunk[])
      queue.end()
    })()
    try {
      yield* bridge ? mergeChunkStreams(queue.stream, bridge.chunks as AsyncIterable<AdapterYieldChunk>) : queue.stream
      await turn
    } finally {
      stop.abort()
      await turn.catch(() => undefined)
    }
    if (timeout?.aborted && !requestSignal?.aborted) yield harnessRunError(runId, threadId, `grok-build: the run took longer than timeoutMs (${config.timeoutMs} ms); the CLI was stopped.`, 'timeout')
  } finally {
    stop.abort()
    await bridge?.close()
  }
}

/** `chat({ systemPrompts })` go in front of the prompt: ACP has no separate system prompt. */
function withSystemPrompts(prompt: string, prompts: TextOptions['systemPrompts']): string {
  const system = harnessSystemPrompt(prompts)
  return system ? `${system}\n\n${prompt}` : prompt
}

/** The CLI's environment: workspace secrets, forwarded host credentials, then `options.env`. */
function cliEnv(config: GrokBuildOptions, capabilities: Capabilities): Record<string, string> {
  const secrets = getProjection(capabilities, { optional: true })?.resolveSecretEnv() ?? {}
  const env: Record<string, string> = {}
  for (const name of FORWARDED_HOST_ENV) {
    const value = secrets[name] || process.env[name]
    if (value) env[name] = value
  }
  for (const [name, value] of Object.entries(config.env ?? {})) env[name] = typeof value === 'string' ? value : resolveSecret(value)
  return env
}

/** Read stderr to its end; resolves with its last 64 KiB. */
async function drainStderr(stderr: AsyncIterable<string>): Promise<string> {
  let tail = ''
  try {
    for await (const piece of stderr) {
      tail += piece
      if (tail.length > 128 * 1024) tail = tail.slice(-64 * 1024)
    }
  } catch {
    // A stderr stream that errors ends the tail there; the exit code tells the outcome.
  }
  return tail.slice(-64 * 1024)
}
