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
