/**
 * The capability flags of the Docker provider. Every `true` names the test
 * that proves it (in `tests/`, besides the shared conformance suite in
 * `tests/conformance.test.ts`, which runs on the Debian and BusyBox images).
 * Only `ports` depends on the configuration: a `network: 'none'` sandbox has
 * no address the host could reach.
 */
import type { SandboxCapabilities } from '@tanstack/ai-sandbox'

/** What `dockerSandbox()` supports on a network the host can reach. Frozen. */
export const DOCKER_CAPABILITIES: SandboxCapabilities = Object.freeze({
  // Confined shell scripts run as the sandbox user: conformance "fs" group; provider.test.ts "paths with spaces, quotes and newlines".
  fs: true,
  // Docker exec of /bin/sh -c: conformance "exec" group; provider.test.ts "100 MB of output".
  exec: true,
  // env.set is kept in the container (/.tanstack-sandbox/env): provider.test.ts "env.set survives a fresh provider instance".
  env: true,
  // The container's bridge address (or a published port): conformance "the host reaches a server inside the sandbox".
  ports: true,
  // spawn returns once the job is a process-group leader: conformance "returns before the process exits".
  backgroundProcesses: true,
  // stdin is the hijacked exec connection, half-closed by end(): conformance "stdin.write and end reach the process".
  writableStdin: true,
  // TERM then KILL to the job's process group from a second exec: provider.test.ts "kill leaves no process of the job (ps inside the container)".
  killableProcesses: true,
  // docker commit: provider.test.ts "snapshot, restore and fork"; conformance "snapshots".
  snapshots: true,
  // network: 'none' creates containers without a network: provider.test.ts "network none has no interface but lo".
  networkPolicy: true,
  // The container filesystem survives stop/start and a new provider instance: provider.test.ts "resume starts a stopped container".
  durableFilesystem: true,
  // Commit plus a new container: conformance "fork gives an independent copy".
  fork: true,
  // Its own root filesystem and pid namespace: conformance "isolated: a file on the host is not visible inside the sandbox";
  // and no network path to other sandboxes on the default network: hardening.test.ts "sandbox B cannot connect to a service in sandbox A".
  isolated: true,
})

/** The flags for a provider using `network` (`ports` is off without a network). */
export function dockerCapabilities(network: string): SandboxCapabilities {
  if (network !== 'none') return DOCKER_CAPABILITIES
  return NO_NETWORK_CAPABILITIES
}

const NO_NETWORK_CAPABILITIES: SandboxCapabilities = Object.freeze({ ...DOCKER_CAPABILITIES, ports: false })
