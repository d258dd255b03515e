/**
 * The live state of one Cloudflare sandbox shared by every part of its
 * handle, and the preparation of a new or resumed container (folders,
 * scripts, marker, the physical workspace root). Holds only plain values, so
 * a handle can serve many Worker requests. Invariant: once `destroyed` is
 * set, every method throws `destroyed` before calling the SDK.
 */
import { SandboxOperationError, shellQuote } from '@tanstack/ai-sandbox'
import { destroyedError, operationError, restartedError, sdkError } from './errors.js'
import { prepareCommand, statePaths } from './sandbox-files.js'
import type { StatePaths } from './sandbox-files.js'
import type { ResolvedCloudflareConfig } from './config.js'
import { Toolbox } from './toolbox.js'

/** Live state of one sandbox. */
export interface SandboxState {
  readonly id: string
  readonly toolbox: Toolbox
  /** The workspace as processes see it (`handle.workspaceRoot`). */
  readonly workspaceRoot: string
  /** The same folder with symlinks resolved; confinement compares against it. */
  readonly physicalRoot: string
  /** The provider's own folder in the container. */
  readonly paths: StatePaths
  /** The marker line every call checks (docs/design/cloudflare.md section 11). */
  readonly marker: string
  readonly config: ResolvedCloudflareConfig
  /** Orders `env.set` calls. */
  envWrites: Promise<void>
  /** Counts `env.set` files written by this instance (their names sort in call order). */
  envSeq: number
  destroyed: boolean
  /** @throws SandboxOperationError `destroyed` once the sandbox is gone. */
  assertLive: (method: string) => void
}

/**
 * Prepare the container behind `id`: on `create`, install the provider's
 * files and write `marker`; on `resume`, only when a marker is there.
 * Bounded by `config.timeoutMs` both ways: the SDK retries a starting
 * container for about 105 s and then gives up with `Container is starting`
 * (or `provisioning`); while the deadline has time left, that answer is
 * asked again (a fresh stub each time, a second apart) instead of failing early.
 * @returns The state, or `null` on a resume that found no marker (a new, empty container).
 * @throws SandboxError `create-failed`, `unreachable` (the deadline, or the SDK's last `Container is starting` when the deadline came during it), or the SDK's mapped failure.
 */
export async function prepareSandbox(id: string, mode: 'create' | 'resume', marker: string, config: ResolvedCloudflareConfig, what: string): Promise<SandboxState | null> {
  const toolbox = new Toolbox(id, config)
  const prepared = await untilStarted(id, config, what, () => toolbox.sandbox().exec(prepareCommand(mode, marker, config.workdir)))
  const lines = (prepared.stdout ?? '').split('\n')
  if (mode === 'resume' && lines[0] === 'TSB-NONE') return null
  const ready = lines.indexOf('TSB-READY')
  const [physicalRoot, stateRoot, seen] = ready === -1 ? [] : lines.slice(ready + 1)
  if (!physicalRoot?.startsWith('/') || !stateRoot?.startsWith('/') || !seen) {
    throw operationError(
      'create-failed',
      `${what}: preparing sandbox ${id} failed (exit ${prepared.exitCode}): ${(prepared.stderr ?? '').trim() || (prepared.stdout ?? '').trim() || 'no output'}. The image needs a POSIX /bin/sh, base64 and setsid, and the workdir ${config.workdir} must be creatable.`,
    )
  }
  const paths = statePaths(stateRoot)
  // From now on a call after an idle stretch first checks that this container is the one created.
  toolbox.wakeCheck = { command: `cat ${shellQuote(paths.marker)} 2>/dev/null`, expect: seen, gone: (method) => restartedError(id, method) }
  const state: SandboxState = {
    id,
    toolbox,
    workspaceRoot: config.workdir,
    physicalRoot: physicalRoot.replace(/\/+$/, '') || '/',
    paths,
    marker: seen,
    config,
    envWrites: Promise.resolve(),
    envSeq: 0,
    destroyed: false,
    assertLive: (method) => {
      if (state.destroyed) throw destroyedError(state.id, method)
    },
  }
  return state
}

/** Pause between two start attempts after the SDK gave up on one, ms. */
const START_RETRY_PAUSE_MS = 1_000

/**
 * Run `attempt` (the SDK's own `exec` in its default session: one round trip
 * that also starts the container) until it answers or `config.timeoutMs`
 * passes, asking again when the SDK reports a container still starting.
 */
async function untilStarted<T>(id: string, config: ResolvedCloudflareConfig, what: string, attempt: () => Promise<T>): Promise<T> {
  const startedAt = Date.now()
  const late = operationError('unreachable', `${what}: the container of sandbox ${id} did not answer within ${config.timeoutMs} ms (it may still be starting: Cloudflare provisions containers on demand). Retry, or raise cloudflareSandbox({ timeoutMs }); check the image in wrangler.jsonc (containers[].image).`)
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late), config.timeoutMs)
  })
  try {
    for (;;) {
      try {
        return await Promise.race([attempt(), deadline])
      } catch (error) {
        if (error === late) throw late
        const mapped = sdkError('create-failed', what, error, id)
        const starting = mapped instanceof SandboxOperationError && mapped.reason === 'unreachable'
        if (!starting || Date.now() - startedAt + START_RETRY_PAUSE_MS >= config.timeoutMs) throw mapped
      }
      await Promise.race([new Promise((resolve) => setTimeout(resolve, START_RETRY_PAUSE_MS)), deadline])
    }
  } finally {
    clearTimeout(timer)
  }
}
