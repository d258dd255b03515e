/**
 * `process.exec` conformance: output capture (5 MB without truncation), exit
 * codes as results, `cwd`, environment, stdin, the timeout option, and the
 * end of a command whose background child still holds its output. Abort and
 * timeout stopping a setsid child are checked in `cancel.ts`.
 * Design notes: docs/design/testkit.md
 */
import { describe, expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { ExecResult } from '../../contracts/process.js'
import { expectSandboxError, within } from './assert.js'
import { conformanceCase, useSharedSandbox } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { aliveScript, q, scratch, sh } from './io.js'
import { checkExecAbortStopsEscapedChild, checkExecTimeoutStopsEscapedChild, hasSetsid } from './cancel.js'

/** stdout and stderr are captured separately and decoded as UTF-8. */
export async function checkExecOutput(handle: SandboxHandle): Promise<void> {
  const out = await handle.process.exec(`printf 'hello ünïcode ✓\\n'`)
  expect(out, 'exec captures stdout (UTF-8 decoded), leaves stderr empty, exit 0').toEqual({ exitCode: 0, stdout: 'hello ünïcode ✓\n', stderr: '' })
  const err = await handle.process.exec(`printf 'oops' >&2`)
  expect({ stdout: err.stdout, stderr: err.stderr }, 'exec captures stderr separately from stdout').toEqual({ stdout: '', stderr: 'oops' })
}

/** A non-zero exit is a result, not an error; death by signal N is 128+N. */
export async function checkExecExitCodes(handle: SandboxHandle): Promise<void> {
  expect((await handle.process.exec('exit 3')).exitCode, 'exec resolves with the exit code of a failing command (exit 3 -> 3)').toBe(3)
  expect((await handle.process.exec('true')).exitCode, 'exec resolves with exit code 0 on success').toBe(0)
  expect((await handle.process.exec('kill -TERM $$')).exitCode, 'a command killed by SIGTERM reports exit code 128+15 = 143').toBe(143)
}

/** The default cwd is the workspace root; `/workspace/sub` and `sub` both map to the workspace's `sub`. */
export async function checkExecCwd(handle: SandboxHandle): Promise<void> {
  const sub = scratch('exec-cwd')
  await sh(handle, `mkdir -p ${q(`${sub}/inner`)}`)
  const physical = async (dir: string) => (await sh(handle, `cd ${q(dir)} && pwd -P`, { cwd: handle.workspaceRoot })).stdout
  const root = await physical(handle.workspaceRoot)
  expect((await sh(handle, 'pwd -P')).stdout, 'exec without cwd runs in handle.workspaceRoot').toBe(root)
  expect((await sh(handle, 'pwd -P', { cwd: '/workspace' })).stdout, 'cwd "/workspace" maps to handle.workspaceRoot').toBe(root)
  const inner = await physical(`${handle.workspaceRoot}/${sub}/inner`)
  expect((await sh(handle, 'pwd -P', { cwd: `/workspace/${sub}/inner` })).stdout, 'cwd "/workspace/<sub>" maps to <workspaceRoot>/<sub>').toBe(inner)
  expect((await sh(handle, 'pwd -P', { cwd: `${sub}/inner` })).stdout, 'a relative cwd is resolved against the workspace root').toBe(inner)
}

/** `env` is passed to that call only. */
export async function checkExecEnv(handle: SandboxHandle): Promise<void> {
  const seen = await handle.process.exec('printf %s "$CONFORMANCE_VAR"', { env: { CONFORMANCE_VAR: 'a value with spaces & "quotes"' } })
  expect(seen.stdout, 'exec({ env }) sets the variables for that call, values unchanged').toBe('a value with spaces & "quotes"')
  const later = await handle.process.exec('printf %s "${CONFORMANCE_VAR-unset}"')
  expect(later.stdout, 'per-call env does not leak into later calls').toBe('unset')
  const path = await handle.process.exec('command -v sh >/dev/null && printf ok', { env: { CONFORMANCE_OTHER: '1' } })
  expect(path.stdout, 'per-call env is merged over the sandbox environment (PATH still works)').toBe('ok')
}

/** `stdin` text reaches the command; without it, stdin is empty (a reader does not hang). */
export async function checkExecStdin(handle: SandboxHandle): Promise<void> {
  const text = 'line one\nünïcode line ✓\n'
  expect((await handle.process.exec('cat', { stdin: text })).stdout, 'exec({ stdin }) feeds the text to the command and closes stdin').toBe(text)
  const empty = await handle.process.exec('cat')
  expect(empty, 'exec without stdin gives the command an empty stdin (cat exits at once with no output)').toEqual({ exitCode: 0, stdout: '', stderr: '' })
}

/** 5 MB of stdout (and 1 MB of stderr at the same time) arrive complete. */
export async function checkExecLargeOutput(handle: SandboxHandle): Promise<void> {
  const line = '0123456789abcde\n'
  const result = await handle.process.exec(`yes 0123456789abcde | head -c 5242880; yes 0123456789abcde | head -c 1048576 >&2`)
  expect(result.exitCode, 'large-output command exits 0').toBe(0)
  expect(result.stdout.length, 'exec returns all 5 MB of stdout (no truncation)').toBe(5 * 1024 * 1024)
  expect(result.stderr.length, 'exec returns all 1 MB of stderr (no truncation)').toBe(1024 * 1024)
  expect(result.stdout === line.repeat(5 * 1024 * 1024 / line.length), 'the 5 MB of stdout arrive intact and in order').toBe(true)
}

/** `timeoutMs` kills a command that runs too long and rejects with reason `timeout`. */
export async function checkExecTimeout(handle: SandboxHandle): Promise<void> {
  await expectSandboxError(() => handle.process.exec('sleep 30', { timeoutMs: 200 }), 'exec({ timeoutMs }) rejects with a SandboxError reason "timeout" when the command runs longer', 'timeout')
}

/**
 * A command whose background child (`sleep 814 &`, as a setup step starting a
 * server would) still holds stdout and stderr resolves once its shell exits,
 * with everything the shell wrote and its exit code. The child is left running
 * (it belongs to the sandbox until destroy); the check then kills it.
 */
export async function checkExecEndsWhenShellExits(handle: SandboxHandle): Promise<void> {
  const dir = scratch('exec-bg-output')
  await sh(handle, `mkdir -p ${q(dir)}`)
  const stopChild = () => handle.process.exec('[ -s pid ] && kill -KILL "$(cat pid)" 2>/dev/null; true', { cwd: dir })
  let result: ExecResult
  try {
    result = await within(
      handle.process.exec('echo before; sleep 814 & echo $! > pid; echo after; echo err >&2; exit 3', { cwd: dir }),
      'process.exec resolves once the shell exits, even while a background child it started still holds stdout and stderr',
    )
  } catch (error) {
    await stopChild().catch(() => undefined) // the check already failed; stop the child so it leaks nothing
    throw error
  }
  const pid = (await sh(handle, 'cat pid', { cwd: dir })).stdout.trim()
  const alive = (await sh(handle, aliveScript([pid]))).stdout.trim()
  await stopChild()
  expect(result, 'exec of a command whose background child holds its output resolves with everything the shell wrote, and its exit code').toEqual({ exitCode: 3, stdout: 'before\nafter\n', stderr: 'err\n' })
  expect(alive, 'exec leaves the background child running after the shell exits (destroy() stops it)').toBe(pid)
}

/** `create({ env })` reaches every process in the sandbox. */
export async function checkCreateEnv(ctx: ProviderConformanceContext): Promise<void> {
  const handle = await ctx.create({ env: { CONFORMANCE_CREATE_ENV: 'from create' } })
  const seen = await handle.process.exec('printf %s "$CONFORMANCE_CREATE_ENV"')
  expect(seen.stdout, 'provider.create({ env }) sets the environment of every process in the sandbox').toBe('from create')
}

/** Register the exec group. */
export function registerExecConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  describe('exec', () => {
    const sandbox = useSharedSandbox(getContext)
    const run = (title: string, check: (h: SandboxHandle) => Promise<void>) => conformanceCase(ctx, title, () => check(sandbox()))
    run('captures stdout and stderr', checkExecOutput)
    run('reports exit codes 0, 3 and 143 (SIGTERM)', checkExecExitCodes)
    run('cwd defaults to the workspace root and /workspace/sub maps', checkExecCwd)
    run('per-call env applies to that call only', checkExecEnv)
    run('stdin is fed and closed; empty by default', checkExecStdin)
    run('5 MB of output is not truncated', checkExecLargeOutput)
    run('timeoutMs rejects with reason timeout', checkExecTimeout)
    run('resolves when the shell exits though a background child holds its output', checkExecEndsWhenShellExits)
    for (const [title, check] of [
      ['abort stops every process of ( setsid sleep & ) ; sleep, also after cd /', checkExecAbortStopsEscapedChild],
      ['timeoutMs stops every process of ( setsid sleep & ) ; sleep, also after cd /', checkExecTimeoutStopsEscapedChild],
    ] as const) {
      conformanceCase(ctx, title, async ({ skip }) => {
        const handle = sandbox()
        if (!(await hasSetsid(handle))) skip('setsid not found in the sandbox')
        await check(handle)
      })
    }
    conformanceCase(ctx, 'create({ env }) reaches every process', () => checkCreateEnv(getContext()))
  })
}
