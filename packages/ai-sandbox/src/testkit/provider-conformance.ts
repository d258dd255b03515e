/**
 * `runSandboxProviderConformance`: the provider contract as a vitest suite.
 * It reads the capability flags once, probes the image for optional tools,
 * then registers one describe group per concern (the checks live in
 * `provider/`). Every sandbox the suite creates is destroyed after its test
 * or group, even when a check fails. Design notes: docs/design/testkit.md
 */
import { afterAll, afterEach, describe, expect } from 'vitest'
import { SandboxConfigError } from '../contracts/errors.js'
import type { SandboxProvider } from '../contracts/provider.js'
import { registerCapabilityConformance } from './provider/capabilities.js'
import { createProviderConformanceContext, skippedCase } from './provider/context.js'
import type { ProviderConformanceContext, ProviderConformanceGroup, ProviderConformanceSkip } from './provider/context.js'
import { registerEnvConformance } from './provider/env.js'
import { registerExecConformance } from './provider/exec.js'
import { registerFsConformance } from './provider/fs.js'
import { FS_RACE_MAX_MIN_CALLS, FS_RACE_MIN_CALLS } from './provider/fs-races.js'
import { registerGitConformance } from './provider/git.js'
import { registerLifecycleConformance } from './provider/lifecycle.js'
import { registerPortsConformance } from './provider/ports.js'
import { registerForkConformance, registerSnapshotConformance } from './provider/snapshots.js'
import { registerSpawnConformance } from './provider/spawn.js'

const LEAK_RULE = 'destroy() removes everything the provider made for the sandbox'

/** Options of {@link runSandboxProviderConformance}. */
export interface SandboxProviderConformanceOptions {
  /** Build the provider under test. Called once, while vitest collects the suite. */
  makeProvider: () => SandboxProvider | Promise<SandboxProvider>
  /**
   * Groups to skip, each with the reason printed in the skipped test's title,
   * e.g. `{ ports: 'CI runners have no bridge network' }`. Default: none.
   */
  skip?: ProviderConformanceSkip
  /** Timeout of each test and hook, in ms. Default 60 000 (container providers need it). */
  timeoutMs?: number
  /**
   * A sandbox port, 1-65535, the `ports` group asks `connect()` for and
   * serves its live check on. Default: `connect(3000)`, and the live server
   * on a port the OS picks. A provider that reserves 3000 or exposes only
   * declared ports names one it allows (Cloudflare: its control server
   * listens on 3000, and local workerd reaches only ports the image
   * `EXPOSE`s: `connectPort: 8080`).
   */
  connectPort?: number
  /**
   * Optional: what of the provider's own resources exist right now, one
   * string each (container ids, sandbox folders, processes), scoped to this
   * run (a label, a root folder). With it the kit checks that `destroy()`
   * (handle and provider) leaves nothing of the sandbox behind
   * (`lifecycle > destroy leaves none of the provider's resources`) and, after
   * the suite, that nothing listed is left that was not there before it.
   * Without it those checks are skipped, named. Default: none.
   */
  listResources?: () => readonly string[] | Promise<readonly string[]>
  /**
   * The minimum number of raced calls per operation in the `fs` group's
   * symlink-swap races (`races and special files`), an integer 1-1 000.
   * Default 30, each race going on while its calls so far took under 2 s
   * (see `raceFsOperation`). A lower count suits a provider whose `fs`
   * confinement is code another suite already races at the full count (this
   * repository's Daytona and Cloudflare suites share core's `FS_SCRIPT` with
   * the Docker ones), run often on a busy machine; the case titles give the
   * count.
   */
  fsRaceCalls?: number
  /**
   * How long each of those races keeps making calls after its minimum while
   * the calls so far took less than this, ms, an integer 0-600 000. Default
   * 2 000 (a fast `fs` gets hundreds of tries); 0 makes exactly
   * `fsRaceCalls` calls per operation.
   */
  fsRaceBudgetMs?: number
}

