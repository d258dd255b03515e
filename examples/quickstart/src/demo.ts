/**
 * `runDemo`: the quickstart's one flow, top to bottom. Make or resolve the
 * repository, work out where the agent runs (local-process or a Docker
 * container), start the offline model (or read the live key), define the
 * sandbox, run `chat()` with `claudeCodeText` and `withSandbox`, read the diff
 * through the handle from `onReady`, then clean up.
 * Invariant: the sandbox (and the CLI's process group with it), the mock
 * server, every temp directory and every container of the run are gone when
 * `runDemo` settles, success or not.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { chat, ConsoleLogger, type DebugConfig, type Logger } from '@tanstack/ai'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { SandboxError, withSandbox, type SandboxHandle } from '@tanstack/ai-sandbox'
import { consumeAgentRun, type AgentRunOutcome, type RunUsage } from './agent-run.js'
import { collectChanges, type WorkspaceChanges } from './changes.js'
import { resolveClaudeExecutable } from './claude-cli.js'
import { DemoError } from './errors.js'
import { OFFLINE_TASK, startOfflineModel, type OfflineModel } from './offline-model.js'
import { createSampleRepo, resolveRepo } from './repo.js'
import type { DemoReporter } from './reporter.js'
import { defineDemoSandbox, type DemoSandbox } from './sandbox.js'
import { resolveSandboxTarget, type SandboxTarget } from './sandbox-target.js'

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** A git URL or host path of a repository. Default: a generated sample repository. */
  repo?: string
  /** Sandbox provider: `'local-process'` (the default) or `'docker'`. */
  provider?: string
  /** The image of a Docker sandbox. Default `tanstack-sandbox-debian:bookworm`. Docker only. */
  image?: string
  /** Talk to the real Anthropic API with the host's `ANTHROPIC_API_KEY`. Default `false` (aimock). */
  live?: boolean
  /** The task for the agent (live mode only). Default: add `multiply` to math.js with a test. */
  task?: string
  /** Model for Claude Code. Default `claude-sonnet-4-5`. */
  model?: string
  /** Observer of the run. Default: none (silent). */
  reporter?: DemoReporter
  /** Abort the run (e.g. on Ctrl-C); cleanup still happens. */
  signal?: AbortSignal
}

/** Milestones in ms since `runDemo` started. */
export interface DemoTimings {
  readonly sandboxReadyMs: number
  readonly firstTokenMs: number
  readonly totalMs: number
}

/** What {@link runDemo} returns. */
export interface DemoResult {
  readonly mode: 'offline' | 'live'
  readonly timings: DemoTimings
  readonly usage: RunUsage
  readonly changes: WorkspaceChanges
  readonly sessionId: string | undefined
  readonly toolCalls: number
  readonly text: string
}

const INTERRUPTED = 'Interrupted; the sandbox and temp files were removed.'

