/**
 * Lifecycle conformance: `provider.create`, `resume` and `destroy` (also of
 * processes that left their tree, see `cancel.ts`), and the
 * identity fields of a handle. Checks that need to look at files use `fs` or,
 * without it, `exec`. Each check creates its own sandboxes through the
 * context, so they are destroyed after the test whatever happens.
 */
import { randomUUID } from 'node:crypto'
import { describe, expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import { describeError, violation } from './assert.js'
import { conformanceCase, skippedCase } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { q, sh, workspaceIO } from './io.js'
import type { WorkspaceIO } from './io.js'
import { checkDestroyStopsEscapedChildren, hasSetsid } from './cancel.js'

/**
 * The rule of `SandboxProcess.spawn` the kit relies on: its promise resolves
 * once the process runs (a later `exec` sees it), not when it is queued.
 */
export const SPAWN_RUNNING_RULE = 'process.spawn() resolves once the process runs (not when it is queued), so an exec right after it sees the process'

/** `create()` returns a handle with a non-empty `id`, `provider === provider.name` and an absolute `workspaceRoot`. */
export async function checkCreateIdentity(ctx: ProviderConformanceContext): Promise<void> {
  const { provider } = ctx
  expect(typeof provider.name === 'string' && provider.name.length > 0, 'provider.name is a non-empty string').toBe(true)
  const handle = await ctx.create({ key: 'conformance:identity', labels: { suite: 'conformance' } })
  expect(typeof handle.id === 'string' && handle.id.length > 0, `handle.id is a non-empty string (got ${JSON.stringify(handle.id)})`).toBe(true)
  expect(handle.provider, 'handle.provider equals provider.name').toBe(provider.name)
  expect(handle.capabilities, 'handle.capabilities equals provider.capabilities()').toEqual(provider.capabilities())
  expect(handle.workspaceRoot, 'handle.workspaceRoot is an absolute POSIX path').toMatch(/^\//)
  const other = await ctx.create()
  expect(other.id, 'two create() calls return different ids').not.toBe(handle.id)
}

/** A new sandbox's workspace is empty. */
export async function checkWorkspaceStartsEmpty(ctx: ProviderConformanceContext): Promise<void> {
  const handle = await ctx.create()
  const names = await ioOf(ctx, handle).listRoot()
  expect(names, 'provider.create() makes an empty workspace directory').toEqual([])
}

/** Two sandboxes do not share a workspace. */
export async function checkSandboxesAreIsolated(ctx: ProviderConformanceContext): Promise<void> {
  const a = await ctx.create()
  const b = await ctx.create()
  await ioOf(ctx, a).write('only-in-a.txt', 'a')
  expect(await ioOf(ctx, b).read('only-in-a.txt'), 'each sandbox has its own workspace: a file written in one is absent from another').toBeNull()
}

/** `resume({ id })` of a live sandbox returns a handle on the same sandbox that sees its files. */
export async function checkResumeLiveSandbox(ctx: ProviderConformanceContext): Promise<void> {
  const handle = await ctx.create()
  await ioOf(ctx, handle).write('resume/marker.txt', 'still here')
  const resumed = await ctx.provider.resume({ id: handle.id })
  if (resumed === null) violation('provider.resume({ id }) of a live sandbox returns a handle', `resume({ id: ${JSON.stringify(handle.id)} }) returned null`)
  ctx.track(resumed)
  expect(resumed.id, 'a resumed handle keeps the same id').toBe(handle.id)
  expect(resumed.provider, 'a resumed handle keeps provider === provider.name').toBe(ctx.provider.name)
  expect(await ioOf(ctx, resumed).read('resume/marker.txt'), 'a resumed handle sees the files of the live sandbox').toBe('still here')
}

/** `destroy` is idempotent through the handle and the provider, and a destroyed sandbox no longer resumes. */
export async function checkDestroyIsIdempotent(ctx: ProviderConformanceContext): Promise<void> {
  const handle = await ctx.create()
  await attempt('handle.destroy() resolves', () => handle.destroy())
  await attempt('handle.destroy() is idempotent: a second call resolves', () => handle.destroy())
  await attempt('provider.destroy({ id }) of an already destroyed sandbox resolves (idempotent)', () => ctx.provider.destroy({ id: handle.id }))
  const resumed = await ctx.provider.resume({ id: handle.id })
  if (resumed !== null) ctx.track(resumed)
  expect(resumed, 'provider.resume({ id }) of a destroyed sandbox returns null').toBeNull()
}

/** `provider.destroy({ id })` of a live sandbox deletes it. */
export async function checkProviderDestroy(ctx: ProviderConformanceContext): Promise<void> {
  const handle = await ctx.create()
  await attempt('provider.destroy({ id }) of a live sandbox resolves', () => ctx.provider.destroy({ id: handle.id }))
  const resumed = await ctx.provider.resume({ id: handle.id })
  if (resumed !== null) ctx.track(resumed)
  expect(resumed, 'after provider.destroy({ id }), resume({ id }) returns null').toBeNull()
}

/** `resume` of an id the provider never issued returns `null` (it does not throw). */
export async function checkResumeUnknownId(ctx: ProviderConformanceContext): Promise<void> {
  let resumed: SandboxHandle | null
  try {
    resumed = await ctx.provider.resume({ id: 'conformance-unknown-0000000000' })
  } catch (error) {
    return violation('provider.resume({ id }) of an unknown id returns null', `it threw ${describeError(error)}`)
  }
  if (resumed !== null) ctx.track(resumed)
  expect(resumed, 'provider.resume({ id }) of an unknown id returns null').toBeNull()
}

/**
 * With exec: `destroy()` stops every process of the sandbox. A background
 * loop tagged with a unique marker is started (through `spawn` when
 * advertised), seen in `/proc` from inside the sandbox, then must be gone
 * from a second sandbox's view once `destroy()` resolved. Without `/proc`
 * (non-Linux) the check cannot look and passes vacuously.
 */
export async function checkDestroyStopsProcesses(ctx: ProviderConformanceContext): Promise<void> {
  const handle = await ctx.create()
  const marker = `conformance-leak-${randomUUID().slice(0, 8)}`
  const loop = `sh -c 'while :; do sleep 1; done' ${marker}`
  if (ctx.capabilities.backgroundProcesses) {
    const job = await handle.process.spawn(loop)
    void job.wait().catch(() => undefined)
  } else {
    await sh(handle, `${loop} >/dev/null 2>&1 &`)
  }
  const before = await sh(handle, findProcessesScript(marker))
  if (before.stdout.trim() === 'no-proc') return
  if (before.stdout.trim() === '') {
    violation(
      ctx.capabilities.backgroundProcesses ? SPAWN_RUNNING_RULE : 'process.exec of `loop &` leaves the background loop running, visible to a later exec',
      `right after it, no process with ${marker} in its command line was found in /proc inside the sandbox (the kit's check of destroy() needs it running first)`,
    )
  }
  await handle.destroy()
  const observer = await ctx.create()
  const after = await sh(observer, findProcessesScript(marker))
  const left = after.stdout.trim().split('\n').filter(Boolean)
  // The kit's own cleanup, before the failure is reported: a failing case leaks nothing.
  if (left.length > 0) await observer.process.exec(`kill -KILL ${left.map(q).join(' ')} 2>/dev/null; true`).catch(() => undefined)
  expect(after.stdout.trim(), 'handle.destroy() stops every process of the sandbox: these pids of the destroyed sandbox still run').toBe('')
}

/**
 * With a `listResources` hook: `handle.destroy()` and `provider.destroy({ id })`
 * each leave none of the sandbox's own resources (a container, a folder, a
 * process). Lists before two creates, after them (something new must show,
 * else the hook cannot see a sandbox and the check would prove nothing), and
 * after destroying one through its handle and one through the provider.
 *
 * @param ctx - The run's context; does nothing useful without `ctx.listResources`.
 * @throws AssertionError naming the rule and the resources left, or the hook that lists nothing new after create().
 */
export async function checkDestroyLeavesNoResources(ctx: ProviderConformanceContext): Promise<void> {
  const list = ctx.listResources
  if (!list) return violation('conformance setup: checkDestroyLeavesNoResources needs the listResources hook', 'the context was made without listResources')
  const before = new Set(await list())
  const viaHandle = await ctx.create()
  const viaProvider = await ctx.create()
  const made = (await list()).filter((resource) => !before.has(resource))
  if (made.length === 0) {
    violation('conformance setup: listResources() lists the resources of a new sandbox', 'after two create() calls it listed nothing that was not there before, so it cannot show what destroy() leaves')
  }
  await attempt('handle.destroy() resolves', () => viaHandle.destroy())
  await attempt('provider.destroy({ id }) of a live sandbox resolves', () => ctx.provider.destroy({ id: viaProvider.id }))
  const left = (await list()).filter((resource) => !before.has(resource))
  expect(left, "handle.destroy() and provider.destroy({ id }) remove everything the provider made for the sandbox: listResources() still lists these").toEqual([])
}

/** Register the lifecycle group. */
export function registerLifecycleConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  describe('lifecycle', () => {
    const run = (title: string, check: (c: ProviderConformanceContext) => Promise<void>) => conformanceCase(ctx, title, () => check(getContext()))
    run('create returns a handle with id, provider name and workspaceRoot', checkCreateIdentity)
    run('destroy is idempotent and a destroyed sandbox does not resume', checkDestroyIsIdempotent)
    run('provider.destroy removes a live sandbox', checkProviderDestroy)
    run('resume of an unknown id returns null', checkResumeUnknownId)
    if (ctx.listResources) run("destroy leaves none of the provider's resources (listResources)", checkDestroyLeavesNoResources)
    else skippedCase('lifecycle: destroy leaves no resources', 'no listResources hook was given, so the kit cannot see what of the provider is left')
    if (!ctx.capabilities.fs && !ctx.capabilities.exec) {
      skippedCase('lifecycle: file checks', 'the provider has neither fs nor exec, so the workspace cannot be inspected')
      return
    }
    run('the workspace starts empty', checkWorkspaceStartsEmpty)
    run('two sandboxes have separate workspaces', checkSandboxesAreIsolated)
    run('resume of a live sandbox sees the same files', checkResumeLiveSandbox)
    if (ctx.capabilities.exec) {
      run('destroy stops every process of the sandbox', checkDestroyStopsProcesses)
      conformanceCase(ctx, 'destroy stops every process of ( setsid sleep & ) ; sleep, whose setsid child\'s parent already exited, also after cd /', async ({ skip }) => {
        const probe = await getContext().create()
        if (!(await hasSetsid(probe))) skip('setsid not found in the sandbox')
        await checkDestroyStopsEscapedChildren(getContext())
      })
    } else skippedCase('lifecycle: destroy stops processes', 'the process probe uses exec, and capabilities().exec is false')
  })
}

/** Print the pids whose command line carries `marker` (zombies have none), or `no-proc`. */
function findProcessesScript(marker: string): string {
  // The bracket keeps this script's own command line from matching the pattern.
  const pattern = `${marker.slice(0, -1)}[${marker.slice(-1)}]`
  return [
    '[ -r /proc/self/cmdline ] || { echo no-proc; exit 0; }',
    'for f in /proc/[0-9]*/cmdline; do',
    `  if tr '\\000' ' ' < "$f" 2>/dev/null | grep -q ${q(pattern)}; then p=\${f#/proc/}; echo "\${p%/cmdline}"; fi`,
    'done',
  ].join('\n')
}

function ioOf(ctx: ProviderConformanceContext, handle: SandboxHandle): WorkspaceIO {
  const io = workspaceIO(handle, ctx.capabilities)
  if (!io) return violation('lifecycle file checks need fs or exec', 'the provider advertises neither')
  return io
}

async function attempt(rule: string, run: () => Promise<void>): Promise<void> {
  try {
    await run()
  } catch (error) {
    violation(rule, `it threw ${describeError(error)}`)
  }
}