/**
 * Register the provider conformance suite in the current vitest file. Call it
 * at the top level of a test file; it adds one `describe` named after the provider.
 *
 * Groups: `capabilities` (flags are booleans; false flags throw
 * `UnsupportedCapabilityError`), `lifecycle` (create, resume, destroy), `fs`
 * (files, folders, path confinement, symlink escapes), `exec`, `env`, `spawn`
 * (streams, stdin, killing a whole job), `ports` (a host fetch into the
 * sandbox, needs `node` in the image), `git` (needs `git` in the image),
 * `snapshots` and `fork` when advertised.
 *
 * @param name - Shown in the suite title, e.g. `docker`.
 * @param options - `makeProvider`, optional `skip` reasons per group, `timeoutMs` (default 60 000), `connectPort` (default: connect(3000), the live server on a free port), optional `listResources` (the leak checks), `fsRaceCalls` (default 30: the minimum raced calls per operation), `fsRaceBudgetMs` (default 2 000: how long a race goes on after it).
 * @throws SandboxConfigError when `connectPort` is not an integer 1-65535, `fsRaceCalls` not an integer 1-1 000 or `fsRaceBudgetMs` not an integer 0-600 000; whatever `makeProvider` throws, as a collection error of the file.
 * @example
 * ```ts
 * import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
 * import { dockerSandbox } from '@acme/ai-sandbox-docker'
 *
 * runSandboxProviderConformance('docker', {
 *   makeProvider: () => dockerSandbox({ image: 'sandbox-base:latest' }),
 *   skip: { ports: 'the CI daemon runs with --bridge=none' },
 * })
 * ```
 */
export function runSandboxProviderConformance(name: string, options: SandboxProviderConformanceOptions): void {
  const { makeProvider, skip = {}, timeoutMs = 60_000, connectPort, listResources, fsRaceCalls, fsRaceBudgetMs } = options
  if (fsRaceCalls !== undefined && (!Number.isInteger(fsRaceCalls) || fsRaceCalls < 1 || fsRaceCalls > FS_RACE_MAX_MIN_CALLS)) {
    throw new SandboxConfigError(
      'runSandboxProviderConformance.fsRaceCalls',
      `runSandboxProviderConformance: fsRaceCalls must be an integer 1-${FS_RACE_MAX_MIN_CALLS} (got ${String(fsRaceCalls)}); it is the minimum number of raced calls per fs operation (default ${FS_RACE_MIN_CALLS})`,
    )
  }
  if (fsRaceBudgetMs !== undefined && (!Number.isInteger(fsRaceBudgetMs) || fsRaceBudgetMs < 0 || fsRaceBudgetMs > 600_000)) {
    throw new SandboxConfigError(
      'runSandboxProviderConformance.fsRaceBudgetMs',
      `runSandboxProviderConformance: fsRaceBudgetMs must be an integer 0-600000 (got ${String(fsRaceBudgetMs)}); it is how long, ms, each fs race keeps making calls after its minimum (default 2000)`,
    )
  }
  if (connectPort !== undefined && (!Number.isInteger(connectPort) || connectPort < 1 || connectPort > 65535)) {
    throw new SandboxConfigError('runSandboxProviderConformance.connectPort', `runSandboxProviderConformance: connectPort must be an integer 1-65535 (got ${String(connectPort)}); name a port the provider lets connect() expose, e.g. 8080`)
  }
  describe(`sandbox provider conformance: ${name}`, async () => {
    const provider = await makeProvider()
    // Before anything is created (the tool probe included), so whatever the suite leaves shows up against it.
    const baseline = listResources ? new Set(await listResources()) : undefined
    const context = await createProviderConformanceContext(provider, { skip, timeoutMs, ...(connectPort === undefined ? {} : { connectPort }), reopen: makeProvider, ...(listResources ? { listResources } : {}), ...(fsRaceCalls === undefined ? {} : { fsRaceCalls }), ...(fsRaceBudgetMs === undefined ? {} : { fsRaceBudgetMs }) })
    const getContext = () => context
    afterEach(() => context.destroyTracked(), timeoutMs)
    afterAll(async () => {
      await context.destroyTracked()
      if (!listResources || !baseline) return
      // Nested groups destroyed their shared sandboxes in their own afterAll, which ran before this one.
      const left = (await listResources()).filter((resource) => !baseline.has(resource))
      expect(left, `every sandbox the kit created was destroyed, so listResources() lists nothing that was not there before the suite; these are left (${LEAK_RULE})`).toEqual([])
    }, timeoutMs)

    const caps = context.capabilities
    const group = (id: ProviderConformanceGroup, enabled: boolean, register: (get: () => ProviderConformanceContext) => void) => {
      if (!enabled) return
      const reason = skip[id]
      if (reason) skippedCase(id, reason)
      else register(getContext)
    }
    group('capabilities', true, registerCapabilityConformance)
    group('lifecycle', true, registerLifecycleConformance)
    group('fs', caps.fs, registerFsConformance)
    group('exec', caps.exec, registerExecConformance)
    group('env', caps.env, registerEnvConformance)
    group('spawn', caps.backgroundProcesses, registerSpawnConformance)
    group('ports', caps.ports, registerPortsConformance)
    group('git', true, registerGitConformance)
    group('snapshots', caps.snapshots, registerSnapshotConformance)
    group('fork', caps.fork, registerForkConformance)
  })
}
