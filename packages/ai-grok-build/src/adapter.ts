/**
 * `grokBuildText`: the Grok Build harness adapter. Its `chatStream` reads the
 * run's sandbox from the capability bus, starts `grok agent … stdio` inside
 * it with `handle.process.spawn`, speaks the Agent Client Protocol over the
 * process's stdio (initialize, new or loaded session, prompt, permission
 * answers from the policy), and streams the translated wire traffic. Abort,
 * timeout and early stop kill the CLI's process group through the spawn
 * handle; the stream itself never throws.
 */
import { randomUUID } from 'node:crypto'
import type { AdapterYieldChunk, ModelMessage, StreamChunk, TextAdapter, TextOptions } from '@tanstack/ai'
import {
  createRunScopedIdGen,
  defineSandboxPolicy,
  getProjection,
  getSandbox,
  getSandboxPolicy,
  isSecretRef,
  mergeChunkStreams,
  parseOptions,
  resolveSecret,
  SandboxCapability,
  toSandboxPath,
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
    cwd: z
      .string()
      .min(1)
      .refine((p) => (!p.startsWith('/') || p === '/workspace' || p.startsWith('/workspace/')) && !p.split('/').includes('..'), 'expected a path inside the workspace: relative, or under /workspace, without ".."')
      .optional(),
    env: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'),
        z.union([z.string(), z.custom<SecretRef>(isSecretRef)], { error: 'expected a string or a secret reference from createSecrets()' }),
      )
      .optional(),
    extraArgs: z.array(z.string()).optional(),
    timeoutMs: z.number().int().positive().optional(),
    exitGraceMs: z.number().int().nonnegative().optional(),
    onAcpMessage: z.custom<(entry: GrokAcpTranscriptEntry) => void>((v) => typeof v === 'function', { error: 'expected a function' }).optional(),
  })
  .strict()

const MODEL = /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/

type Capabilities = NonNullable<TextOptions<GrokBuildModelOptions>['capabilities']>
type Run = { runId: string; threadId: string; redact: (text: string) => string }

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
    chatStream: (textOptions) => guarded(model, config, textOptions),
    async structuredOutput() {
      throw new GrokBuildUnsupportedError()
    },
  }
}

/**
 * The run, with its failures turned into chunks: an unexpected error becomes
 * `RUN_ERROR` `adapter_error` (or nothing, when the run was aborted), and
 * every `RUN_ERROR` message has secret values redacted.
 */
async function* guarded(model: string, config: GrokBuildOptions, options: TextOptions<GrokBuildModelOptions>): AsyncIterable<AdapterYieldChunk> {
  const capabilities = options.capabilities!
  const runId = options.runId ?? contextRunId(capabilities) ?? `grok-${randomUUID()}`
  const threadId = options.threadId ?? runId
  const redact = secretRedactor(config, capabilities)
  const signal = (options.request as RequestInit | undefined)?.signal ?? undefined
  let ended = false
  try {
    for await (const out of runGrokBuild(model, config, options, { runId, threadId, redact })) {
      if (out.type === 'RUN_ERROR' || out.type === 'RUN_FINISHED') ended = true
      yield out.type === 'RUN_ERROR' ? redactRunError(out, redact) : out
    }
  } catch (error) {
    if (signal?.aborted || ended) return
    const message = redact(`grok-build: the run failed inside the adapter: ${error instanceof Error ? error.message : String(error)}`)
    options.logger.errors('grok-build adapter failed', { error: redact(String(error)) })
    yield runError(runId, threadId, message, 'adapter_error')
  }
}

async function* runGrokBuild(model: string, config: GrokBuildOptions, options: TextOptions<GrokBuildModelOptions>, run: Run): AsyncIterable<AdapterYieldChunk> {
  const capabilities = options.capabilities!
  const handle = getSandbox(capabilities)
  const { runId, threadId } = run
  const translator = createGrokBuildTranslator({ runId, threadId, model, genId: createRunScopedIdGen(runId) })
  const sessionId = typeof options.modelOptions?.sessionId === 'string' && options.modelOptions.sessionId !== '' ? options.modelOptions.sessionId : undefined
  const prompt = withSystemPrompts(buildHarnessPrompt(options.messages as ModelMessage[], sessionId !== undefined), options.systemPrompts)
  yield* translator.start() as AdapterYieldChunk[]
  if (buildHarnessPrompt(options.messages as ModelMessage[], true).trim() === '') {
    yield runError(runId, threadId, 'grok-build: the latest user message has no text to send. Pass a { role: "user" } message with text to chat().', 'no_prompt')
    return
  }
  if (!handle.capabilities.backgroundProcesses || !handle.capabilities.writableStdin) {
    yield runError(runId, threadId, `grok-build: the ${handle.provider} sandbox cannot write to a spawned process's stdin (capabilities backgroundProcesses and writableStdin), and Grok Build speaks ACP over its stdin and stdout. Use a provider that has both, such as localProcessSandbox() or dockerSandbox().`, 'stdin_unsupported')
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
        if (error instanceof GrokBuildSessionError && !translator.closed) queue.push([runError(runId, threadId, error.message, 'resume_unsupported')])
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
    if (timeout?.aborted && !requestSignal?.aborted) yield runError(runId, threadId, `grok-build: the run took longer than timeoutMs (${config.timeoutMs} ms); the CLI was stopped.`, 'timeout')
  } finally {
    stop.abort()
    await bridge?.close()
  }
}

/** `chat({ systemPrompts })` go in front of the prompt: ACP has no separate system prompt. */
function withSystemPrompts(prompt: string, prompts: TextOptions['systemPrompts']): string {
  const system = (prompts ?? [])
    .map((p) => (typeof p === 'string' ? p : (p as { content?: string }).content ?? ''))
    .filter((text) => text.trim() !== '')
    .join('\n\n')
  return system ? `${system}\n\n${prompt}` : prompt
}

/** The run id the chat engine gave the middleware context, so chunks carry the id withSandbox saw. */
function contextRunId(capabilities: object): string | undefined {
  const runId = (capabilities as { runId?: unknown }).runId
  return typeof runId === 'string' && runId !== '' ? runId : undefined
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

/** Redacts the values of workspace secrets, forwarded host credentials and secret-valued `options.env` entries. */
function secretRedactor(config: GrokBuildOptions, capabilities: Capabilities): (text: string) => string {
  const projection = getProjection(capabilities, { optional: true })
  const named: [string, string][] = Object.entries(projection?.resolveSecretEnv() ?? {})
  for (const name of FORWARDED_HOST_ENV) if (process.env[name]) named.push([name, process.env[name]!])
  for (const [name, value] of Object.entries(config.env ?? {})) if (isSecretRef(value)) named.push([name, resolveSecret(value)])
  const values = named.filter(([, value]) => value.length >= 4).sort((a, b) => b[1].length - a[1].length)
  return (text) => values.reduce((out, [name, value]) => out.split(value).join(`[secret ${name}]`), text)
}

function redactRunError(chunk: AdapterYieldChunk, redact: (text: string) => string): AdapterYieldChunk {
  const c = chunk as unknown as { message?: string; error?: { message: string; code?: string } }
  return { ...chunk, ...(c.message ? { message: redact(c.message) } : {}), ...(c.error ? { error: { ...c.error, message: redact(c.error.message) } } : {}) } as AdapterYieldChunk
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

function runError(runId: string, threadId: string, message: string, code: string): AdapterYieldChunk {
  return { type: 'RUN_ERROR', runId, threadId, message, code, error: { message, code } } as unknown as StreamChunk as AdapterYieldChunk
}
