/**
 * Capability-flag conformance: `capabilities()` is a pure, complete set of
 * booleans whose dependencies hold, and every flag that is `false` keeps its
 * promise: the gated method throws `UnsupportedCapabilityError` naming the
 * flag (optional members may be absent instead; the `require-capability`
 * helpers turn absence into the same error, and that is what is called).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect } from 'vitest'
import { shellQuote } from '../../shell/quote.js'
import type { SandboxCapabilities } from '../../contracts/capabilities.js'
import { NO_CAPABILITIES } from '../../contracts/capabilities.js'
import type { SandboxCapabilityName } from '../../contracts/errors.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { SandboxProvider } from '../../contracts/provider.js'
import { forkSandbox, restoreSandboxSnapshot, snapshotSandbox } from '../../contracts/require-capability.js'
import { expectUnsupportedCapability, violation } from './assert.js'
import { conformanceCase, skippedCase, useSharedSandbox } from './context.js'
import type { ProviderConformanceContext } from './context.js'

/** `capabilities()` returns every flag as a boolean, returns the same flags on every call, and dependent flags imply their base. */
export function checkCapabilityFlags(provider: SandboxProvider): Promise<void> {
  const first = provider.capabilities()
  for (const flag of Object.keys(NO_CAPABILITIES) as (keyof SandboxCapabilities)[]) {
    if (flag === 'isolated' && first[flag] === undefined) continue // optional: absent means false
    expect(typeof first[flag], `capabilities().${flag} is a boolean`).toBe('boolean')
  }
  expect({ ...provider.capabilities() }, 'capabilities() is pure: a second call returns the same flags').toEqual({ ...first })
  if (first.writableStdin) expect(first.backgroundProcesses, 'writableStdin is about spawned processes, so it implies backgroundProcesses').toBe(true)
  if (first.killableProcesses) expect(first.backgroundProcesses, 'killableProcesses is about spawned processes, so it implies backgroundProcesses').toBe(true)
  return Promise.resolve()
}

/** One probe per flag: the gated calls, named for failure messages. */
type UnsupportedProbe = (handle: SandboxHandle, provider: SandboxProvider) => [method: string, call: () => unknown][]

/** The calls made for a `false` flag (as thunks, so a synchronous throw is caught too): each must throw `UnsupportedCapabilityError` for that flag. */
const UNSUPPORTED_PROBES: Readonly<Partial<Record<keyof SandboxCapabilities, UnsupportedProbe>>> = {
  fs: (h) => [
    ['fs.read', () => h.fs.read('conformance.txt')],
    ['fs.write', () => h.fs.write('conformance.txt', 'x')],
    ['fs.list', () => h.fs.list()],
  ],
  exec: (h) => [['process.exec', () => h.process.exec('true')]],
  env: (h) => [['env.set', () => h.env.set({ CONFORMANCE: '1' })]],
  ports: (h) => [['ports.connect', () => h.ports.connect(3000)]],
  backgroundProcesses: (h) => [['process.spawn', () => h.process.spawn('true')]],
  snapshots: (h, p) => [
    ['handle.snapshot (via snapshotSandbox)', () => snapshotSandbox(h, 'conformance')],
    ['provider.restoreSnapshot (via restoreSandboxSnapshot)', () => restoreSandboxSnapshot(p, { snapshotId: 'conformance-none' })],
  ],
  fork: (h) => [['handle.fork (via forkSandbox)', () => forkSandbox(h)]],
}

/**
 * For a flag that is `false`, every gated method throws
 * `UnsupportedCapabilityError` with `capability` set to that flag.
 */
export async function checkUnsupportedCapability(flag: keyof SandboxCapabilities, handle: SandboxHandle, provider: SandboxProvider): Promise<void> {
  const probe = UNSUPPORTED_PROBES[flag]
  if (!probe) return
  for (const [method, call] of probe(handle, provider)) {
    await expectUnsupportedCapability(call, flag as SandboxCapabilityName, `capabilities().${flag} is false, so ${method} throws UnsupportedCapabilityError("${flag}")`)
  }
}

/** With backgroundProcesses but not writableStdin: `stdin.write` throws `UnsupportedCapabilityError("writableStdin")`. */
export async function checkStdinUnsupported(handle: SandboxHandle): Promise<void> {
  const child = await handle.process.spawn('true')
  try {
    await expectUnsupportedCapability(() => child.stdin.write('x'), 'writableStdin', 'capabilities().writableStdin is false, so stdin.write throws UnsupportedCapabilityError("writableStdin")')
  } finally {
    await child.wait()
  }
}

