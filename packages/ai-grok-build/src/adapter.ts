/**
 * `grokBuildText`: the Grok Build harness adapter. Its `chatStream` is core's
 * shared run loop (`runHarness`) plus what is Grok Build's own: the prompt, the
 * ACP translator, and `prepare`, which hands the loop an event source driving
 * `grok agent … stdio` over the Agent Client Protocol.
 * Design notes: docs/design/harness-adapters.md
 */
import type { ModelMessage, StreamChunk, TextOptions } from '@tanstack/ai'
import { buildHarnessPrompt, DEFAULT_EXIT_GRACE_MS, harnessOptionFields, harnessRunError, harnessSystemPrompt, harnessTextAdapter, type HarnessAdapterPrepareContext, type HarnessCommonOptions, type HarnessEventSource, type HarnessExit, type HarnessLaunch, type HarnessTextAdapter } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { grokBridgeServer, openGrokToolBridge } from './bridge.js'
import type { GrokAcpTranscriptEntry } from './cli-events.js'
import { buildGrokCommand } from './command.js'
import { GrokBuildUnsupportedError } from './errors.js'
import { decideGrokPermission, grokPolicySettings } from './policy.js'
import { grokBuildProjection, grokMcpServers } from './projection.js'
import { createEventQueue, settleProcess } from './run-process.js'
import { driveAcpTurn, GrokBuildSessionError, type AcpTurnInput } from './session.js'
import { createGrokBuildTranslator } from './translate.js'
import { acpStreamOverProcess } from './transport.js'

