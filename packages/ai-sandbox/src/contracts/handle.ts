/**
 * `SandboxHandle`: one live sandbox as providers hand it to core and harness
 * adapters. Identity fields are readonly; optional members name the capability
 * flag that gates them. Source: spec 000, "Providers".
 */
import type { SandboxCapabilities } from './capabilities.js'
import type { SandboxFs } from './fs.js'
import type { SandboxGit } from './git.js'
import type { SandboxProcess } from './process.js'

/** A URL the host can use to reach a port inside the sandbox. */
export interface SandboxPortConnection {
  /** Host-reachable URL, e.g. `http://127.0.0.1:3000`. Its port may differ from {@link port} when the provider maps ports. */
  readonly url: string
  /** The hostname of `url`. */
  readonly hostname: string
  /** The port inside the sandbox that was asked for. */
  readonly port: number
}

/** Reaches ports inside the sandbox (capability `ports`). */
export interface SandboxPorts {
  /** Return a host-reachable URL for `port` (1-65535). Does not check that anything listens. */
  connect: (port: number) => Promise<SandboxPortConnection>
}

/** The sandbox-wide environment (capability `env`). */
export interface SandboxEnv {
  /** Merge variables into the environment of every later `exec`/`spawn`. */
  set: (vars: Record<string, string>) => Promise<void>
}

/**
 * How processes inside the sandbox reach a server on the host, from
 * {@link SandboxHandle.hostAccess}. The tool bridge uses it to decide where
 * to listen and which URL to give the agent.
 */
export interface SandboxHostAccess {
  /** Host name or address a process inside uses for the host, e.g. `127.0.0.1` or `host.docker.internal`. */
  readonly hostname: string
  /**
   * The local address a host server must listen on to be reachable from
   * inside, e.g. `127.0.0.1`, or a Docker bridge's gateway such as `172.17.0.1`
   * (never all interfaces unless nothing narrower works).
   */
  readonly listenAddress: string
}

/** A provider-native snapshot made by {@link SandboxHandle.snapshot}. */
export interface SandboxSnapshotRef {
  /** Pass to `provider.restoreSnapshot({ snapshotId })`. */
  readonly snapshotId: string
  /** Epoch ms. */
  readonly createdAt: number
  readonly label?: string
}

/** The virtual workspace root every provider accepts in paths and `cwd`. */
export const VIRTUAL_WORKSPACE_ROOT = '/workspace'

/** One live sandbox. */
export interface SandboxHandle {
  /** Provider-assigned id; `provider.resume({ id })` finds the sandbox again. */
  readonly id: string
  /** Name of the provider that made it. */
  readonly provider: string
  /** The provider's capability flags, so code holding only a handle can pick a strategy. */
  readonly capabilities: SandboxCapabilities
  /**
   * The workspace directory as processes inside the sandbox see it (for
   * local-process a host directory, for Docker `/workspace`). The virtual
   * `/workspace` maps here.
   */
  readonly workspaceRoot: string
  readonly fs: SandboxFs
  readonly git: SandboxGit
  readonly process: SandboxProcess
  readonly ports: SandboxPorts
  readonly env: SandboxEnv
  /**
   * Take a provider-native snapshot (capability `snapshots`). May be present yet throw
   * `UnsupportedCapabilityError` when the flag is false: decide by the flag, not by presence.
   */
  snapshot?: (label?: string) => Promise<SandboxSnapshotRef>
  /** Start an independent copy of this sandbox (capability `fork`; present-but-throwing when false, as for `snapshot`). */
  fork?: () => Promise<SandboxHandle>
  /**
   * How processes inside reach a server on the host (a hint, not a flag:
   * absent when the provider cannot say). Resolves `undefined` when the
   * sandbox cannot reach the host at all (e.g. Docker `network: 'none'`).
   * The host tool bridge needs it; without it, inject a `ToolBridgeProvisioner`.
   */
  hostAccess?: () => Promise<SandboxHostAccess | undefined>
  /**
   * The folder durable-run journals and file baselines go to in this sandbox
   * when `durability.journalDir` is not given (absolute, as processes inside
   * see it). Absent: `DEFAULT_JOURNAL_DIR` (`/tmp/tanstack-runs`), which is
   * private to a container. A provider whose sandboxes share the host's temp
   * folder (local-process) sets one only the app's user can reach, since
   * whoever owns the journal folder owns every run journaled in it.
   */
  readonly journalDir?: string
  /**
   * A secret the provider keeps outside the sandbox (never in its files,
   * environment or processes) and gives every host that reaches this sandbox
   * the same: at least 32 characters. With it, a run's journal nonce is
   * HMAC-SHA256 of the run id and a salt drawn per launch (`journalNonce`):
   * the host hands it to the journal's shell at launch, and every reader, the
   * takeover's and the reaper's included, checks the exit sentinel against
   * the hash it computes itself instead of the journal's own header, so an
   * agent that rewrites its journal cannot end its run. Absent (local-process, whose agent runs as
   * the app's own user): the journal's header is trusted (see docs/journal.md).
   * Docker keeps it in a container label.
   */
  readonly journalSecret?: string
  /** Stop every process and delete the sandbox. Idempotent. */
  destroy: () => Promise<void>
}
