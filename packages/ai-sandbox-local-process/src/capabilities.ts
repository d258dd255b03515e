/**
 * The capability flags of the local-process provider. Every `true` names the
 * test that proves it (in `tests/`, besides the shared conformance suite in
 * `tests/conformance.test.ts`); every `false` gated method throws
 * `UnsupportedCapabilityError` (provider.test.ts "advertises its capabilities ...").
 */
import type { SandboxCapabilities } from '@tanstack/ai-sandbox'

/** What `localProcessSandbox()` supports. Frozen; `provider.capabilities()` returns it. */
export const LOCAL_PROCESS_CAPABILITIES: SandboxCapabilities = Object.freeze({
  // Confined host fs under <root>/<id>/workspace: fs.test.ts "writes, reads, lists, renames and removes ...".
  fs: true,
  // `/bin/sh -c` with the workspace as cwd: process.test.ts "returns exit codes, stdout and stderr ...".
  exec: true,
  // env.set merges into sandbox.json: provider.test.ts "resumes from a new provider instance, with files and env".
  env: true,
  // Processes share the host network: provider.test.ts "ports.connect returns a loopback URL the host can reach".
  ports: true,
  // spawn returns at once, output is buffered: process.test.ts "buffers output for a consumer that starts late".
  backgroundProcesses: true,
  // stdin is a real pipe to the child: process.test.ts "writes to stdin and ends it".
  writableStdin: true,
  // Each job is its own process group, TERM then KILL: process.test.ts "kill() stops the whole process tree".
  killableProcesses: true,
  // No snapshot mechanism for a bare host directory: handle.snapshot and provider.restoreSnapshot throw UnsupportedCapabilityError.
  snapshots: false,
  // Processes use the host network; the provider cannot take network access away.
  networkPolicy: false,
  // The workspace is a host directory that outlives this process: provider.test.ts "resumes from a new provider instance ...".
  durableFilesystem: true,
  // No copy of a running sandbox: handle.fork throws UnsupportedCapabilityError.
  fork: false,
  // Plain host processes in a host directory: nothing is isolated, so adapters never claim it is.
  isolated: false,
})
