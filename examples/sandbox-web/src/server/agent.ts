/**
 * The agent of the app: Claude Code in a sandbox of the thread (local-process
 * by default, Docker with `--docker`) that clones the sample repository, and
 * the one `chat()` every route runs: the POST starts it, the attach route and
 * the reaper re-drive it with `attach: true`. Owns no route and no store.
 * Portable snapshots are on: `withPersistence(stores.snapshots)` saves each
 * successful turn and `withSandbox({ snapshots })` checkpoints the workspace
 * after it, so a thread's next NEW sandbox starts from its latest checkpoint.
 * Invariant: the POST and the attach run the same `chat()` (same adapter,
 * sandbox, messages), differing only in `attach`, so a replay aligns.
 */
import { existsSync } from 'node:fs'
import { readdir, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import Docker from 'dockerode'
import { chat, defineChatMiddleware, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { createSandboxSnapshots, createSecrets, defineSandbox, defineWorkspace, getSandbox, gitSource, SandboxCapability, withSandbox, type SandboxDefinition, type SandboxProvider, type SandboxSnapshots } from '@tanstack/ai-sandbox'
import { withPersistence } from '@tanstack/ai-sandbox/persistence'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import type { SqliteStores } from '@tanstack/ai-sandbox-sqlite'
import type { ServerConfig } from './config.js'
import { ID_PATTERN } from './prompts.js'
import type { RunSandboxStore } from './run-sandboxes.js'

/** The label on this app's containers; its value is the data folder, so two servers on one engine list only their own. */
const APP_LABEL = 'tanstack.sandbox-web'
/** Where the host's Claude Code binary appears inside a Docker sandbox. */
const CONTAINER_CLI = '/opt/claude/claude'
/** Where the sample repository appears (read-only) inside a Docker sandbox, for the clone. */
const CONTAINER_REPO = '/mnt/repo'

/**
 * Offline, how often Claude Code retries a model call that found no model (its backoff doubles from about
 * 0.5 s; measured: 35 s until it gives up): the mock lives in the server process, so this rides out a restart.
 */
const OFFLINE_MODEL_RETRIES = 6

/** One run, as a route starts or re-drives it. */
export interface AgentRunInput {
  runId: string
  threadId: string
  prompt: string
  /** The run's event log: the same instance the transport serves. */
  log: StreamDurability
  /** `true` only on the attach route and in the reaper: tail the run's journal instead of starting an agent. */
  attach: boolean
  abortController: AbortController
}

/** The agent: `run(input)` is the run's `chat()` stream, `sandbox` its definition (the reaper reaches its provider). */
export interface Agent {
  readonly sandbox: SandboxDefinition
  /**
   * Portable snapshots of the threads, in the SQLite file (`stores.snapshots`): every successful run writes a
   * checkpoint of its workspace, and a thread's new sandbox starts from the latest one.
   */
  readonly snapshots: SandboxSnapshots
  /** The live sandboxes, for the status page: local-process folder names, or Docker container names (by the app's label). */
  listSandboxes: () => Promise<string[]>
  run: (input: AgentRunInput) => AsyncIterable<StreamChunk>
  /** Remove the per-run Claude Code folders (`claude-home/<runId>`, `claude-tmp/<runId>`) of runs no longer live; returns what it removed. Local-process only. */
  dropRunFolders: () => Promise<string[]>
  /** Runs this process drives, for the in-process cancel band. */
  readonly driving: Map<string, AbortController>
}

/**
 * Build the agent over the app's stores.
 * @param offlineModel - The offline model's gate: its port and the key the agent sends; `undefined` in live mode.
 * @param repoPath - The sample repository on the host.
 */
export function createAgent(config: ServerConfig, stores: SqliteStores, repoPath: string, offlineModel: { port: number; apiKey: string } | undefined, runSandboxes: RunSandboxStore): Agent {
  const cli = join(dirname(createRequire(import.meta.url).resolve('@anthropic-ai/claude-code/package.json')), 'bin', 'claude.exe')
  const docker = config.provider === 'docker'
  const sandboxRoot = join(config.dataDir, 'sandboxes')
  const provider: SandboxProvider = docker
    ? dockerSandbox({
        image: config.image,
        mounts: [
          { source: cli, target: CONTAINER_CLI, readOnly: true },
          { source: repoPath, target: CONTAINER_REPO, readOnly: true },
        ],
        labels: { [APP_LABEL]: config.dataDir },
      })
    : localProcessSandbox({ root: sandboxRoot })
  const engine = docker ? new Docker() : undefined
  const listSandboxes = async (): Promise<string[]> => {
    if (engine) return (await engine.listContainers({ all: true, filters: { label: [`${APP_LABEL}=${config.dataDir}`] } })).map((container) => container.Names[0]?.replace(/^\//, '') ?? container.Id)
    return existsSync(sandboxRoot) ? (await readdir(sandboxRoot, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name) : []
  }
  const secrets = config.apiKey ? createSecrets({ ANTHROPIC_API_KEY: config.apiKey }) : undefined
  const sandbox = defineSandbox({
    id: 'sandbox-web',
    provider,
    workspace: defineWorkspace({
      source: gitSource({ url: docker ? `file://${CONTAINER_REPO}` : `file://${repoPath}` }),
      setup: ['git config user.name "sandbox-web agent" && git config user.email agent@example.com'],
      ...(secrets ? { secrets } : {}),
    }),
    // One sandbox per thread, gone when its run completes or is cancelled. A failed run's sandbox is kept for a
    // look inside (destroyOnComplete covers success only) until it has idled keepFailedMs. A detached run keeps it.
    lifecycle: { reuse: 'thread', destroyOnComplete: true, keepAlive: config.keepFailedMs, snapshot: 'none' },
  })
  // Portable snapshots in the same SQLite file as the runs: after each successful run withSandbox writes a checkpoint
  // (the workspace's files, less .git, node_modules and .env*, plus the thread's transcript so far), and a NEW sandbox
  // of the thread gets the latest checkpoint written into it before the agent starts. `provider snapshots` stay off.
  const snapshots = createSandboxSnapshots({ persistence: stores.snapshots, sandbox, instances: stores.instances })
  const modelHost = docker ? 'host.docker.internal' : '127.0.0.1'
  const homes = join(config.dataDir, 'claude-home')
  const tmps = join(config.dataDir, 'claude-tmp')
  /**
   * The adapter of one run. On local-process Claude Code's HOME (its settings, session files with the model's
   * replies, backups) and its temp folder are per run, `claude-home/<runId>` and `claude-tmp/<runId>`, removed once
   * the run has ended (see `dropRunFolders`), so they never pile up. The same run id gives the same adapter: the
   * attach route and the reaper re-drive a run with what its POST ran. In Docker both live in the container.
   */
  const adapterFor = (runId: string) =>
    claudeCodeText(config.apiKey ? 'sonnet' : 'claude-sonnet-4-5', {
      executable: docker ? CONTAINER_CLI : cli,
      maxTurns: 30,
      env: {
        HOME: docker ? '/tmp/sandbox-web/home' : join(homes, runId), // no user settings, hooks or sessions leak in
        CLAUDE_CODE_TMPDIR: docker ? '/tmp/sandbox-web/tmp' : join(tmps, runId),
        // As root on the host, Claude Code refuses to skip permissions unless told it is isolated; this example
        // opts in for its throwaway clones of the sample repository only (a container is isolated anyway).
        ...(docker || process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}),
        // Live: the key reaches the agent as a workspace secret (scrubbed from every event), not through this env.
        ...(offlineModel !== undefined
          ? { ANTHROPIC_BASE_URL: `http://${modelHost}:${offlineModel.port}`, ANTHROPIC_API_KEY: offlineModel.apiKey, CLAUDE_CODE_MAX_RETRIES: String(OFFLINE_MODEL_RETRIES) }
          : { CLAUDE_CODE_MAX_RETRIES: '3', ...(config.apiBaseUrl ? { ANTHROPIC_BASE_URL: config.apiBaseUrl } : {}) }),
      },
    })

  /** True while the run's record says `running` (its agent may still work, detached or not). */
  const isLive = async (runId: string) => ID_PATTERN.test(runId) && (await stores.runs.get(runId))?.status === 'running'

  /**
   * Remove the per-run Claude Code folders of every run that is no longer live (and anything else in them, such as
   * the shared folders of earlier versions of this example). The reaper calls it on every sweep: that covers a
   * stopped run (its agent is killed after the cancel), a detached run closed out later, and a server restart.
   */
  const dropRunFolders = async (): Promise<string[]> => {
    const dropped: string[] = []
    for (const root of [homes, tmps]) {
      if (!existsSync(root)) continue
      for (const name of await readdir(root)) {
        if (await isLive(name)) continue
        await rm(join(root, name), { recursive: true, force: true }).catch(() => undefined) // the next sweep retries
        dropped.push(join(root, name))
      }
    }
    return dropped
  }

  /** Once the run's record is terminal (checked for up to 20 s after a terminal hook), remove its folders now. */
  const dropFoldersWhenEnded = async (runId: string): Promise<void> => {
    if (docker) return
    for (let waited = 0; waited <= 20_000; waited += 500) {
      const record = await stores.runs.get(runId).catch(() => undefined)
      if (record !== undefined && record?.status !== 'running') {
        await Promise.all([homes, tmps].map((root) => rm(join(root, runId), { recursive: true, force: true }).catch(() => undefined)))
        return
      }
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    // Still running: detached (its agent works on) or taken over elsewhere. The reaper's sweep removes them later.
  }

  const driving = new Map<string, AbortController>()

  /** Forgets a run in `driving` once it ends on this process (finished, failed, aborted), and drops its folders once it ended for good. */
  const forgetWhenDone = (runId: string) => {
    const forget = () => {
      driving.delete(runId)
      void dropFoldersWhenEnded(runId)
    }
    return defineChatMiddleware({ name: 'forget-when-done', onFinish: forget, onAbort: forget, onError: forget })
  }

  /** Notes which sandbox a run got (a new one, or the thread's live one), for the page: `GET /api/threads/:threadId` lists it per run. */
  const recordSandbox = (runId: string) =>
    defineChatMiddleware({
      name: 'record-sandbox',
      optionalRequires: [SandboxCapability],
      onStart: async (ctx) => {
        const handle = getSandbox(ctx, { optional: true })
        if (handle) await runSandboxes.save({ runId, threadId: ctx.threadId, sandboxId: handle.id }).catch(() => undefined) // only the page's label is lost
      },
    })

  return {
    sandbox,
    snapshots,
    listSandboxes,
    dropRunFolders: docker ? async () => [] : dropRunFolders,
    driving,
    run(input) {
      driving.set(input.runId, input.abortController)
      const durability = { adapter: input.log, attach: input.attach, cancelPollMs: config.cancelPollMs }
      // Passed on as it is: core finds the run (and its disconnect notification) from chat()'s own stream.
      return chat({
        adapter: adapterFor(input.runId),
        runId: input.runId,
        threadId: input.threadId,
        messages: [{ role: 'user', content: input.prompt }],
        abortController: input.abortController,
        // withPersistence first, with the same persistence value: it saves the finished turn, then withSandbox checkpoints.
        middleware: [
          withPersistence(stores.snapshots),
          withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability, snapshots }),
          recordSandbox(input.runId),
          forgetWhenDone(input.runId),
        ],
      })
    },
  }
}

/** An AbortController that follows `signal` (a claim's), for chat(): a lost claim stops the drive. */
export function controllerFor(signal: AbortSignal): AbortController {
  const controller = new AbortController()
  const abort = (): void => controller.abort(signal.reason)
  if (signal.aborted) abort()
  else signal.addEventListener('abort', abort, { once: true })
  return controller
}
