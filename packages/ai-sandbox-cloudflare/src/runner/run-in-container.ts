/**
 * `runInContainerHarness`: the container half of `colocated` mode. It runs
 * inside the Cloudflare sandbox's container as a Node program the app ships
 * in its image. It reads the run request the Coordinator launched it with,
 * runs `chat()` with the app's harness adapter against a sandbox in the
 * container itself (the app's provider, usually `localProcessSandbox()`),
 * serves the tool bridge to the agent CLI there, and writes every chunk as
 * one NDJSON line to stdout, which the run journal keeps for the
 * Coordinator. Only the execution of a chat() tool crosses back to the
 * Coordinator (`remoteToolStubs` over `httpRemoteToolExecutor`). Source: spec
 * 000 "Edge / serverless execution" (colocated, the co-located host-tool seam).
 */
import { chat, type AnyTextAdapter, type StreamChunk } from '@tanstack/ai'
import {
  defineSandbox,
  harnessRunError,
  httpRemoteToolExecutor,
  parseOptions,
  remoteToolStubs,
  withSandbox,
  type SandboxDefinitionInput,
  type SandboxProvider,
} from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { containerRunRequestSchema, type ContainerRunRequest } from './request.js'

/** What a runner's adapter factory is told about its run. */
export interface ContainerRunInfo {
  readonly runId: string
  readonly threadId: string
}

/** Options of {@link runInContainerHarness}. */
export interface RunInContainerHarnessOptions {
  /** The harness adapter of the run, e.g. `() => claudeCodeText('sonnet')`. Its CLI runs in this container. */
  adapter: (run: ContainerRunInfo) => AnyTextAdapter
  /** The sandbox the harness runs its CLI in: this container, so usually `localProcessSandbox()` from `@tanstack/ai-sandbox-local-process`. */
  provider: SandboxProvider
  /** `defineSandbox` options besides the provider (workspace, policy, hooks). Default: a fresh sandbox for the run, destroyed after it. */
  sandbox?: Partial<Omit<SandboxDefinitionInput, 'provider'>>
  /** Where the run request comes from. Default `process.stdin` (the Coordinator launches the runner with it there). */
  input?: AsyncIterable<string | Uint8Array>
  /** Where each chunk goes as one NDJSON line. Default `process.stdout` (the run journal). */
  output?: { write(text: string, done: (error?: Error | null) => void): boolean }
  /** Stops the run. Default: `SIGTERM` or `SIGINT` to this process. */
  signal?: AbortSignal
}

/** How {@link runInContainerHarness} ended. */
export interface ContainerRunResult {
  readonly runId: string
  /** `completed` after `RUN_FINISHED`; `aborted` when the signal stopped it; `failed` otherwise (a `RUN_ERROR` was written). */
  readonly status: 'completed' | 'failed' | 'aborted'
}

const fn = (what: string) => z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { message: `expected ${what}` })

const optionsSchema = z
  .object({
    adapter: fn('a function ({ runId, threadId }) returning the harness adapter, e.g. () => claudeCodeText(...)'),
    provider: z.custom<SandboxProvider>((v) => typeof v === 'object' && v !== null && typeof (v as { create?: unknown }).create === 'function', {
      message: "expected the sandbox provider the CLI runs in inside this container, e.g. localProcessSandbox() from '@tanstack/ai-sandbox-local-process'",
    }),
    sandbox: z.object({}).passthrough().optional(),
    input: z.custom<AsyncIterable<unknown>>((v) => typeof v === 'object' && v !== null && Symbol.asyncIterator in v, { message: 'expected an async iterable of text (e.g. a Readable)' }).optional(),
    output: z.custom((v) => typeof v === 'object' && v !== null && typeof (v as { write?: unknown }).write === 'function', { message: 'expected a writable (e.g. process.stdout)' }).optional(),
    signal: z.instanceof(AbortSignal, { message: 'expected an AbortSignal' }).optional(),
  })
  .strict()

/**
 * Run one `colocated` run inside the container: read the run request from
 * `input`, run `chat()` with the harness, write each chunk to `output` as an
 * NDJSON line. The run ends with the harness's `RUN_FINISHED` or `RUN_ERROR`;
 * when it cannot start (a request this version cannot read, an adapter that
 * throws) a `RUN_ERROR` line says why, so the Coordinator records the reason
 * instead of an exit code. The app's runner module is a single call:
 *
 * @param options - See {@link RunInContainerHarnessOptions}.
 * @returns The run's id and how it ended. Never rejects for a failure of the run itself.
 * @throws SandboxConfigError naming the option when `options` is invalid.
 * @example
 * ```ts
 * // runner.mjs, in the container image; the Worker's config names it: runner: () => ({ command: 'node /app/runner.mjs' })
 * import { runInContainerHarness } from '@tanstack/ai-sandbox-cloudflare/runner'
 * import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
 * import { claudeCodeText } from '@tanstack/ai-claude-code'
 *
 * await runInContainerHarness({ adapter: () => claudeCodeText('sonnet'), provider: localProcessSandbox() })
 * ```
 */
