/**
 * What crosses Workers RPC between the test Worker and the Node side: call
 * results as data (`{ ok, value | error }`), because an error thrown over RPC
 * keeps only its message, and the typed sandbox errors rebuilt from that data
 * on the Node side, so the conformance kits see `SandboxPathError`,
 * `SandboxLimitError` and the rest with their reasons and fields.
 */
import { InvalidRunIdError, SandboxConfigError, SandboxError, SandboxLimitError, SandboxOperationError, SandboxPathError, StaleEpochError, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import { RunEventLogError, type RunEventLogErrorReason } from '../../src/agent/vocabulary.js'
import type { SandboxCapabilityName, SandboxLimitErrorReason, SandboxOperationErrorReason, SandboxPathErrorReason } from '@tanstack/ai-sandbox'

/** An error as data. */
export interface WireError {
  readonly kind: string
  readonly name: string
  readonly message: string
  readonly reason?: string
  readonly fields: Readonly<Record<string, unknown>>
}

/** A call's outcome as data. */
export type Wire<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: WireError }

/** Turn an error into data, keeping the class and the fields the kits read. */
export function toWire(error: unknown): WireError {
  const e = error as Record<string, unknown>
  const message = error instanceof Error ? error.message : String(error)
  const name = error instanceof Error ? error.name : 'Error'
  const pick = (...keys: string[]) => Object.fromEntries(keys.filter((key) => e?.[key] !== undefined).map((key) => [key, e[key]]))
  if (UnsupportedCapabilityError.isInstance(error)) return { kind: 'unsupported', name, message, fields: pick('provider', 'capability', 'method') }
  if (SandboxPathError.isInstance(error)) return { kind: 'path', name, message, reason: error.reason, fields: pick('path') }
  if (SandboxLimitError.isInstance(error)) return { kind: 'limit', name, message, reason: error.reason, fields: pick('limitBytes', 'option', 'provider', 'path') }
  if (SandboxConfigError.isInstance(error)) return { kind: 'config', name, message, reason: error.reason, fields: pick('field') }
  if (SandboxOperationError.isInstance(error)) return { kind: 'operation', name, message, reason: error.reason, fields: pick('provider') }
  if (StaleEpochError.isInstance(error)) return { kind: 'stale-epoch', name, message, fields: pick('runId', 'epoch', 'storedEpoch') }
  if (RunEventLogError.isInstance(error)) return { kind: 'run-log', name, message, reason: error.reason, fields: pick('runId') }
  if (InvalidRunIdError.isInstance(error)) return { kind: 'invalid-run-id', name, message, fields: pick('field') }
  if (SandboxError.isInstance(error)) return { kind: 'sandbox', name, message, reason: (error as SandboxError).reason, fields: {} }
  return { kind: 'foreign', name, message, fields: {} }
}

/** Rebuild the typed error a {@link WireError} describes. */
export function fromWire(wire: WireError): Error {
  const s = (key: string) => String(wire.fields[key] ?? '')
  const n = (key: string) => Number(wire.fields[key])
  let error: Error
  switch (wire.kind) {
    case 'unsupported':
      error = new UnsupportedCapabilityError({ provider: s('provider'), capability: s('capability') as SandboxCapabilityName, method: s('method') })
      break
    case 'path':
      error = new SandboxPathError(wire.reason as SandboxPathErrorReason, s('path'), wire.message)
      break
    case 'limit':
      error = new SandboxLimitError(wire.reason as SandboxLimitErrorReason, { limitBytes: n('limitBytes'), option: s('option'), provider: s('provider'), ...(wire.fields.path !== undefined ? { path: s('path') } : {}), message: wire.message })
      break
    case 'config':
      error = new SandboxConfigError(s('field'), wire.message)
      break
    case 'operation':
      error = new SandboxOperationError(wire.reason as SandboxOperationErrorReason, s('provider'), wire.message)
      break
    case 'stale-epoch':
      error = new StaleEpochError(s('runId'), wire.fields.epoch === undefined ? undefined : n('epoch'), wire.fields.storedEpoch === undefined ? undefined : n('storedEpoch'))
      break
    case 'run-log':
      error = new RunEventLogError(wire.reason as RunEventLogErrorReason, s('runId'), wire.message)
      break
    case 'invalid-run-id':
      error = new InvalidRunIdError(s('field'), wire.message)
      break
    case 'sandbox':
      error = new SandboxError(wire.reason ?? 'unknown', wire.message)
      break
    default:
      error = new Error(wire.message)
      error.name = wire.name
  }
  Object.defineProperty(error, 'message', { value: wire.message })
  return error
}

/** Run `call` and return its outcome as data. */
export async function settle<T>(call: () => Promise<T> | T): Promise<Wire<T>> {
  try {
    return { ok: true, value: await call() }
  } catch (error) {
    return { ok: false, error: toWire(error) }
  }
}

/** The value of an outcome, or its error rebuilt and thrown. */
export function unwrap<T>(wire: Wire<T>): T {
  if (wire.ok) return wire.value
  throw fromWire(wire.error)
}

/** One line of a spawned process's event stream (NDJSON). */
export type SpawnEvent =
  | { readonly t: 'started'; readonly pid?: number }
  | { readonly t: 'out' | 'err'; readonly d: string }
  | { readonly t: 'exit'; readonly exitCode: number; readonly signal?: string }
  | { readonly t: 'error'; readonly error: WireError }

/** JSON text of RPC arguments or results, bytes as `{ $bytes: <base64> }` (plain HTTP carries no Uint8Array). */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, item: unknown) {
    // The value before its toJSON: a Node Buffer reaches the replacer already turned into { type: 'Buffer', data }.
    const raw = this[key]
    if (raw instanceof Uint8Array) item = raw
    if (item instanceof Uint8Array) {
      let binary = ''
      for (let i = 0; i < item.length; i += 0x8000) binary += String.fromCharCode(...item.subarray(i, i + 0x8000))
      return { $bytes: btoa(binary) }
    }
    return item
  })
}

/**
 * The value of {@link encodeJson}'s text, bytes rebuilt. `arguments: true`
 * turns `null` back into `undefined` (JSON writes an `undefined` argument,
 * e.g. `git.branch(undefined, { dir })`, as `null`).
 */
export function decodeJson<T>(text: string, options: { arguments?: boolean } = {}): T {
  return JSON.parse(text, (_key, item: unknown) => {
    if (item === null && options.arguments) return undefined
    if (typeof item === 'object' && item !== null && typeof (item as { $bytes?: unknown }).$bytes === 'string') {
      const binary = atob((item as { $bytes: string }).$bytes)
      const bytes = new Uint8Array(binary.length)
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
      return bytes
    }
    return item
  }) as T
}
