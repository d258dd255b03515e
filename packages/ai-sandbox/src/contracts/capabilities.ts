/**
 * The capability flags a provider advertises. Core and harness adapters pick
 * strategies from these flags, never from a provider's name, so each flag must
 * be the truth: the provider conformance suite checks every one of them.
 */

/**
 * What a sandbox provider can do. `true` is a promise the conformance suite
 * (`runSandboxProviderConformance`) holds the provider to; `false` means the
 * matching optional method throws {@link UnsupportedCapabilityError}.
 * Source: spec 000, "Providers".
 */
export interface SandboxCapabilities {
  /** `handle.fs` reads and writes files in the workspace. */
  readonly fs: boolean
  /** `handle.process.exec` runs a shell command to completion. */
  readonly exec: boolean
  /** `handle.env.set` changes the environment of later processes. */
  readonly env: boolean
  /** `handle.ports.connect(port)` returns a URL the host can reach. */
  readonly ports: boolean
  /** `handle.process.spawn` returns before the process exits and streams its output. */
  readonly backgroundProcesses: boolean
  /** A spawned process's `stdin.write`/`end` reach the process. When false, feed input through a file and a shell redirect. */
  readonly writableStdin: boolean
  /** A spawned process's `kill()` stops it and every process it started. */
  readonly killableProcesses: boolean
  /** `handle.snapshot()` and `provider.restoreSnapshot()` work. */
  readonly snapshots: boolean
  /** The provider can create a sandbox without network access. */
  readonly networkPolicy: boolean
  /** Files survive a stop and a later `provider.resume()`. */
  readonly durableFilesystem: boolean
  /** `handle.fork()` makes an independent copy of a running sandbox. */
  readonly fork: boolean
  /**
   * Processes in the sandbox cannot see or change the host: their own
   * filesystem root and process namespace (a container or a VM). Absent means
   * `false`. Harness adapters set CLI flags that claim isolation (Claude
   * Code's `IS_SANDBOX=1`) only when this is `true`. Conformance: "isolated:
   * a file on the host is not visible inside the sandbox".
   */
  readonly isolated?: boolean
}

/** A capabilities object with every flag off, to spread and override. */
export const NO_CAPABILITIES: SandboxCapabilities = Object.freeze({
  fs: false,
  exec: false,
  env: false,
  ports: false,
  backgroundProcesses: false,
  writableStdin: false,
  killableProcesses: false,
  snapshots: false,
  networkPolicy: false,
  durableFilesystem: false,
  fork: false,
  isolated: false,
})
