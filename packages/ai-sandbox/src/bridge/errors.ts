/**
 * Errors of the tool bridge. A tool that throws is NOT one of these: its
 * failure goes back to the agent as a tool error. These are for calls the
 * bridge refuses (unknown tool, bad arguments), tools it cannot serve, and a
 * bridge that cannot be set up or reached. Messages name the tool and the fix.
 */
import { SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'

/** Why the tool bridge failed. */
export type ToolBridgeErrorReason =
  /** The agent called a tool the bridge does not expose. */
  | 'unknown-tool'
  /** The arguments do not match the tool's input schema. */
  | 'invalid-arguments'
  /** A tool's input schema cannot be turned into a validator, or its name is unusable. */
  | 'invalid-tool'
  /** The sandbox cannot reach the host (no `handle.hostAccess`, or it says unreachable). */
  | 'unreachable'
  /** The host transport could not listen. */
  | 'listen-failed'
  /** A remote executor got no usable answer from the host. */
  | 'remote-failed'
  /** A tool run through a remote executor threw on the host (its message is the tool's). */
  | 'tool-failed'

/**
 * Thrown (or returned as a JSON-RPC error) when the bridge refuses a call or
 * cannot be set up. Branch on `reason`.
 *
 * @example
 * ```ts
 * try { await stub.execute?.({}) } catch (error) { if (ToolBridgeError.isInstance(error)) console.log(error.reason) }
 * ```
 */
export class ToolBridgeError extends SandboxError<ToolBridgeErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/ToolBridgeError'
  /** The tool the error is about, when there is one. */
  readonly toolName: string | undefined

  constructor(reason: ToolBridgeErrorReason, message: string, options: SandboxErrorOptions & { toolName?: string } = {}) {
    super(reason, message, options)
    this.toolName = options.toolName
  }
}
