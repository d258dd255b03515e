/**
 * The error base of the whole sandbox family. Every error this package and its
 * providers throw extends {@link SandboxError}, carries a `reason` users can
 * branch on and the underlying `cause`, and can be recognised across two loaded
 * copies of the package with `<Class>.isInstance`.
 * Invariant: messages never contain a resolved secret value, and an instance
 * carries the `Symbol.for` brand of its own class and of every class above it.
 */

/** The brand key of the base class (unchanged since the first release, so older copies still match). */
const BASE_BRAND = '@tanstack/ai-sandbox/error'

/**
 * The `Symbol.for` brand of one error class: its own static `brand`, or, for a
 * subclass that declares none, one derived from its class name.
 */
function brandOf(ctor: unknown): symbol {
  const own = typeof ctor === 'function' ? (Object.getOwnPropertyDescriptor(ctor, 'brand')?.value as unknown) : undefined
  if (typeof own === 'string') return Symbol.for(own)
  return Symbol.for(typeof ctor === 'function' && ctor.name ? `${BASE_BRAND}/${ctor.name}` : BASE_BRAND)
}

/** Options shared by every sandbox error constructor. */
export interface SandboxErrorOptions {
  /** The lower-level error that caused this one. */
  cause?: unknown
}

/**
 * Base class of every error in `@tanstack/ai-sandbox` and its providers.
 *
 * @example
 * ```ts
 * try { await handle.fs.read('../etc/passwd') }
 * catch (error) { if (SandboxError.isInstance(error)) console.log(error.reason) }
 * ```
 */
export class SandboxError<TReason extends string = string> extends Error {
  /**
   * The `Symbol.for` key `isInstance` checks. Every subclass declares its own
   * (`static override readonly brand = '<package>/error/<ClassName>'`); one that
   * does not is branded by its class name, which a minifier may shorten.
   */
  static readonly brand: string = BASE_BRAND

  /** A short machine-readable cause users can branch on. */
  readonly reason: TReason

  constructor(reason: TReason, message: string, options: SandboxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.reason = reason
    // One brand per class of the chain, so `Parent.isInstance(child)` holds and `Child.isInstance(parent)` does not.
    for (let ctor: unknown = new.target; typeof ctor === 'function' && ctor !== Error; ctor = Object.getPrototypeOf(ctor)) {
      Object.defineProperty(this, brandOf(ctor), { value: true })
    }
  }

  /**
   * True when `value` is an instance of the class this is called on (or of a
   * subclass), even one thrown by a second copy of the package (dev servers
   * and bundlers sometimes load two), where `instanceof` says false.
   * `SandboxPathError.isInstance(aConfigError)` is false; `SandboxError.isInstance`
   * is true for every sandbox error. Prefer it to `instanceof`.
   *
   * @example
   * ```ts
   * if (SandboxPathError.isInstance(error) && error.reason === 'not-found') return null
   * ```
   */
  static isInstance<T>(this: abstract new (...args: never[]) => T, value: unknown): value is T {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brandOf(this)] === true
  }
}

/** The capability flag names of {@link SandboxCapabilities}, for error reporting. */
export type SandboxCapabilityName =
  | 'fs'
  | 'exec'
  | 'env'
  | 'ports'
  | 'backgroundProcesses'
  | 'writableStdin'
  | 'killableProcesses'
  | 'snapshots'
  | 'networkPolicy'
  | 'durableFilesystem'
  | 'fork'

/**
 * Thrown when code calls an optional sandbox method the provider does not
 * support (its capability flag is `false`), e.g. `snapshot()` on the
 * local-process provider. Branch on `capability` to pick a fallback.
 * With `advertised: true` the flag is `true` but the provider lacks the
 * method (a provider bug); the message says so instead of "is false".
 */
export class UnsupportedCapabilityError extends SandboxError<'unsupported-capability'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/UnsupportedCapabilityError'
  /** The capability flag that is off. */
  readonly capability: SandboxCapabilityName
  /** The provider that lacks it. */
  readonly provider: string
  /** The method that was called, e.g. `snapshot`. */
  readonly method: string

  /**
   * @param input.advertised - True when the flag is `true` yet the method is missing (default false).
   * @param input.hint - Replaces the generic fix, e.g. which provider supports it.
   */
  constructor(input: { provider: string; capability: SandboxCapabilityName; method: string; advertised?: boolean; hint?: string }) {
    super(
      'unsupported-capability',
      input.advertised
        ? `The "${input.provider}" sandbox provider advertises capability "${input.capability}" (the flag is true) but does not implement ${input.method}(). ` +
            `Fix the provider: implement ${input.method}() or set capabilities().${input.capability} to false.`
        : `The "${input.provider}" sandbox provider does not support ${input.method}() (capability "${input.capability}" is false). ` +
            (input.hint ?? `Check provider.capabilities().${input.capability} before calling it, or use a provider that supports it.`),
    )
    this.capability = input.capability
    this.provider = input.provider
    this.method = input.method
  }
}

/**
 * Why a sandbox path was refused: `escape` (lexically outside the workspace),
 * `symlink-escape` (a symlink leads outside, or the path was swapped for one
 * while in use), `not-found`, `invalid` (malformed, a symlink loop, the root
 * itself), `special-file` (a FIFO, socket or device where a regular file is
 * expected), `hard-link` (a read of a regular file that has other hard links,
 * which may live outside the workspace).
 */
