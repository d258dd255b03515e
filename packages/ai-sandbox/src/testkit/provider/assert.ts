/**
 * Assertion helpers of the provider conformance kit. Every failure they raise
 * names the contract rule that was broken and shows what actually happened, so
 * a provider author can fix the provider without reading the kit. They must not
 * catch anything but the call under test, and they recognise sandbox errors by
 * brand (`SandboxError.isInstance`), never by `instanceof`.
 */
import { assert } from 'vitest'
import { SandboxError } from '../../contracts/errors.js'
import type { SandboxCapabilityName, SandboxPathErrorReason } from '../../contracts/errors.js'

/**
 * Fail the current test with a message that starts with the broken rule.
 *
 * @param rule - The contract rule, e.g. `fs.read of a missing file throws SandboxPathError (not-found)`.
 * @param detail - What happened instead.
 * @throws AssertionError always.
 */
export function violation(rule: string, detail: string): never {
  assert.fail(`Contract violated: ${rule}\n  ${detail}`)
}

/** The error {@link violation} would throw, returned instead (for promise rejections). */
export function violationError(rule: string, detail: string): Error {
  try {
    return violation(rule, detail)
  } catch (error) {
    return error as Error
  }
}

/**
 * The contract rule a provider breaks when anything but a `SandboxError`
 * leaves one of its methods: callers branch on `reason`, and a `TypeError`,
 * a bare `Error` or a thrown string has none.
 */
export const SANDBOX_ERROR_RULE = 'provider errors are SandboxError with a reason (never a bare Error, a TypeError or a non-Error value)'

/**
 * Whether `error` is something the provider let through that the contract
 * does not allow: not a `SandboxError` (by brand), and not the test runner's
 * own assertion or skip signal.
 *
 * @param error - Whatever a check threw.
 * @returns `true` for a foreign error to annotate with {@link annotateForeignError}.
 */
export function isForeignError(error: unknown): boolean {
  if (SandboxError.isInstance(error)) return false
  if (error instanceof Error && (error.name === 'AssertionError' || (error as { code?: unknown }).code === 'VITEST_PENDING')) return false
  return true
}

/**
 * Wrap a non-`SandboxError` that reached a check into an assertion failure
 * naming {@link SANDBOX_ERROR_RULE}, what was being done, the original error
 * and the top of its stack (where in the provider it came from). The
 * original is kept as `cause`.
 *
 * @param error - The foreign error (see {@link isForeignError}).
 * @param during - What the check was doing, e.g. the case title or the call.
 * @returns The AssertionError to throw.
 */
export function annotateForeignError(error: unknown, during: string): Error {
  const annotated = violationError(SANDBOX_ERROR_RULE, `got ${describeError(error)}\n  while: ${during}${stackTop(error)}`)
  ;(annotated as Error & { cause?: unknown }).cause = error
  return annotated
}

/**
 * The top of `error`'s stack (where in the provider it came from) for a
 * failure message: a `thrown at:` line and five frames, each on a line of
 * its own; `''` when it has no stack.
 */
export function stackTop(error: unknown): string {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack.split('\n').slice(1, 6).map((line) => `  ${line.trim()}`).join('\n') : ''
  return stack ? `\n  thrown at:\n${stack}` : ''
}

/**
 * Run a check and report an error that is not a `SandboxError` (nor an
 * assertion or skip of the test runner) as a breach of
 * {@link SANDBOX_ERROR_RULE}, naming `during`, instead of letting it through
 * raw. Every case of `runSandboxProviderConformance` runs this way; wrap a
 * single exported check in it to get the same report.
 *
 * @param during - What is being checked, e.g. the case title.
 * @param run - The check.
 * @returns What `run` resolves with.
 * @throws AssertionError naming the rule for a foreign error; any other error unchanged.
 */
export async function reportForeignErrors<T>(during: string, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw isForeignError(error) ? annotateForeignError(error, during) : error
  }
}

