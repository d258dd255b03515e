/**
 * The Coordinator's side of `colocated` mode: the harness and its tool bridge
 * run in the container (`runInContainerHarness` from `/runner`), the object
 * only keeps the log and executes the chat() tools the runner sends back.
 *
 * The runner is launched through the run journal (`startJournaledAgent`, the
 * run request on its stdin) and read back with `readJournalNdjson`: one
 * journal line per chunk. The journal is what survives the object: a drive
 * after a restart launches nothing new (the journal is there already), reads
 * the journal from its first byte and aligns it to the stored log
 * (`alignToStoredLog`), so no chunk is stored twice or skipped. The sandbox of
 * the run is recorded in the object's instance store and resumed by a later
 * drive; it is destroyed once the run's record is terminal.
 */
import type { StreamChunk } from '@tanstack/ai'
import {
  alignToStoredLog,
  JournalError,
  readJournalNdjson,
  startJournaledAgent,
  toolDescriptors,
  type BridgeableTool,
  type SandboxHandle,
  type SandboxInstanceStore,
  type SpawnNdjsonExit,
} from '@tanstack/ai-sandbox'
import type { CloudflareSandboxConfig } from '../config.js'
import { PROVIDER_NAME } from '../errors.js'
import { cloudflareSandbox } from '../provider.js'
import { CONTAINER_RUN_REQUEST_VERSION, type ContainerRunRequest } from '../runner/request.js'
import type { RunSource, StoredRunInput } from './drive.js'
import { runLogStream } from './run-log-bindings.js'
import type { RunEventLog } from './vocabulary.js'

/** How the Coordinator starts the runner in the container. */
export interface ColocatedRunnerCommand {
  /** The POSIX shell command that runs the app's runner module, e.g. `'node /app/runner.mjs'`. It reads the run request on stdin. */
  command: string
  /** Environment of the runner (model credentials, the CLI's options). Default none besides the provider's. */
  env?: Record<string, string>
  /** Working directory of the runner inside the container. Default the provider's `workdir`. */
  cwd?: string
}

/** What a colocated drive needs from its Coordinator. */
export interface ColocatedDeps {
  readonly log: RunEventLog
  readonly instances: SandboxInstanceStore
  readonly provider: () => CloudflareSandboxConfig
  readonly runner: (run: { runId: string; threadId: string }) => ColocatedRunnerCommand
  readonly tools: () => ReadonlyArray<unknown>
}

/**
 * The run's chunks as the runner in the container writes them: the runner is
 * launched unless its journal exists, then the journal is read from its
 * start and aligned to the stored log.
 */
export function runnerSource(deps: ColocatedDeps, input: StoredRunInput): { source: RunSource; settled: (boundMs: number) => Promise<void> } {
  const reading = new Set<Promise<void>>()
  const source: RunSource = (_attach, abortController) => {
    const chunks = runnerChunks(deps, input, abortController.signal)
    return {
      [Symbol.asyncIterator]: () => {
        let done!: () => void
        const finished = new Promise<void>((resolve) => (done = resolve))
        reading.add(finished)
        void finished.then(() => reading.delete(finished))
        const iterator = chunks[Symbol.asyncIterator]()
        const settle = <T>(step: Promise<IteratorResult<T>>): Promise<IteratorResult<T>> =>
          step.then(
            (result) => (result.done ? (done(), result) : result),
            (error: unknown) => {
              done()
              throw error
            },
          )
        return { next: () => settle(iterator.next()), return: (value?: unknown) => settle(iterator.return!(value) as Promise<IteratorResult<StreamChunk>>) }
      },
    }
  }
  // A reader stopped mid-call (a cancel) can still have a call on its way to the sandbox; a destroy before it
  // lands would have the SDK start a fresh container for that call. Wait for every reader's end (bounded).
  const settled = async (boundMs: number): Promise<void> => {
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([Promise.all(reading), new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)))])
    clearTimeout(timer)
  }
  return { source, settled }
}

async function* runnerChunks(deps: ColocatedDeps, input: StoredRunInput, signal: AbortSignal): AsyncIterable<StreamChunk> {
  const { runId, threadId } = input
  const handle = await runSandbox(deps, input)
  const runner = deps.runner({ runId, threadId })
  const request: ContainerRunRequest = {
    version: CONTAINER_RUN_REQUEST_VERSION,
    runId,
    threadId,
    messages: input.messages,
    tools: toolDescriptors(deps.tools() as BridgeableTool[]),
    toolsUrl: input.toolsUrl!,
    toolsToken: input.toolsToken!,
  }
  // `keep`: the journal outlives its first reader, so a drive that dies after the sentinel and before the record is
  // terminal finds it again (and launches nothing). The sandbox goes with the run at the end.
  const journal = { runId, keep: true }
  try {
    await startJournaledAgent(handle, runner.command, { journal, stdin: JSON.stringify(request), ...(runner.env ? { env: runner.env } : {}), ...(runner.cwd ? { cwd: runner.cwd } : {}) })
  } catch (error) {
    if (!(JournalError.isInstance(error) && error.reason === 'journal-exists')) throw error
  }
  let exit: SpawnNdjsonExit | undefined
  let terminal = false
  const lines = readJournalNdjson(handle, { journal, signal, onExit: (value) => void (exit = value) })
  // Watched before alignment: a terminal chunk stored before a restart is suppressed from the replay, and still ended the run.
  const replay = async function* (): AsyncIterable<StreamChunk> {
    for await (const chunk of chunksOf(lines)) {
      if (chunk.type === 'RUN_FINISHED' || chunk.type === 'RUN_ERROR') terminal = true
      yield chunk
    }
  }
  yield* alignToStoredLog(replay(), { durability: runLogStream(deps.log, { runId }) })
  if (exit !== undefined && !terminal) {
    throw new Error(`The runner in the container exited with code ${exit.exitCode}${exit.signal ? ` (${exit.signal})` : ''} before the run ended; the end of its stderr: ${exit.stderrTail.slice(-2_000).trim() || '(empty)'}`)
  }
}

/** Journal values that are chunks (an object with a `type`); anything else the runner printed is skipped. */
async function* chunksOf(values: AsyncIterable<unknown>): AsyncIterable<StreamChunk> {
  for await (const value of values) {
    if (typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string') yield value as StreamChunk
  }
}

/** The run's sandbox: the one its instance record names (a later drive), else a new one, recorded before anything runs in it. */
async function runSandbox(deps: ColocatedDeps, input: StoredRunInput): Promise<SandboxHandle> {
  const provider = cloudflareSandbox(deps.provider())
  const record = await deps.instances.get(input.runId)
  if (record) {
    const handle = await provider.resume({ id: record.providerSandboxId })
    if (handle) return handle
    throw new Error(`The sandbox of run ${input.runId} (${record.providerSandboxId}) is gone, and the runner and its journal with it: the run cannot go on.`)
  }
  const handle = await provider.create()
  await deps.instances.upsert({ key: input.runId, provider: PROVIDER_NAME, providerSandboxId: handle.id, threadId: input.threadId, latestRunId: input.runId, updatedAt: Date.now() })
  return handle
}

/** Destroy the run's sandbox (the runner, the CLI and the journal with it) and forget it. */
export async function destroyRunSandbox(deps: Pick<ColocatedDeps, 'instances' | 'provider'>, runId: string): Promise<void> {
  const record = await deps.instances.get(runId)
  if (!record) return
  await cloudflareSandbox(deps.provider()).destroy({ id: record.providerSandboxId })
  await deps.instances.delete(runId)
}