/** Options of {@link grokBuildText}. */
export interface GrokBuildOptions extends HarnessCommonOptions {
  /** The CLI: a name on the sandbox's `PATH` or an absolute path inside the sandbox. Default: `$HOME/.grok/bin/grok`, else `grok` on `PATH`. */
  executable?: string
  /** Force the approve flag on or off. Default: on exactly when the sandbox policy allows everything. */
  autoApprove?: boolean
  /** The approve flag's spelling. Default `--auto-approve`. */
  approveFlag?: string
  /** An id from the agent's `authMethods` to `authenticate` with before the session starts. Default: none (the CLI reads `XAI_API_KEY`). */
  authMethod?: string
  /** Extra CLI flags, placed before the `stdio` transport word. */
  extraArgs?: string[]
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
export type GrokBuildTextAdapter = HarnessTextAdapter<GrokBuildModelOptions>

/** Host environment variables forwarded to the CLI when the workspace does not set them. */
const FORWARDED_HOST_ENV = ['XAI_API_KEY'] as const

const optionsSchema = z
  .object({
    executable: z.string().min(1).optional(),
    autoApprove: z.boolean().optional(),
    approveFlag: z.string().regex(/^-{1,2}[A-Za-z0-9][A-Za-z0-9-]*(=\S+)?$/, 'expected a flag such as "--auto-approve"').optional(),
    authMethod: z.string().min(1).optional(),
    ...harnessOptionFields,
    onAcpMessage: z.custom<(entry: GrokAcpTranscriptEntry) => void>((v) => typeof v === 'function', { error: 'expected a function' }).optional(),
  })
  .strict()

/** The model ids the CLI takes. */
const MODEL_RULE = { pattern: /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/, expected: 'expected a model id such as "grok-4.5"' }
/** An ACP session id: never starts with `-`. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/


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
  return harnessTextAdapter<GrokBuildOptions, GrokBuildModelOptions>(model, options, {
    harness: 'grok-build',
    modelRule: MODEL_RULE,
    optionsSchema,
    credentials: ['XAI_API_KEY'],
    forwardedHostEnv: FORWARDED_HOST_ENV,
    structuredOutput: 'refused',
    unsupported: () => new GrokBuildUnsupportedError(),
    run: (config, textOptions) => ({
      runIdPrefix: 'grok',
      // No `journal`: an ACP conversation over stdio is not a replayable stream, so runHarness refuses an attach (DurableAttachNotSupportedError).
      sessionId: { pattern: SESSION_ID, refused: (id) => `grok-build: modelOptions.sessionId ${JSON.stringify(id.slice(0, 80))} is not an ACP session id. Pass the value of an earlier run's grok-build.session-id event.` },
      prompt: (messages, resumed) => withSystemPrompts(buildHarnessPrompt(messages, resumed), textOptions.systemPrompts),
      translator: (ids) => {
        const translator = createGrokBuildTranslator({ ...ids, model })
        return { start: translator.start, finish: translator.finish, push: (event) => (GrokBuildSessionError.isInstance(event) ? [] : translator.push(event as GrokAcpTranscriptEntry)) }
      },
      prepare: (run) => prepareGrokBuild(model, config, textOptions, run),
    }),
  })
}

/** Grok Build's part of a run: the capability check, projected files, the tool bridge, and the ACP event source. */
async function prepareGrokBuild(model: string, config: GrokBuildOptions, options: TextOptions<GrokBuildModelOptions>, run: HarnessAdapterPrepareContext): Promise<HarnessLaunch> {
  const { handle, runId, threadId, prompt, sessionId, policy, projection, cwd } = run
  if (buildHarnessPrompt(options.messages as ModelMessage[], true).trim() === '') {
    return { end: harnessRunError(runId, threadId, 'grok-build: the latest user message has no text to send. Pass a { role: "user" } message with text to chat().', 'no_prompt') as StreamChunk }
  }
  if (!handle.capabilities.backgroundProcesses || !handle.capabilities.writableStdin) {
    return { end: harnessRunError(runId, threadId, `grok-build: the ${handle.provider} sandbox cannot write to a spawned process's stdin (capabilities backgroundProcesses and writableStdin), and Grok Build speaks ACP over its stdin and stdout. Use a provider that has both, such as localProcessSandbox() or dockerSandbox().`, 'stdin_unsupported') as StreamChunk }
  }
  const autoApprove = config.autoApprove ?? grokPolicySettings(policy).autoApprove
  await projection?.project(grokBuildProjection)
  const bridge = await openGrokToolBridge(options, handle, runId)
  const command = buildGrokCommand({ model, autoApprove, ...(config.executable ? { executable: config.executable } : {}), ...(config.approveFlag ? { approveFlag: config.approveFlag } : {}), ...(config.extraArgs ? { extraArgs: config.extraArgs } : {}) })
  const env = run.cliEnv()
  const warn = (message: string) => options.logger.warn(`grok-build: ${message}`)
  const turn: AcpTurnInput = {
    cwd,
    prompt,
    ...(sessionId ? { sessionId } : {}),
    ...(config.authMethod ? { authMethod: config.authMethod } : {}),
    mcpServers: (agent) => {
      if (bridge && !agent.http) warn('chat() tools are not bridged: the agent did not announce HTTP MCP support (mcpCapabilities.http).')
      return [...(projection ? grokMcpServers(projection.workspace, agent, warn) : []), ...(bridge && agent.http ? [grokBridgeServer(bridge)] : [])]
    },
    decide: (request) => decideGrokPermission(policy, request, projection?.workspace.scripts),
  }
  const log = (message: string) => options.logger.provider(`grok-build: ${run.redact(message)}`)
  return {
    command,
    cwd,
    env,
    // ACP agents may open MCP connections lazily, on the first tool call: a quiet bridge proves nothing.
    ...(bridge ? { bridge, bridgeContact: 'on-call' as const } : {}),
    source: (signal, tagged) => acpSource({ run, command, cwd, env: tagged, turn, graceMs: config.exitGraceMs ?? DEFAULT_EXIT_GRACE_MS, ...(config.maxLineBytes !== undefined ? { maxLineBytes: config.maxLineBytes } : {}), signal, log, ...(config.onAcpMessage ? { onAcpMessage: config.onAcpMessage } : {}) }),
    inspect: (event) => (GrokBuildSessionError.isInstance(event) ? (harnessRunError(runId, threadId, event.message, 'resume_unsupported') as StreamChunk) : undefined),
  }
}

/**
 * The CLI driven over ACP: every wire message becomes an event for the
 * translator; a session that cannot be resumed becomes a `GrokBuildSessionError`
 * event (the loop's `inspect` ends the run with it). Events end once the CLI settled.
 */
function acpSource(input: { run: HarnessAdapterPrepareContext; command: string; cwd: string; env: Record<string, string>; turn: AcpTurnInput; graceMs: number; maxLineBytes?: number; signal: AbortSignal; log: (message: string) => void; onAcpMessage?: (entry: GrokAcpTranscriptEntry) => void }): HarnessEventSource {
  const { run, signal, log } = input
  const queue = createEventQueue<unknown>()
  let exit: HarnessExit | undefined
  let tooLong: unknown
  void (async () => {
    const child = await run.handle.process.spawn(input.command, { cwd: input.cwd, env: input.env, signal })
    const stderr = drainStderr(child.stderr)
    const stream = acpStreamOverProcess(child, {
      onMessage: (entry) => {
        input.onAcpMessage?.(entry)
        queue.push(entry)
      },
      onNonJsonLine: (line) => log(`non-JSON stdout line: ${line.slice(0, 200)}`),
      ...(input.maxLineBytes !== undefined ? { maxLineBytes: input.maxLineBytes } : {}),
      // A line past the bound ends the run with RUN_ERROR line_too_long; the CLI is stopped at once.
      onLineTooLong: (error) => {
        tooLong = error
        void child.kill().catch(() => undefined)
      },
    })
    try {
      await driveAcpTurn(stream, input.turn)
    } catch (error) {
      // An error answer from the agent is on the wire (the translator reports it); a vanished CLI is reported from its exit.
      if (GrokBuildSessionError.isInstance(error)) queue.push(error)
      else log(`the ACP connection ended: ${String(error)}`)
    }
    const settled = await settleProcess(child, input.graceMs)
    exit = { ...settled, stderrTail: await stderr }
    if (tooLong) return queue.fail(tooLong)
    queue.end()
  })().catch((error: unknown) => queue.fail(error))
  return { events: queue.stream, exit: () => exit }
}

/** `chat({ systemPrompts })` go in front of the prompt: ACP has no separate system prompt. */
function withSystemPrompts(prompt: string, prompts: TextOptions['systemPrompts']): string {
  const system = harnessSystemPrompt(prompts)
  return system ? `${system}\n\n${prompt}` : prompt
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
