/**
 * Maps Node errors (errno codes, zod issues) onto the core error classes, so
 * nothing this package throws is a bare `Error`. Owns the provider name used in
 * every message. It must not decide policy (what is allowed): callers do that
 * and come here only to phrase the refusal.
 */
import { SandboxOperationError, SandboxPathError, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import type { SandboxCapabilityName, SandboxOperationErrorReason } from '@tanstack/ai-sandbox'

/** The provider name: `handle.provider`, `provider.name` and every error's `provider`. */
export const PROVIDER_NAME = 'local-process'

/**
 * An optional method this provider does not support (its flag is false): it
 * exists, so calling it throws `UnsupportedCapabilityError` instead of a `TypeError`.
 */
export function unsupportedMethod(capability: SandboxCapabilityName, method: string): () => Promise<never> {
  return async () => {
    throw new UnsupportedCapabilityError({
      provider: PROVIDER_NAME,
      capability,
      method,
      hint: `A bare host directory has no ${capability === 'fork' ? 'copy-on-fork' : 'snapshot'} mechanism; use the Docker provider (dockerSandbox() from @tanstack/ai-sandbox-docker), which supports snapshot(), restoreSnapshot() and fork().`,
    })
  }
}

/** The errno `code` of a Node system error, or `undefined`. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : undefined
}

/**
 * Turn a failed filesystem call into a typed error: a missing path becomes
 * `SandboxPathError` `not-found`, anything else `SandboxOperationError`
 * `fs-failed`. Both keep the original error as `cause`.
 *
 * @param operation - The `fs` method that failed, e.g. `read`.
 * @param path - The path exactly as the caller gave it.
 */
export function fsError(operation: string, path: string, error: unknown): Error {
  const code = errnoCode(error)
  if (code === 'ENOENT') {
    return new SandboxPathError('not-found', path, `fs.${operation}: ${JSON.stringify(path)} does not exist in the sandbox workspace. Check the path, or create it first with fs.write/fs.mkdir.`, { cause: error })
  }
  const detail = error instanceof Error ? error.message : String(error)
  return new SandboxOperationError('fs-failed', PROVIDER_NAME, `fs.${operation} failed for ${JSON.stringify(path)}${code ? ` (${code})` : ''}: ${detail}`, { cause: error })
}

/** A {@link SandboxOperationError} with this provider's name filled in. */
export function operationError(reason: SandboxOperationErrorReason, message: string, cause?: unknown): SandboxOperationError {
  return new SandboxOperationError(reason, PROVIDER_NAME, message, cause === undefined ? undefined : { cause })
}

/** The error every method of a destroyed sandbox throws. */
export function destroyedError(id: string, method: string): SandboxOperationError {
  return operationError('destroyed', `Sandbox "${id}" was destroyed; ${method}() cannot run. Create a new sandbox with provider.create().`)
}

/** Core's option parser: throws `SandboxConfigError` naming the dotted field. */
export { parseOptions as parseConfig } from '@tanstack/ai-sandbox'
