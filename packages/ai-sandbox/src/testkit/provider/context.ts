/**
 * The shared state of one provider conformance run: the provider, its
 * capability flags, which optional tools the sandbox image has, and the
 * tracker that destroys every sandbox the kit creates. Invariant: every
 * sandbox made through the context is destroyed after its test (or after its
 * group for shared ones), and a failing `destroy` fails the run instead of
 * leaking silently.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TestContext } from 'vitest'
import type { SandboxCapabilities } from '../../contracts/capabilities.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { SandboxCreateInput, SandboxProvider } from '../../contracts/provider.js'
import { describeError, reportForeignErrors } from './assert.js'

/** The describe groups of the provider kit; keys of {@link ProviderConformanceSkip}. */
export type ProviderConformanceGroup =
  | 'capabilities'
  | 'lifecycle'
  | 'fs'
  | 'exec'
  | 'env'
  | 'spawn'
  | 'ports'
  | 'git'
  | 'snapshots'
  | 'fork'

/** Groups to skip, each with the reason to print (`{ ports: 'no bridge network on CI runners' }`). */
export type ProviderConformanceSkip = Partial<Record<ProviderConformanceGroup, string>>

/** Optional tools the suite probes for inside the sandbox with `command -v`. */
export interface SandboxTools {
  /** `node` is on PATH (the ports check runs a server with it). */
  readonly node: boolean
  /** `git` is on PATH (the git checks need it). */
  readonly git: boolean
  /** Why a tool is missing, by tool name, e.g. `{ node: 'node not found in the sandbox' }`. */
  readonly missing: Readonly<Record<string, string>>
}

/** What every registered group reads: the provider under test and the sandbox tracker. */
export interface ProviderConformanceContext {
  readonly provider: SandboxProvider
  readonly capabilities: SandboxCapabilities
  readonly tools: SandboxTools
  readonly skip: ProviderConformanceSkip
  /** Per-test and per-hook timeout, ms. */
  readonly timeoutMs: number
  /** The sandbox port the `ports` group asks for and serves on, when the run names one (else `connect(3000)`, and a server on a port the OS picks). */
  readonly connectPort?: number
  /** The minimum number of raced calls per operation of the `fs` group's symlink-swap races (default 30). */
  readonly fsRaceCalls: number
  /** How long each of those races keeps making calls after its minimum, ms, when the run names it (else the kit's 2 000). */
  readonly fsRaceBudgetMs?: number
  /** Create a sandbox that is destroyed after the current test. */
  create: (input?: SandboxCreateInput) => Promise<SandboxHandle>
  /** Register a sandbox the check got another way (resume, fork, restore) for destruction after the current test. */
  track: (handle: SandboxHandle) => SandboxHandle
  /** Destroy every tracked sandbox; resolves after all were tried and fails naming each one whose destroy threw. */
  destroyTracked: () => Promise<void>
  /** Make a second, independent provider instance (as a new process would), when the runner was given a factory. */
  reopen?: () => Promise<SandboxProvider>
  /** What of the provider's own resources exist now (see {@link ProviderConformanceContextOptions.listResources}), when given. */
  listResources?: () => Promise<readonly string[]>
}

/** Options of {@link createProviderConformanceContext}. */
export interface ProviderConformanceContextOptions {
  /** Factory of fresh provider instances, used to check `durableFilesystem` across instances. */
  reopen?: () => SandboxProvider | Promise<SandboxProvider>
  skip?: ProviderConformanceSkip
  /** Per-test timeout in ms. Default 60 000. */
  timeoutMs?: number
  /** The sandbox port the `ports` group asks for and serves on. Default: `connect(3000)`, and a server on a port the OS picks. */
  connectPort?: number
  /** The minimum number of raced calls per operation of the `fs` group's symlink-swap races. Default 30. */
  fsRaceCalls?: number
  /** How long each of those races keeps making calls after its minimum, ms. Default 2 000. */
  fsRaceBudgetMs?: number
  /** Probe the sandbox for `node` and `git` (needs capability `exec`). Default `true`. */
  probeTools?: boolean
  /**
   * Optional: list what of the provider's own resources exist right now, one
   * string per resource (a container id, a sandbox folder, a process), in
   * any order. The kit cannot see a container or a folder a `destroy()`
   * left behind; with this hook it asserts that a destroyed sandbox leaves
   * none, and that nothing new is left after the suite. Scope it to this run
   * (a label, a root folder), so sandboxes of other suites running at the
   * same time are not listed. Default: none (those checks are skipped, named).
   */
  listResources?: () => readonly string[] | Promise<readonly string[]>
}