/**
 * Run the quickstart: Claude Code edits a git repository inside a sandbox.
 *
 * @param options - See {@link DemoOptions}; all optional.
 * @returns Timings, token usage, the changed files with their diff, and the session id.
 * @throws DemoError with `reason` `unsupported-provider`, `docker`, `missing-api-key`, `usage`, `cli-missing`, `repo`, `run-failed`, `no-changes` or `aborted`.
 * @throws SetupStepFailedError / WorkspaceBootstrapError when the workspace cannot be prepared.
 * @example
 * ```ts
 * const { timings, changes } = await runDemo()
 * console.log(timings.totalMs, changes.files.map((f) => f.path))
 * ```
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const started = performance.now()
  const at = () => performance.now() - started
  const { provider = 'local-process', live = false, model = 'claude-sonnet-4-5', reporter = {} } = options
  const apiKey = checkOptions(options, provider, live)
  const task = options.task ?? OFFLINE_TASK
  if (options.signal?.aborted) throw new DemoError('aborted', 'Interrupted before the run started; nothing was created.')
  const controller = linkedController(options.signal)
  const temp = await mkdtemp(join(tmpdir(), 'tanstack-quickstart-'))
  reporter.tempCreated?.(at(), temp)
  let offline: OfflineModel | undefined
  let target: SandboxTarget | undefined
  let box: DemoSandbox | undefined
  let handle: SandboxHandle | undefined
  let readyAt = 0
  let failure: unknown
  let run: { outcome: AgentRunOutcome; changes: WorkspaceChanges } | undefined
  try {
    const repo = options.repo ? await resolveRepo(options.repo, controller.signal) : await createSampleRepo(join(temp, 'repo'), controller.signal)
    target = await resolveSandboxTarget({ provider: provider as 'local-process' | 'docker', ...(options.image ? { image: options.image } : {}), temp, repo, cli: resolveClaudeExecutable() })
    controller.signal.throwIfAborted()
    if (!live) offline = await startOfflineModel(undefined, { host: target.modelListen })
    reporter.intro?.({ mode: live ? 'live' : 'offline', ...(offline ? { modelUrl: offline.url } : {}), model, repo: repo.label, provider, ...(target.detail ? { providerDetail: target.detail } : {}), task })
    controller.signal.throwIfAborted()

    const onReady = async (ready: SandboxHandle) => {
      handle = ready
      readyAt = at()
      reporter.sandboxReady?.(readyAt, { id: ready.id, workspaceRoot: ready.workspaceRoot })
      // A hook that throws is only logged, so a failure here is recorded and aborts the run.
      if (offline) await prepareOfflineScript(offline, ready, repo.sample).catch((error: unknown) => controller.abort((failure = error)))
    }
    box = defineDemoSandbox({ target, repo, apiKey, onReady })
    const adapter = claudeCodeText(model, {
      executable: target.executable,
      maxTurns: 30,
      env: {
        HOME: target.home, // a fresh ~/.claude: no user settings, hooks or sessions leak in
        // As root on the host, Claude Code refuses to skip permissions unless told it is isolated. The adapter never
        // claims that for localProcessSandbox(); this demo opts in for its throwaway temp repository only.
        ...(provider === 'local-process' && process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}),
        CLAUDE_CODE_TMPDIR: target.tmp, // the CLI's per-session scratch (default /tmp/claude-<uid>/…), removed with the run
        // Offline: the mock (as the sandbox names this host), a placeholder key, no retries (a miss is a script bug). Live: the key is the workspace secret.
        ...(offline ? { ANTHROPIC_BASE_URL: `http://${target.modelHost}:${offline.port}`, ANTHROPIC_API_KEY: 'offline-demo', CLAUDE_CODE_MAX_RETRIES: '0' } : { CLAUDE_CODE_MAX_RETRIES: '3' }),
      },
    })

    reporter.sandboxCreating?.(at(), { provider, source: repo.url, setup: box.setup })
    const stream = chat({ adapter, threadId: box.threadId, messages: [{ role: 'user', content: task }], middleware: [withSandbox(box.definition)], abortController: controller, debug: errorLog(controller.signal) })
    const outcome = await consumeAgentRun(stream, reporter, at).catch((error: unknown) => {
      throw offline ? explainOffline(error) : error
    })
    controller.signal.throwIfAborted() // an onReady failure or an interrupt; sorted out below
    if (!handle) throw new DemoError('run-failed', 'The run ended without a sandbox: the onReady hook never fired.')

    const changes = await collectChanges(handle)
    if (offline && changes.files.length === 0) {
      throw new DemoError('no-changes', `The scripted agent finished but changed no file (${offline.requestCount()} model requests). examples/quickstart/fixtures/demo.json no longer matches what Claude Code does.`)
    }
    run = { outcome, changes }
  } catch (error) {
    failure ??= error // an onReady failure comes first: the error it caused is only its echo
  }

  reporter.cleanup?.(at())
  await cleanup()
  // An interrupt wins over whatever it broke: git killed by the same Ctrl-C is not a missing git.
  if (options.signal?.aborted) throw new DemoError('aborted', INTERRUPTED, failure === undefined ? {} : { cause: failure })
  if (!run) throw SandboxError.isInstance(failure) ? failure : new DemoError('run-failed', `The demo failed: ${failure instanceof Error ? failure.message : String(failure)}`, { cause: failure })
  const { outcome, changes } = run
  const timings = { sandboxReadyMs: readyAt, firstTokenMs: outcome.firstTokenAt ?? at(), totalMs: at() }
  return { mode: live ? 'live' : 'offline', timings, usage: outcome.usage, changes, sessionId: outcome.sessionId, toolCalls: outcome.toolCalls, text: outcome.text }

  /** Destroy the sandbox, stop the mock, remove what the provider left (Docker: anything with the run's label), delete temp dirs. */
  async function cleanup(): Promise<void> {
    await Promise.allSettled([box?.destroy(), handle?.destroy(), offline?.stop()])
    await target?.cleanup()
    await rm(temp, { recursive: true, force: true })
  }
}