/** Describe any thrown value in one line: class, reason, message. */
export function describeError(error: unknown): string {
  if (error instanceof Error || SandboxError.isInstance(error)) {
    const e = error as Error & { reason?: unknown }
    const reason = typeof e.reason === 'string' ? `(${e.reason})` : ''
    return `${e.name}${reason}: ${e.message}`
  }
  return `a non-Error value ${JSON.stringify(error)}`
}

/**
 * Run `run` and return what it threw (synchronously or as a rejection).
 * @throws AssertionError naming `rule` when it resolves instead.
 */
export async function rejectionOf(run: () => unknown, rule: string): Promise<unknown> {
  let value: unknown
  try {
    value = await run()
  } catch (error) {
    return error
  }
  return violation(rule, `expected a rejection, but it resolved with ${preview(value)}`)
}

/**
 * Expect `run` to throw a `SandboxPathError` with one of `reasons`.
 * Recognised by brand plus a string `path` field, so a second loaded copy of
 * the package still passes.
 */
export async function expectSandboxPathError(run: () => unknown, reasons: readonly SandboxPathErrorReason[], rule: string): Promise<void> {
  const error = await rejectionOf(run, rule)
  const expected = `SandboxPathError with reason ${reasons.map((r) => JSON.stringify(r)).join(' or ')}`
  if (!SandboxError.isInstance(error) || typeof (error as { path?: unknown }).path !== 'string') {
    violation(rule, `expected ${expected}, got ${describeError(error)}`)
  }
  if (!(reasons as readonly string[]).includes(error.reason)) {
    violation(rule, `expected ${expected}, got reason ${JSON.stringify(error.reason)} (${error.message})`)
  }
}

/** Expect `run` to throw any error of the sandbox family (optionally with `reason`). */
export async function expectSandboxError(run: () => unknown, rule: string, reason?: string): Promise<void> {
  const error = await rejectionOf(run, rule)
  if (!SandboxError.isInstance(error)) {
    violation(rule, `expected a SandboxError${reason ? ` with reason "${reason}"` : ''} (never a bare Error), got ${describeError(error)}`)
  }
  if (reason !== undefined && error.reason !== reason) {
    violation(rule, `expected reason ${JSON.stringify(reason)}, got ${JSON.stringify(error.reason)} (${error.message})`)
  }
}

/**
 * Expect `run` to throw `UnsupportedCapabilityError` for `capability`: the
 * promise every `false` capability flag makes.
 */
export async function expectUnsupportedCapability(run: () => unknown, capability: SandboxCapabilityName, rule: string): Promise<void> {
  const error = await rejectionOf(run, rule)
  const expected = `UnsupportedCapabilityError with capability "${capability}"`
  if (!SandboxError.isInstance(error) || error.reason !== 'unsupported-capability') {
    violation(rule, `expected ${expected}, got ${describeError(error)}`)
  }
  const actual = (error as { capability?: unknown }).capability
  if (actual !== capability) violation(rule, `expected ${expected}, got capability ${JSON.stringify(actual)}`)
}

/** How long a check waits for something the contract says must happen before calling it a hang, ms. */
export const HANG_BOUND_MS = 20_000

/**
 * Await `promise`, but fail naming `rule` if it is still pending after
 * `boundMs` (default {@link HANG_BOUND_MS}). Not a timing claim: the bound only
 * turns a hang into a message that says which promise never settled.
 */
export async function within<T>(promise: Promise<T>, rule: string, boundMs = HANG_BOUND_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(violationError(rule, `still pending after ${boundMs} ms (treated as a hang)`)), boundMs)
  })
  try {
    return await Promise.race([promise, hang])
  } finally {
    clearTimeout(timer)
  }
}

/** A short printable preview of any value, for failure messages. */
export function preview(value: unknown, max = 120): string {
  let text: string
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value))
  } catch {
    text = String(value)
  }
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text
}
