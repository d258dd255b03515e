/**
 * Type-safe secrets. `createSecrets` turns values into opaque `SecretRef`
 * tokens; the values live in a module-private registry keyed by the token
 * object, so they never appear in JSON, `console.log`, errors or stores.
 * Invariant: only `resolveSecret` (and code it calls) ever sees a value.
 * Source: spec 000, "Type-safe secrets". On the ground floor: contracts
 * (git auth), workspaces and harnesses all carry these references.
 */
import { SandboxConfigError, UnknownSecretError } from './errors.js'

const SECRET_BRAND = Symbol.for('@tanstack/ai-sandbox/secret-ref')
const INSPECT = Symbol.for('nodejs.util.inspect.custom')
/** What a secret name may be: an environment variable name. */
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** How a reference renders its value when resolved. */
export type SecretFormat = 'raw' | 'bearer'

/**
 * An opaque handle to a secret value. Serialises as `{ "$secret": name }`,
 * prints as `[secret NAME]`; resolve with {@link resolveSecret}.
 */
export interface SecretRef<TName extends string = string> {
  readonly name: TName
  readonly format: SecretFormat
  toJSON: () => { $secret: string }
  toString: () => string
}

/** The object `createSecrets` returns: one {@link SecretRef} per key. */
export type Secrets<TKeys extends string = string> = { readonly [K in TKeys]: SecretRef<K> }

// Values by base token. WeakMap: not enumerable, not serialisable, not reachable from the token.
const registry = new WeakMap<object, string>()
// Derived tokens (bearer) point at their base token.
const bases = new WeakMap<object, object>()

function makeRef<TName extends string>(name: TName, format: SecretFormat): SecretRef<TName> {
  const label = format === 'bearer' ? `[secret Bearer ${name}]` : `[secret ${name}]`
  const ref: SecretRef<TName> = {
    name,
    format,
    toJSON: () => ({ $secret: name }),
    toString: () => label,
  }
  Object.defineProperty(ref, SECRET_BRAND, { value: true })
  Object.defineProperty(ref, INSPECT, { value: () => label })
  return Object.freeze(ref)
}

/**
 * Wrap secret values in opaque references.
 *
 * @param values - Secret name to value. An empty string is allowed (an unset
 *   optional secret) and resolves to `''`.
 * @returns One {@link SecretRef} per key; values are held in a private registry.
 * @throws SandboxConfigError (`createSecrets.<name>`) for a name that is not an environment variable name, or a value that is not a string.
 * @example
 * ```ts
 * const secrets = createSecrets({ GH: process.env.GH_TOKEN ?? '' })
 * JSON.stringify(secrets) // {"GH":{"$secret":"GH"}}
 * ```
 */
export function createSecrets<const TValues extends Record<string, string>>(values: TValues): Secrets<Extract<keyof TValues, string>> {
  const out: Record<string, SecretRef> = {}
  for (const [name, value] of Object.entries(values)) {
    // A secret is set in the sandbox's environment under its name, so the name must be one a shell accepts.
    if (!SECRET_NAME.test(name)) {
      const suggestion = name.replace(/[^A-Za-z0-9_]/g, '_').replace(/^(?=\d)/, '_')
      throw new SandboxConfigError(`createSecrets.${name}`, `Invalid option createSecrets.${name}: secret names are environment variable names (letters, digits and _, not starting with a digit), e.g. ${JSON.stringify(suggestion)}.`)
    }
    if (typeof value !== 'string') {
      throw new SandboxConfigError(`createSecrets.${name}`, `Invalid option createSecrets.${name}: the value must be a string (got ${typeof value}). Use process.env.${name} ?? '' for optional secrets.`)
    }
    const ref = makeRef(name, 'raw')
    registry.set(ref, value)
    out[name] = ref
  }
  return Object.freeze(out) as Secrets<Extract<keyof TValues, string>>
}

/** True when `value` is a {@link SecretRef} (from any copy of this package). */
export function isSecretRef(value: unknown): value is SecretRef {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[SECRET_BRAND] === true
}

/**
 * A reference that resolves to `Bearer <value>`, for HTTP `Authorization`
 * headers (MCP servers, APIs).
 * @throws UnknownSecretError when `ref` was not made by {@link createSecrets}.
 */
export function bearer<TName extends string>(ref: SecretRef<TName>): SecretRef<TName> {
  const base = baseOf(ref)
  const derived = makeRef(ref.name, 'bearer')
  bases.set(derived, base)
  return derived
}

/**
 * Resolve a reference to its value (`Bearer <value>` for {@link bearer}).
 * Call only where the value must leave the process (sandbox env, git auth header).
 * @throws UnknownSecretError when `ref` was not made by {@link createSecrets}.
 */
export function resolveSecret(ref: SecretRef): string {
  const value = registry.get(baseOf(ref)) as string
  return ref.format === 'bearer' ? `Bearer ${value}` : value
}

function baseOf(ref: SecretRef): object {
  if (!isSecretRef(ref)) {
    // Never echo `ref` itself: a plain string passed here is usually the secret value.
    const name = typeof (ref as { name?: unknown } | null)?.name === 'string' ? (ref as { name: string }).name : '(not a secret reference)'
    throw new UnknownSecretError(name, 'Expected a secret reference made by createSecrets(); got a plain value. Wrap it: createSecrets({ NAME: value }).NAME.')
  }
  const base = bases.get(ref) ?? ref
  if (!registry.has(base)) throw new UnknownSecretError(ref.name)
  return base
}

/**
 * True when two references name the same secret value holder (a `bearer()`
 * reference and its raw reference count as the same secret).
 * @throws UnknownSecretError when either was not made by {@link createSecrets}.
 */
export function sameSecret(a: SecretRef, b: SecretRef): boolean {
  return baseOf(a) === baseOf(b)
}
