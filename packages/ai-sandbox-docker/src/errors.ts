/**
 * Maps Docker engine failures (dockerode HTTP errors, socket errors) onto the
 * core error classes, so nothing this package throws is a bare `Error`, and
 * every message says what failed and what to do. Owns the provider name. It
 * decides no policy: callers pick the reason and come here to phrase it.
 */
import { SandboxConfigError, SandboxError, SandboxOperationError } from '@tanstack/ai-sandbox'
import type { SandboxOperationErrorReason } from '@tanstack/ai-sandbox'

/** The provider name: `handle.provider`, `provider.name` and every error's `provider`. */
export const PROVIDER_NAME = 'docker'

/** What to do about a missing image, in "image not found" messages: the provider never pulls, so the user fetches or builds it. */
const IMAGE_HINT =
  'The provider never pulls: fetch or build it on that engine first (`docker pull <image>`, `docker build`, or `docker load`), then run again. The images the package documents (tanstack-sandbox-debian:bookworm, tanstack-sandbox-busybox:latest) are built by scripts/docker/images.sh in the @tanstack/ai-sandbox-docker source repository.'

/** Fields of the errors dockerode and Node sockets throw that we read. */
interface EngineFailure {
  statusCode?: number
  code?: string
  syscall?: string
  address?: string
  json?: { message?: string } | null
  message?: string
}

/** The HTTP status of a dockerode error, or `undefined` for socket-level failures. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as EngineFailure | null)?.statusCode
  return typeof status === 'number' ? status : undefined
}

/** The engine's own message (`No such container: ...`), without dockerode's prefix. */
export function engineMessage(error: unknown): string {
  const failure = error as EngineFailure | null
  const json = failure?.json?.message
  if (typeof json === 'string' && json.length > 0) return json
  return failure?.message ?? String(error)
}

/** True when the engine could not be reached at all (no socket, refused, reset). */
export function isUnreachable(error: unknown): boolean {
  const failure = error as EngineFailure | null
  if (!failure || statusOf(error) !== undefined) return false
  return failure.syscall === 'connect' || ['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(failure.code ?? '')
}

/** True for a 404 about a container (the sandbox was removed behind our back). */
export function isMissingContainer(error: unknown): boolean {
  return statusOf(error) === 404 && /no such container/i.test(engineMessage(error))
}

/** A {@link SandboxOperationError} with this provider's name filled in. */
export function operationError(reason: SandboxOperationErrorReason, message: string, cause?: unknown): SandboxOperationError {
  return new SandboxOperationError(reason, PROVIDER_NAME, message, cause === undefined ? undefined : { cause })
}

/** The error every method of a destroyed sandbox throws. */
export function destroyedError(id: string, method: string): SandboxOperationError {
  return operationError('destroyed', `Sandbox ${shortId(id)} was destroyed; ${method}() cannot run. Create a new sandbox with provider.create().`)
}

/** The error for a container that vanished while a handle still pointed at it. */
export function containerGoneError(id: string, method: string, cause?: unknown): SandboxOperationError {
  return operationError(
    'not-found',
    `${method}: the container of sandbox ${shortId(id)} no longer exists (removed outside this provider, e.g. docker rm). Its files are gone; create a new sandbox (provider.resume({ id }) now returns null).`,
    cause,
  )
}

/**
 * Turn an engine failure into a typed error. Already-typed sandbox errors pass
 * through unchanged.
 *
 * @param reason - The reason for failures that are not more specific (e.g. `exec-failed`).
 * @param what - What was being done, e.g. `process.exec` or `create`.
 * @param context - The engine endpoint, and the sandbox id / image when known.
 */
export function engineError(reason: SandboxOperationErrorReason, what: string, error: unknown, context: { endpoint: string; id?: string; image?: string }): SandboxError {
  if (SandboxError.isInstance(error)) return error
  const detail = engineMessage(error)
  if (isUnreachable(error)) {
    return operationError(
      reason,
      `${what}: the Docker engine is not answering at ${context.endpoint} (${(error as EngineFailure).code ?? detail}). Start it (Docker Desktop, \`sudo systemctl start docker\`, or \`dockerd\`), or point dockerSandbox({ docker }) at a running engine.`,
      error,
    )
  }
  if (statusOf(error) === 404 && /no such image/i.test(detail) && context.image !== undefined) {
    return operationError(reason, `${what}: the Docker image "${context.image}" does not exist on the engine at ${context.endpoint}. ${IMAGE_HINT}`, error)
  }
  if (context.id !== undefined && isMissingContainer(error)) return containerGoneError(context.id, what, error)
  if (statusOf(error) === 409 && /is not running|is paused/i.test(detail) && context.id !== undefined) {
    return operationError(reason, `${what}: the container of sandbox ${shortId(context.id)} is not running (${detail}). Call provider.resume({ id }) to start it again.`, error)
  }
  if (/unable to find user|no matching entries in passwd/i.test(detail)) {
    return new SandboxConfigError('dockerSandbox.user', `Invalid option dockerSandbox.user: ${detail}. Use a user that exists in the image, or a numeric "uid:gid".`, { cause: error })
  }
  if (/unknown capability/i.test(detail)) {
    return new SandboxConfigError('dockerSandbox.capAdd', `Invalid option dockerSandbox.capAdd: ${detail}. This engine does not know that capability (older than the kernel's list); remove it from capAdd.`, { cause: error })
  }
  if (/bind source path does not exist|invalid mount config/i.test(detail)) {
    return new SandboxConfigError('dockerSandbox.mounts', `Invalid option dockerSandbox.mounts: ${detail}. Every mount source must be an existing absolute path on the Docker host.`, { cause: error })
  }
  return operationError(reason, `${what} failed on the Docker engine at ${context.endpoint}: ${detail}`, error)
}

/** The first 12 characters of a container id, as `docker ps` shows it. */
export function shortId(id: string): string {
  return /^[0-9a-f]{64}$/.test(id) ? id.slice(0, 12) : id
}

/** Core's option parser: throws `SandboxConfigError` naming the dotted field. */
export { parseOptions as parseConfig } from '@tanstack/ai-sandbox'
