/**
 * The capability flags of the Cloudflare provider. Every `true` names the
 * check that proves it (tests/conformance.test.ts runs the shared provider
 * kit inside workerd against a real container); every `false` says why.
 * Only `ports` depends on the configuration: without `previewHostname`
 * there is no URL to give.
 */
import type { SandboxCapabilities } from '@tanstack/ai-sandbox'

/** What `cloudflareSandbox({ previewHostname })` supports. Frozen. */
export const CLOUDFLARE_CAPABILITIES: SandboxCapabilities = Object.freeze({
  // Core's confined fs script through the job wrapper, bytes through writeFile/readFile base64: conformance "fs" group.
  fs: true,
  // The job script in a pooled session, output base64-framed through files: conformance "exec" group.
  exec: true,
  // env.d files inside the container, sourced by every job: conformance "env" group.
  env: true,
  // exposePort + proxyToSandbox in the app's fetch: conformance "the host reaches a server inside the sandbox".
  ports: true,
  // startProcess of the job wrapper, output framed on its log stream: conformance "spawn" group.
  backgroundProcesses: true,
  // @cloudflare/sandbox 0.12.x has no stdin route at all: conformance "writableStdin is false".
  writableStdin: false,
  // TERM then KILL to the job's group and marked processes from another session (never the SDK's signal-less kill): conformance "kill() stops the job".
  killableProcesses: true,
  // No snapshot API in the SDK's http transport.
  snapshots: false,
  // Containers always get internet from Cloudflare (enableInternet: true); nothing blocks it per sandbox.
  networkPolicy: false,
  // An idle stop or restart gives an empty container (docs/design/cloudflare.md section 5).
  durableFilesystem: false,
  // No copy of a running container.
  fork: false,
  // Its own container: conformance "isolated".
  isolated: true,
})

/** The flags for a provider without `previewHostname`: no preview URLs, so no ports. */
export function cloudflareCapabilities(hasPreviewHostname: boolean): SandboxCapabilities {
  return hasPreviewHostname ? CLOUDFLARE_CAPABILITIES : NO_PORTS_CAPABILITIES
}

const NO_PORTS_CAPABILITIES: SandboxCapabilities = Object.freeze({ ...CLOUDFLARE_CAPABILITIES, ports: false })