/** With backgroundProcesses but not killableProcesses: `kill()` throws `UnsupportedCapabilityError("killableProcesses")`. */
export async function checkKillUnsupported(handle: SandboxHandle): Promise<void> {
  const child = await handle.process.spawn('true')
  await child.wait()
  await expectUnsupportedCapability(() => child.kill(), 'killableProcesses', 'capabilities().killableProcesses is false, so kill() throws UnsupportedCapabilityError("killableProcesses")')
}

/** With durableFilesystem: files written through one provider instance are there after `resume` through a fresh instance. */
export async function checkDurableFilesystem(ctx: ProviderConformanceContext): Promise<void> {
  const handle = await ctx.create()
  await handle.fs.write('durable.txt', 'still here')
  const second = await ctx.reopen!()
  const resumed = await second.resume({ id: handle.id })
  if (!resumed) return violation('durableFilesystem: a fresh provider instance resumes the sandbox by id', 'resume returned null')
  ctx.track(resumed)
  expect(await resumed.fs.read('durable.txt'), 'durableFilesystem: files survive into a fresh provider instance').toBe('still here')
}

/** With isolated: a file made on the host (in its temp folder) does not exist at the same path inside the sandbox. */
export async function checkIsolated(handle: SandboxHandle): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-isolated-'))
  const marker = join(dir, 'host-only.txt')
  writeFileSync(marker, 'on the host')
  try {
    const seen = await handle.process.exec(`test -e ${shellQuote(marker)} && echo visible || echo absent`)
    expect(seen.stdout.trim(), 'isolated: a file on the host is not visible inside the sandbox').toBe('absent')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * With networkPolicy: `create({ network: 'blocked' })` makes a sandbox whose
 * only network interface is the loopback (read from /proc/net/dev, so it
 * needs exec and Linux). Source: spec 000 "Policy" (network block at create).
 */
export async function checkNetworkBlocked(provider: SandboxProvider): Promise<void> {
  const handle = await provider.create({ network: 'blocked' })
  try {
    const listed = await handle.process.exec(`awk -F: 'NR > 2 { gsub(/ /, "", $1); if ($1 != "lo") print $1 }' /proc/net/dev`)
    expect(listed.exitCode, `networkPolicy: reading /proc/net/dev inside the sandbox (${listed.stderr.trim()})`).toBe(0)
    expect(listed.stdout.trim().split('\n').filter((name) => name !== ''), "networkPolicy: create({ network: 'blocked' }) leaves the sandbox only the loopback interface").toEqual([])
  } finally {
    await handle.destroy()
  }
}

/** Register the capabilities group. */
export function registerCapabilityConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  const caps = ctx.capabilities
  describe('capabilities', () => {
    conformanceCase(ctx, 'capabilities() is a complete, stable set of booleans', () => checkCapabilityFlags(getContext().provider))
    const off = (Object.keys(UNSUPPORTED_PROBES) as (keyof SandboxCapabilities)[]).filter((flag) => !caps[flag])
    const needsSandbox = off.length > 0 || (caps.backgroundProcesses && (!caps.writableStdin || !caps.killableProcesses)) || (caps.isolated === true && caps.exec)
    const sandbox = needsSandbox ? useSharedSandbox(getContext) : () => undefined as never
    for (const flag of off) {
      conformanceCase(ctx, `${flag} is false: its methods throw UnsupportedCapabilityError`, () => checkUnsupportedCapability(flag, sandbox(), getContext().provider))
    }
    if (caps.backgroundProcesses && !caps.writableStdin) conformanceCase(ctx, 'writableStdin is false: stdin.write throws UnsupportedCapabilityError', () => checkStdinUnsupported(sandbox()))
    if (caps.backgroundProcesses && !caps.killableProcesses) conformanceCase(ctx, 'killableProcesses is false: kill() throws UnsupportedCapabilityError', () => checkKillUnsupported(sandbox()))
    if (caps.isolated && caps.exec) conformanceCase(ctx, 'isolated: a file on the host is not visible inside the sandbox', () => checkIsolated(sandbox()))
    if (caps.networkPolicy && caps.exec) conformanceCase(ctx, "networkPolicy: create({ network: 'blocked' }) has no interface but the loopback", () => checkNetworkBlocked(getContext().provider))
    else if (caps.networkPolicy) skippedCase('networkPolicy', 'advertised, but exec is off, so the suite cannot look at the interfaces')
    if (caps.durableFilesystem && caps.fs && ctx.reopen) conformanceCase(ctx, 'durableFilesystem: a second provider instance resumes the sandbox with its files', () => checkDurableFilesystem(getContext()))
    else if (caps.durableFilesystem) skippedCase('durableFilesystem', 'advertised, but fs is off or no provider factory was given to check it across instances')
  })
}
