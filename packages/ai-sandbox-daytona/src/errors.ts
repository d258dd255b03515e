/**
 * Maps what `@daytona/sdk` throws (its `DaytonaError` family, by status and
 * class) onto the core error classes, so nothing this package throws is a
 * bare `Error` and every message says what failed and what to do. Owns the
 * provider name. Callers pick the reason for a failure that is theirs.
 */
import { DaytonaError } from '@daytona/sdk'
import { SandboxConfigError, SandboxError, SandboxOperationError } from '@tanstack/ai-sandbox'
import type { SandboxOperationErrorReason } from '@tanstack/ai-sandbox'
import type { z } from 'zod'

/** The provider name: `handle.provider`, `provider.name` and every error's `provider`. */
export const PROVIDER_NAME = 'daytona'

/** A {@link SandboxOperationError} with this provider's name filled in. */
export function operationError(reason: SandboxOperationErrorReason, message: string, cause?: unknown): SandboxOperationError {
  return new SandboxOperationError(reason, PROVIDER_NAME, message, cause === undefined ? undefined : { cause })
}

/** The HTTP status the SDK saw, when it got an answer. */
export function statusOf(error: unknown): number | undefined {
  return error instanceof DaytonaError && typeof error.statusCode === 'number' ? error.statusCode : undefined
}

/** True for the SDK's "not found" (a sandbox, session, command or file that does not exist). */
export function isNotFound(error: unknown): boolean {
  return statusOf(error) === 404
}

/** What the SDK's message says, without its own prefixes. */
function sdkMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** Seconds from a `Retry-After` header, when the SDK kept it. */
function retryAfterOf(error: unknown): string | undefined {
  if (!(error instanceof DaytonaError)) return undefined
  const value = error.headers?.get?.('retry-after')
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * Turn a failure of an SDK call into a core error.
 *
 * - 401/403: `auth-failed` (the key is missing, wrong or lacks access);
 * - 429: `rate-limited` (quota or rate limit; the Retry-After is named);
 * - no answer, 502, 503, 504: `unreachable`;
 * - 404 on a sandbox we hold: `not-found` (deleted behind our back);
 * - anything else: `reason` as the caller chose it.
 * A {@link SandboxError} passes through unchanged.
 *
 * @param reason - The reason for a failure that is not one of the above.
 * @param what - The operation, e.g. `process.exec`.
 * @param error - What the SDK threw.
 * @param sandboxId - The sandbox the call was about, named in messages.
 */
export function apiError(reason: SandboxOperationErrorReason, what: string, error: unknown, sandboxId?: string): SandboxError {
  if (SandboxError.isInstance(error)) return error
  const status = statusOf(error)
  const said = sdkMessage(error)
  const about = sandboxId ? ` (sandbox ${sandboxId})` : ''
  if (status === 401 || status === 403) {
    return operationError(
      'auth-failed',
      `${what}${about}: Daytona refused the API key (HTTP ${status}: ${said}). Check daytonaSandbox({ apiKey }) or the DAYTONA_API_KEY variable, and that the key belongs to the organization of apiUrl.`,
      error,
    )
  }
  if (status === 429) {
    const retry = retryAfterOf(error)
    return operationError(
      'rate-limited',
      `${what}${about}: Daytona's rate limit or quota was reached (HTTP 429: ${said}). ${retry ? `Retry after ${retry} s, ` : 'Retry later, '}or stop sandboxes you no longer use (quotas count running sandboxes).`,
      error,
    )
  }
  if (status === undefined || status === 502 || status === 503 || status === 504) {
    return operationError(
      'unreachable',
      `${what}${about}: the Daytona API did not answer (${status === undefined ? said : `HTTP ${status}: ${said}`}). Check daytonaSandbox({ apiUrl }) and the network, then retry${/exec|spawn/.test(what) ? '; a command cut off this way may or may not have run' : ''}.`,
      error,
    )
  }
  if (status === 409 && sandboxId && /destroy/i.test(said)) {
    return operationError('not-found', `${what}: sandbox ${sandboxId} is being deleted on Daytona (deleted elsewhere, or auto-deleted after it stopped). Create a new sandbox.`, error)
  }
  if (status === 409 && sandboxId && /stopp|archiv|paus/i.test(said)) {
    return operationError(reason, `${what}: sandbox ${sandboxId} is not running on Daytona (${said}); it may have auto-stopped (autoStopInterval). Call provider.resume({ id: '${sandboxId}' }) to start it, then use the handle again.`, error)
  }
  if (status === 404 && sandboxId) {
    return operationError('not-found', `${what}: sandbox ${sandboxId} no longer exists on Daytona (deleted elsewhere, or auto-deleted after it stopped). Create a new sandbox.`, error)
  }
  return operationError(reason, `${what}${about} failed: HTTP ${status}: ${said}`, error)
}

/** The error every method of a destroyed sandbox throws. */
export function destroyedError(id: string, method: string): SandboxOperationError {
  return operationError('destroyed', `Sandbox ${id} was destroyed; ${method}() cannot run. Create a new sandbox with provider.create().`)
}

/**
 * Parse `value` with `schema`, or throw {@link SandboxConfigError} naming the
 * first bad field under `daytonaSandbox.<scope>` with zod's message.
 */
export function parseConfig<T>(schema: z.ZodType<T>, value: unknown, scope: string): T {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const field = ['daytonaSandbox', scope, ...issue.path.map(String)].filter((part) => part !== '').join('.')
  throw new SandboxConfigError(field, `Invalid option ${field}: ${issue.message}.`)
}