export async function runInContainerHarness(options: RunInContainerHarnessOptions): Promise<ContainerRunResult> {
  parseOptions(optionsSchema, options, 'runInContainerHarness')
  const write = lineWriter(options.output ?? process.stdout)
  const stop = options.signal === undefined ? signalsOfProcess() : undefined
  const signal = options.signal ?? stop!.signal
  try {
    const raw = await readAll(options.input ?? process.stdin)
    const parsed = parseRequest(raw)
    if (!parsed.ok) {
      await write(harnessRunError(parsed.runId, parsed.threadId, parsed.message, 'invalid_run_request'))
      return { runId: parsed.runId, status: 'failed' }
    }
    return await drive(parsed.request, options, signal, write)
  } finally {
    stop?.dispose()
  }
}

async function drive(request: ContainerRunRequest, options: RunInContainerHarnessOptions, signal: AbortSignal, write: (chunk: StreamChunk) => Promise<void>): Promise<ContainerRunResult> {
  const { runId, threadId } = request
  const abortController = new AbortController()
  const follow = (): void => abortController.abort(signal.reason)
  if (signal.aborted) follow()
  else signal.addEventListener('abort', follow, { once: true })
  let last: StreamChunk | undefined
  try {
    const tools = remoteToolStubs(request.tools, httpRemoteToolExecutor({ url: request.toolsUrl, token: request.toolsToken }))
    const definition = defineSandbox({ id: 'colocated-run', lifecycle: { reuse: 'none', snapshot: 'none' }, ...options.sandbox, provider: options.provider })
    const stream = chat({
      adapter: options.adapter({ runId, threadId }),
      runId,
      threadId,
      messages: request.messages,
      tools,
      middleware: [withSandbox(definition)],
      abortController,
    } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
    for await (const chunk of stream) {
      last = chunk
      await write(chunk)
    }
  } catch (error) {
    if (!abortController.signal.aborted) {
      last = harnessRunError(runId, threadId, `The harness failed in the container: ${error instanceof Error ? error.message : String(error)}`, 'adapter_error')
      await write(last)
    }
  } finally {
    signal.removeEventListener('abort', follow)
  }
  if (abortController.signal.aborted) return { runId, status: 'aborted' }
  if (last?.type === 'RUN_FINISHED') return { runId, status: 'completed' }
  if (last?.type !== 'RUN_ERROR') await write(harnessRunError(runId, threadId, 'The harness ended without RUN_FINISHED or RUN_ERROR.', 'incomplete_run'))
  return { runId, status: 'failed' }
}

type ParsedRequest = { ok: true; request: ContainerRunRequest } | { ok: false; runId: string; threadId: string; message: string }

function parseRequest(raw: string): ParsedRequest {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    return { ok: false, runId: 'unknown', threadId: 'unknown', message: `The run request on the runner's stdin is not JSON (${raw.length} characters). Start the runner from the Coordinator (createCloudflareSandboxAgent mode 'colocated'), which writes the request there.` }
  }
  const result = containerRunRequestSchema.safeParse(value)
  if (result.success) return { ok: true, request: result.data as unknown as ContainerRunRequest }
  const fields = value as { runId?: unknown; threadId?: unknown }
  const issue = result.error.issues[0]!
  return {
    ok: false,
    runId: typeof fields?.runId === 'string' ? fields.runId : 'unknown',
    threadId: typeof fields?.threadId === 'string' ? fields.threadId : 'unknown',
    message: `Invalid run request field ${issue.path.join('.') || '(root)'}: ${issue.message}.`,
  }
}

/** The whole input as text. */
async function readAll(input: AsyncIterable<string | Uint8Array>): Promise<string> {
  const decoder = new TextDecoder()
  let text = ''
  for await (const piece of input) text += typeof piece === 'string' ? piece : decoder.decode(piece, { stream: true })
  return text + decoder.decode()
}

/** Writes one chunk per line and waits until the output took it (backpressure, and nothing lost when the process ends next). */
function lineWriter(output: NonNullable<RunInContainerHarnessOptions['output']>): (chunk: StreamChunk) => Promise<void> {
  return (chunk) =>
    new Promise<void>((resolve, reject) => {
      output.write(`${JSON.stringify(chunk)}\n`, (error) => (error ? reject(error) : resolve()))
    })
}

/** An abort signal for SIGTERM and SIGINT to this process (while the run lasts). */
function signalsOfProcess(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController()
  const onSignal = (name: NodeJS.Signals): void => controller.abort(new Error(`the runner got ${name}`))
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGTERM', onSignal)
      process.off('SIGINT', onSignal)
    },
  }
}
