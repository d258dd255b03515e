/**
 * Maps what `@cloudflare/sandbox` throws onto the core error classes. Over
 * Workers RPC an SDK error arrives as a plain `Error` whose message starts
 * with the class name (`FileNotFoundError: …`); `code`, `httpStatus` and the
 * class are lost, so the mapping reads the message, never `instanceof`.
 * Owns the provider name. Design notes: docs/design/cloudflare.md (section 6)
 */
import { SandboxConfigError, SandboxError, SandboxLimitError, SandboxOperationError } from '@tanstack/ai-sandbox'
import type { SandboxOperationErrorReason } from '@tanstack/ai-sandbox'
import type { z } from 'zod'

/** The provider name: `handle.provider`, `provider.name` and every error's `provider`. */
export const PROVIDER_NAME = 'cloudflare'

/** A {@link SandboxOperationError} with this provider's name filled in. */
export function operationError(reason: SandboxOperationErrorReason, message: string, cause?: unknown): SandboxOperationError {
  return new SandboxOperationError(reason, PROVIDER_NAME, message, cause === undefined ? undefined : { cause })
}

/** The message of what the SDK threw. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The SDK class named at the start of a remote error's message (`FileNotFoundError`), if any. */
export function sdkClassOf(error: unknown): string | undefined {
  const name = /^([A-Z][A-Za-z]*Error):/.exec(messageOf(error))?.[1]
  return name ?? (error instanceof Error && error.name !== 'Error' ? error.name : undefined)
}

/** True for a session the container no longer has (terminated, destroyed, unknown): retry in a new one. */
export function isSessionGone(error: unknown): boolean {
  const name = sdkClassOf(error)
  return name === 'SessionTerminatedError' || name === 'SessionDestroyedError' || /session[^.]*(not found|does not exist|terminated|destroyed)/i.test(messageOf(error))
}

/** How to bind the SDK's `Sandbox` class (the fix every binding error names). */
export const BINDING_FIX =
  "pass the Durable Object namespace of the Sandbox class, e.g. cloudflareSandbox({ binding: env.Sandbox }), with durable_objects.bindings [{ name: 'Sandbox', class_name: 'Sandbox' }] in wrangler.jsonc and export { Sandbox } from '@tanstack/ai-sandbox-cloudflare' in the Worker"

/** True when Workers RPC refused a value over its 32 MiB cap. */
export function isRpcSizeError(error: unknown): boolean {
  return /limited to 32MiB|Serialized RPC arguments or return values/i.test(messageOf(error))
}

/**
 * Turn a failure of an SDK call into a core error.
 *
 * - `Container is starting` (the SDK gave up waiting, or a 503), `provisioning`: `unreachable`;
 * - `permanent error` (no such image, out of memory): `create-failed`, naming the image;
 * - the RPC size cap: `SandboxLimitError` `exec-output-too-large`;
 * - a binding to a Durable Object of another class (it has no `exec`, …):
 *   `SandboxConfigError` on `cloudflareSandbox.binding`, naming the fix;
 * - the SDK's generic `SandboxError` (the control server in the container
 *   answered with an internal error, an HTTP 5xx): `reason` as the caller
 *   chose it, with what failed and what to do;
 * - anything else: `reason` as the caller chose it, the SDK's message kept.
 * A {@link SandboxError} passes through unchanged.
 *
 * @param reason - The reason for a failure that is not one of the above.
 * @param what - The operation, e.g. `process.exec`.
 * @param error - What the SDK threw.
 * @param sandboxId - The sandbox the call was about, named in messages.
 */
export function sdkError(reason: SandboxOperationErrorReason, what: string, error: unknown, sandboxId?: string): SandboxError {
  if (SandboxError.isInstance(error)) return error
  const said = messageOf(error)
  const about = sandboxId ? ` (sandbox ${sandboxId})` : ''
  if (/container is (currently )?provisioning/i.test(said)) {
    return operationError('unreachable', `${what}${about}: Cloudflare is still provisioning a container instance (${said}). Retry in a few seconds; if it lasts, check max_instances in wrangler.jsonc.`, error)
  }
  if (/container is starting/i.test(said)) {
    return operationError('unreachable', `${what}${about}: the container did not become ready (${said}). Retry; if it lasts, check that the image's control server listens on port 3000 and that the image exists.`, error)
  }
  if (/permanent error/i.test(said)) {
    return operationError('create-failed', `${what}${about}: the container cannot start (${said}). Check the image named in wrangler.jsonc (containers[].image) and its instance type.`, error)
  }
  if (/RPC receiver does not implement the method/i.test(said)) {
    return new SandboxConfigError('cloudflareSandbox.binding', `Invalid option cloudflareSandbox.binding: the Durable Object it names is not the SDK's Sandbox class (${said}); ${BINDING_FIX}.`)
  }
  if (isRpcSizeError(error)) {
    return new SandboxLimitError('exec-output-too-large', {
      limitBytes: 32 * 1024 * 1024,
      option: 'cloudflareSandbox({ maxExecOutputBytes, maxReadBytes })',
      provider: PROVIDER_NAME,
      message: `${what}${about}: a value crossing Workers RPC passed its 32 MiB cap (${said}). Lower the output (redirect it to a file), or move large data in smaller pieces.`,
      cause: error,
    })
  }
  if (/^SandboxError\b/.test(said)) {
    return operationError(reason, `${what}${about}: the control server in the container failed (${said}). Retry the call; if it keeps failing, the container is unwell: destroy the sandbox and create a new one.`, error)
  }
  return operationError(reason, `${what}${about} failed: ${said}`, error)
}

/** The error every method of a destroyed sandbox throws. */
export function destroyedError(id: string, method: string): SandboxOperationError {
  return operationError('destroyed', `Sandbox ${id} was destroyed; ${method}() cannot run. Create a new sandbox with provider.create().`)
}

/**
 * The error of a sandbox whose container was replaced by an empty one (an
 * idle stop, a crash, a destroy elsewhere): the provider's marker is gone, so
 * files, processes and env of the sandbox are gone too. Reason `not-found`:
 * the sandbox as it was no longer exists.
 */
export function restartedError(id: string, method: string): SandboxOperationError {
  return operationError(
    'not-found',
    `${method}: sandbox ${id} is gone: its container was stopped and restarted empty (idle longer than sleepAfter, a crash, or a destroy elsewhere), so its files, processes and env are lost. ` +
      'Create a new sandbox; to keep one alive while nothing calls it, raise cloudflareSandbox({ sleepAfter }) or set keepAlive: true.',
  )
}

/**
 * Parse `value` with `schema`, or throw {@link SandboxConfigError} naming the
 * first bad field under `<root>.<scope>` (root `cloudflareSandbox` unless
 * given, e.g. `createCloudflareSandboxAgent`) with zod's message.
 */
export function parseConfig<T>(schema: z.ZodType<T>, value: unknown, scope: string, root = 'cloudflareSandbox'): T {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const field = [root, scope, ...issue.path.map(String)].filter((part) => part !== '').join('.')
  throw new SandboxConfigError(field, `Invalid option ${field}: ${issue.message}.`)
}