/** Validate the options that need no IO; returns the API key in live mode. */
function checkOptions(options: DemoOptions, provider: string, live: boolean): string | undefined {
  if (provider !== 'local-process' && provider !== 'docker') throw new DemoError('unsupported-provider', `--provider ${provider}: unknown provider. Available: local-process (the default) and docker.`)
  if (options.image !== undefined && provider !== 'docker') throw new DemoError('unsupported-provider', `--image ${options.image}: only a Docker sandbox has an image. Add --provider docker.`)
  if (options.task !== undefined && !live) throw new DemoError('usage', '--task needs --live: offline mode replays a scripted answer to the built-in task.')
  if (!live) return undefined
  const key = process.env.ANTHROPIC_API_KEY ?? ''
  if (key === '') throw new DemoError('missing-api-key', '--live talks to the real Anthropic API and needs ANTHROPIC_API_KEY in the environment. Set it, or drop --live to run offline.')
  return key
}

/** An AbortController that also aborts when `signal` does. */
function linkedController(signal: AbortSignal | undefined): AbortController {
  const controller = new AbortController()
  if (signal?.aborted) controller.abort(signal.reason)
  else signal?.addEventListener('abort', () => controller.abort(signal.reason), { once: true })
  return controller
}

/** chat()'s default logging (errors only) without the error dump an interrupt causes: the demo reports the abort itself. */
function errorLog(signal: AbortSignal): DebugConfig {
  const base = new ConsoleLogger()
  const logger: Logger = {
    debug: (message, meta) => base.debug(message, meta),
    info: (message, meta) => base.info(message, meta),
    warn: (message, meta) => base.warn(message, meta),
    error: (message, meta) => void (signal.aborted || base.error(message, meta)),
  }
  return { provider: false, output: false, middleware: false, tools: false, agentLoop: false, config: false, request: false, sandbox: false, errors: true, logger }
}

/** Load the script for this workspace; it edits math.js, so a --repo without it cannot work offline. */
async function prepareOfflineScript(model: OfflineModel, handle: SandboxHandle, sample: boolean): Promise<void> {
  if (!sample && !((await handle.fs.exists('math.js')) && (await handle.fs.exists('math.test.js')))) {
    throw new DemoError('repo', 'Offline mode replays a script written for the sample repository (math.js and math.test.js), and this --repo does not have both. Use --live to let Claude work on your repository, or drop --repo.')
  }
  await model.useWorkspace(handle.workspaceRoot)
}

/** An API error in offline mode means the script had no answer for a request: say so. */
function explainOffline(error: unknown): unknown {
  if (!(error instanceof DemoError) || !error.code?.startsWith('api_error_')) return error
  const hint = 'The offline model (aimock) had no scripted answer for a request: examples/quickstart/fixtures/demo.json no longer matches what this Claude Code version sends.'
  return new DemoError('run-failed', `${error.message}\n${hint}`, { cause: error, code: error.code })
}