export type SandboxPathErrorReason = 'escape' | 'symlink-escape' | 'not-found' | 'invalid' | 'special-file' | 'hard-link'

/**
 * Thrown when a filesystem path is refused or missing: it leaves the
 * workspace (`..`, an absolute path outside it, a symlink pointing out), is
 * malformed (empty, NUL byte), does not exist, or names something the host
 * will not read or write (a FIFO or device, a hard-linked file's content).
 */
export class SandboxPathError extends SandboxError<SandboxPathErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/SandboxPathError'
  /** The path exactly as the caller gave it. */
  readonly path: string

  constructor(reason: SandboxPathErrorReason, path: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.path = path
  }
}

/**
 * Why a sandbox operation failed at the provider. The last three come from
 * remote providers (Daytona): `auth-failed` (the service refused the
 * credentials), `rate-limited` (a quota or rate limit, HTTP 429) and
 * `unreachable` (the service did not answer).
 */
export type SandboxOperationErrorReason =
  | 'not-found'
  | 'destroyed'
  | 'create-failed'
  | 'exec-failed'
  | 'spawn-failed'
  | 'fs-failed'
  | 'git-failed'
  | 'timeout'
  | 'aborted'
  | 'auth-failed'
  | 'rate-limited'
  | 'unreachable'

/**
 * Thrown when a provider operation fails for a reason other than bad input:
 * the sandbox is gone, the engine refused, a git command exited non-zero.
 */
export class SandboxOperationError extends SandboxError<SandboxOperationErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/SandboxOperationError'
  /** The provider that failed. */
  readonly provider: string

  constructor(reason: SandboxOperationErrorReason, provider: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.provider = provider
  }
}

/**
 * Thrown when a public option object is invalid. `field` is the dotted path of
 * the offending option (e.g. `workspace.source.url`); the message says how to
 * fix it.
 */
export class SandboxConfigError extends SandboxError<'invalid-option'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/SandboxConfigError'
  /** Dotted path of the invalid option. */
  readonly field: string

  constructor(field: string, message: string, options?: SandboxErrorOptions) {
    super('invalid-option', message, options)
    this.field = field
  }
}

/**
 * Which bound was hit: `exec-output-too-large` (an `exec` printed more than
 * `maxExecOutputBytes`), `file-too-large` (a file read is larger than its
 * size bound, e.g. `fs.readBytes`), `line-too-long` (a line of NDJSON output
 * grew past `maxLineBytes` before its newline).
 */
export type SandboxLimitErrorReason = 'exec-output-too-large' | 'file-too-large' | 'line-too-long'

/** What a {@link SandboxLimitError} reports besides its reason. */
export interface SandboxLimitErrorInput extends SandboxErrorOptions {
  /** The bound that was exceeded, in bytes. */
  limitBytes: number
  /** The option that sets the bound, as a user writes it, e.g. `localProcessSandbox({ maxExecOutputBytes })`. */
  option: string
  /** The provider that enforced it, when one did (e.g. `local-process`, `docker`). */
  provider?: string
  /** The sandbox path concerned, for `file-too-large`. */
  path?: string
  /** The full message: what was refused, the limit, and how to fix it. */
  message: string
}

/**
 * Thrown when an operation would hold more than a documented bound in host
 * memory, so a runaway command or a huge file cannot exhaust the host. The
 * work is stopped (an `exec` is killed with its process group) before the
 * error is thrown. Branch on `reason`; `limitBytes` and `option` say what to
 * raise. Every provider throws this same class with the same reasons.
 *
 * @example
 * ```ts
 * try { await handle.process.exec('cat huge.log') }
 * catch (error) {
 *   if (SandboxLimitError.isInstance(error) && error.reason === 'exec-output-too-large') useSpawnInstead()
 * }
 * ```
 */
export class SandboxLimitError<TReason extends SandboxLimitErrorReason = SandboxLimitErrorReason> extends SandboxError<TReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/SandboxLimitError'
  /** The bound that was exceeded, in bytes. */
  readonly limitBytes: number
  /** The option that sets the bound, e.g. `dockerSandbox({ maxExecOutputBytes })`. */
  readonly option: string
  /** The provider that enforced the bound, if any. */
  readonly provider: string | undefined
  /** The sandbox path concerned (`file-too-large`), if any. */
  readonly path: string | undefined

  constructor(reason: TReason, input: SandboxLimitErrorInput) {
    super(reason, input.message, input)
    this.limitBytes = input.limitBytes
    this.option = input.option
    this.provider = input.provider
    this.path = input.path
  }
}

/**
 * Thrown when a secret reference cannot be resolved: it was not made by
 * `createSecrets`, or it is not part of the workspace's `secrets`.
 */
export class UnknownSecretError extends SandboxError<'unknown-secret'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/UnknownSecretError'
  /** The secret name the reference carries. */
  readonly secretName: string

  constructor(secretName: string, message?: string) {
    super(
      'unknown-secret',
      message ??
        `Unknown secret "${secretName}". Create it with createSecrets({ ${secretName}: value }) and pass that object as defineWorkspace({ secrets }).`,
    )
    this.secretName = secretName
  }
}