/**
 * Build the context of a conformance run: read the capability flags once and,
 * when the provider has `exec`, probe a throwaway sandbox for optional tools.
 *
 * @param provider - The provider under test.
 * @param options - `skip` reasons, `timeoutMs` (default 60 000), `probeTools` (default true).
 * @returns A context whose `create` and `track` feed one tracker.
 * @example
 * ```ts
 * const ctx = await createProviderConformanceContext(myProvider())
 * try { await checkFsTextRoundTrip(await ctx.create()) } finally { await ctx.destroyTracked() }
 * ```
 */
export async function createProviderConformanceContext(
  provider: SandboxProvider,
  options: ProviderConformanceContextOptions = {},
): Promise<ProviderConformanceContext> {
  const { skip = {}, timeoutMs = 60_000, connectPort, probeTools = true, reopen, listResources, fsRaceCalls = 30, fsRaceBudgetMs } = options
  const capabilities = provider.capabilities()
  const tools = probeTools && capabilities.exec ? await probe(provider) : NOT_PROBED
  const tracked = new Set<SandboxHandle>()
  const context: ProviderConformanceContext = {
    ...(reopen ? { reopen: async () => reopen() } : {}),
    ...(listResources ? { listResources: async () => [...(await listResources())] } : {}),
    provider,
    capabilities,
    skip,
    timeoutMs,
    fsRaceCalls,
    ...(fsRaceBudgetMs === undefined ? {} : { fsRaceBudgetMs }),
    ...(connectPort === undefined ? {} : { connectPort }),
    tools,
    track: (handle) => {
      tracked.add(handle)
      return handle
    },
    create: async (input) => context.track(await provider.create(input)),
    destroyTracked: async () => {
      const handles = [...tracked]
      tracked.clear()
      await destroyAll(handles)
    },
  }
  return context
}

/**
 * Create one sandbox for a whole describe group (in `beforeAll`) and destroy
 * it in `afterAll`, even when tests failed. Call inside a `describe`.
 * @returns A getter that fails with a clear message when creation failed.
 */
export function useSharedSandbox(getContext: () => ProviderConformanceContext, input?: SandboxCreateInput): () => SandboxHandle {
  let handle: SandboxHandle | undefined
  let failure: unknown
  const { timeoutMs } = getContext()
  beforeAll(async () => {
    try {
      handle = await getContext().provider.create(input)
    } catch (error) {
      failure = error
    }
  }, timeoutMs)
  afterAll(async () => {
    if (handle) await destroyAll([handle])
  }, timeoutMs)
  return () => {
    if (!handle) {
      expect.unreachable(`provider.create() must return a usable sandbox for this group; it threw ${describeError(failure)}`)
    }
    return handle as SandboxHandle
  }
}

/**
 * Register one case with the run's timeout. An error that is not a
 * `SandboxError` (nor the runner's own assertion or skip) is reported as a
 * breach of `SANDBOX_ERROR_RULE` naming the case, instead of passing through raw.
 *
 * @param context - The run's context (for `timeoutMs`).
 * @param title - The case title.
 * @param run - The case; gets vitest's test context (for `skip`).
 */
export function conformanceCase(context: ProviderConformanceContext, title: string, run: (test: TestContext) => Promise<void> | void): void {
  it(
    title,
    (test) => reportForeignErrors(title, () => run(test)),
    context.timeoutMs,
  )
}

/** Report a case or group that cannot run here, naming why (`ports: skipped — node not found in the sandbox`). */
export function skippedCase(subject: string, reason: string): void {
  it.skip(`${subject}: skipped — ${reason}`, () => undefined)
}

async function destroyAll(handles: readonly SandboxHandle[]): Promise<void> {
  const failures: string[] = []
  for (const handle of handles) {
    try {
      await handle.destroy()
    } catch (error) {
      failures.push(`sandbox ${handle.id}: ${describeError(error)}`)
    }
  }
  expect(failures, 'handle.destroy() must resolve (it is idempotent); these sandboxes may be leaked').toEqual([])
}

const NOT_PROBED: SandboxTools = { node: false, git: false, missing: { node: 'node was not probed (needs exec)', git: 'git was not probed (needs exec)' } }

/** Look for the optional tools in a throwaway sandbox, which is always destroyed. */
async function probe(provider: SandboxProvider): Promise<SandboxTools> {
  const missing: Record<string, string> = {}
  const found = { node: false, git: false }
  let handle: SandboxHandle | undefined
  try {
    handle = await provider.create({ labels: { purpose: 'conformance-tool-probe' } })
    for (const tool of ['node', 'git'] as const) {
      const result = await handle.process.exec(`command -v ${tool}`)
      found[tool] = result.exitCode === 0
      if (!found[tool]) missing[tool] = `${tool} not found in the sandbox`
    }
  } catch (error) {
    for (const tool of ['node', 'git']) missing[tool] = `probing for ${tool} failed (${describeError(error)})`
  } finally {
    if (handle) await handle.destroy()
  }
  return { ...found, missing }
}
