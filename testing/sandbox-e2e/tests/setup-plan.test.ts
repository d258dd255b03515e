/**
 * Setup plans over one persistent shell, on the real local-process provider:
 * cwd and exported env carry over between serial steps, parallel steps really
 * run at the same time and start from the shell state, failures are typed,
 * secret values never reach the saved shell state, and that state is
 * owner-only and removed after success, failure and abort.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createSecrets, defineSandbox, defineWorkspace, SandboxConfigError, SetupStepFailedError, WorkspaceBootstrapError, type SandboxHandle, type SetupRecorder } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot, waitFor } from './helpers/run-chat.js'

const tmp = makeRoot('setup-plan')
const provider = localProcessSandbox({ root: tmp.root })
const handles: SandboxHandle[] = []
/** Host files where a step records its state directory (local-process steps run on the host). */
const markers = mkdtempSync(join(tmpdir(), 'tsbx-e2e-setup-markers-'))

afterAll(async () => {
  for (const handle of handles) await handle.destroy()
  rmSync(markers, { recursive: true, force: true })
  const left = tmp.entries()
  tmp.cleanup()
  expect(left).toEqual([])
})

/** Shell that sets `d` to this plan's state directory, found by a unique exported value. */
function findState(unique: string): string {
  return `f=$(grep -l ${unique} /tmp/tanstack-setup-*/env) && d=$(dirname "$f")`
}

async function ready(id: string, setup: Parameters<typeof defineWorkspace>[0]): Promise<SandboxHandle> {
  const sandbox = defineSandbox({ id, provider, workspace: defineWorkspace(setup) })
  const handle = await sandbox.ensure({ threadId: `t-${id}`, runId: 'r1' })
  handles.push(handle)
  return handle
}

describe('setup plans', () => {
  it('carries cwd and exported env from one serial step to the next', async () => {
    const handle = await ready('plan-serial', {
      setup: ({ serial }) => {
        serial('mkdir -p pkg/sub && cd pkg')
        serial('export STAGE=two; LOCAL_ONLY=x')
        serial('cd sub && echo "$STAGE:${LOCAL_ONLY:-unset}:$(basename "$PWD")" > result.txt')
      },
    })
    expect(readFileSync(join(handle.workspaceRoot, 'pkg/sub/result.txt'), 'utf8').trim()).toBe('two:unset:sub')
  })

  it('treats an array as serial steps over the same shell', async () => {
    const handle = await ready('plan-array', { setup: ['mkdir -p a', 'cd a', 'export X=1', 'echo "$X" > here.txt'] })
    expect(readFileSync(join(handle.workspaceRoot, 'a/here.txt'), 'utf8').trim()).toBe('1')
  })

  it('runs a parallel group concurrently, from the shell state, without carrying its changes over', async () => {
    // Each command waits (bounded) for the other's marker: both finish only if they run at the same time.
    const wait = (mine: string, other: string) => `touch ${mine}; i=0; while [ ! -e ${other} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -e ${other} ] && echo "$GROUP" > ${mine}.ok; cd /; export LEAK=1`
    const handle = await ready('plan-parallel', {
      setup: ({ serial, parallel }) => {
        serial('mkdir -p work && cd work && export GROUP=g1')
        parallel([wait('left', 'right'), wait('right', 'left')])
        serial('echo "$(basename "$PWD"):${LEAK:-none}" > after.txt')
      },
    })
    const work = join(handle.workspaceRoot, 'work')
    expect(readFileSync(join(work, 'left.ok'), 'utf8').trim()).toBe('g1')
    expect(readFileSync(join(work, 'right.ok'), 'utf8').trim()).toBe('g1')
    expect(readFileSync(join(work, 'after.txt'), 'utf8').trim()).toBe('work:none')
  })

  it('stops at a failing parallel command with its step number and destroys the sandbox', async () => {
    const before = tmp.entries().length
    const sandbox = defineSandbox({
      id: 'plan-fail',
      provider,
      workspace: defineWorkspace({ setup: ({ serial, parallel }) => { serial('true'); parallel(['true', 'echo broken >&2; exit 4']); serial('touch never') } }),
    })
    const error = (await sandbox.ensure({ threadId: 't-fail', runId: 'r1' }).catch((e: unknown) => e)) as SetupStepFailedError
    expect(error).toBeInstanceOf(SetupStepFailedError)
    expect(error.step).toBe(3)
    expect(error.exitCode).toBe(4)
    expect(error.outputTail).toContain('broken')
    expect(tmp.entries().length).toBe(before)
  })

  it('keeps secret values out of the saved shell state and removes the state directory', async () => {
    const secrets = createSecrets({ PLAN_TOKEN: 'plan-secret-value-123' })
    const unique = `visible-${process.pid}-${Date.now()}`
    const handle = await ready('plan-secret', {
      secrets,
      // Other sandboxes on this host may have state under /tmp at the same time: find ours by a unique value.
      setup: [`export VISIBLE=${unique}`, `${findState(unique)}; cat "$d/env" > state-copy.txt; echo "$d" > state-dir.txt`, 'echo "$PLAN_TOKEN" > token-seen.txt'],
    })
    const state = readFileSync(join(handle.workspaceRoot, 'state-copy.txt'), 'utf8')
    expect(state).toContain(unique)
    expect(state).not.toContain('plan-secret-value-123')
    expect(readFileSync(join(handle.workspaceRoot, 'token-seen.txt'), 'utf8').trim(), 'steps still see the secret').toBe('plan-secret-value-123')
    const dir = readFileSync(join(handle.workspaceRoot, 'state-dir.txt'), 'utf8').trim()
    expect(dir).toMatch(/^\/tmp\/tanstack-setup-[0-9a-f]+$/)
    expect(existsSync(dir), `${dir} is removed after setup`).toBe(false)
  })

  it('keeps the state owner-only (directory 700, files 600) even when a step sets umask 000', async () => {
    const unique = `perm-${process.pid}-${Date.now()}`
    const handle = await ready('plan-perms', {
      // Step 1 loosens its umask before the EXIT trap saves the state; step 2 looks at what was saved.
      setup: [`umask 000; export VISIBLE=${unique}`, `${findState(unique)}; stat -c '%a %n' "$d" "$d/cwd" "$d/env" > perms.txt; ls -la "$d" >> perms.txt`],
    })
    const lines = readFileSync(join(handle.workspaceRoot, 'perms.txt'), 'utf8').trim().split('\n')
    const modes = lines.slice(0, 3).map((line) => line.split(' ')[0])
    expect(modes, lines.join('\n')).toEqual(['700', '600', '600'])
    expect(lines.join('\n'), 'no env.next or other file is left in the directory').not.toMatch(/env\.next/)
  })

  it('removes the state directory when a step fails', async () => {
    const unique = `fail-${process.pid}-${Date.now()}`
    const where = join(markers, 'failed-state-dir.txt')
    const sandbox = defineSandbox({ id: 'plan-fail-state', provider, workspace: defineWorkspace({ setup: [`export VISIBLE=${unique}`, `${findState(unique)}; echo "$d" > ${where}; exit 3`] }) })
    const error = await sandbox.ensure({ threadId: 't-fail-state', runId: 'r1' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SetupStepFailedError)
    const dir = readFileSync(where, 'utf8').trim()
    rmSync(where)
    expect(dir).toMatch(/^\/tmp\/tanstack-setup-/)
    expect(existsSync(dir), `${dir} is removed after a failed step`).toBe(false)
  })

  it('removes the state directory when the run is aborted during a step', async () => {
    const unique = `abort-${process.pid}-${Date.now()}`
    const where = join(markers, 'aborted-state-dir.txt')
    const sandbox = defineSandbox({
      id: 'plan-abort-state',
      provider,
      workspace: defineWorkspace({ setup: [`export VISIBLE=${unique}`, `${findState(unique)}; echo "$d" > ${where}.part && mv ${where}.part ${where}; sleep 30`, 'touch never'] }),
    })
    const controller = new AbortController()
    const ensured = sandbox.ensure({ threadId: 't-abort-state', runId: 'r1', signal: controller.signal }).catch((e: unknown) => e)
    expect(await waitFor(() => existsSync(where)), 'step 2 started').toBe(true)
    controller.abort()
    const error = await ensured
    expect(error).toBeInstanceOf(WorkspaceBootstrapError)
    expect((error as WorkspaceBootstrapError).reason).toBe('aborted')
    const dir = readFileSync(where, 'utf8').trim()
    rmSync(where)
    expect(existsSync(dir), `${dir} is removed after an abort`).toBe(false)
  })

  it('refuses bad plans at definition time', () => {
    expect(() => defineWorkspace({ setup: ({ parallel }) => parallel([]) })).toThrow(SandboxConfigError)
    expect(() => defineWorkspace({ setup: ({ serial }) => serial('  ') })).toThrow(/non-empty shell command/)
    expect(() => defineWorkspace({ setup: (async () => undefined) as never })).toThrow(/synchronously/)
    expect(() => defineWorkspace({ setup: 'npm install' as never })).toThrow(/workspace.setup/)
    let kept: SetupRecorder | undefined
    defineWorkspace({ setup: (recorder) => void (kept = recorder) })
    expect(() => kept!.serial('echo late')).toThrow(/serial\(\) was called after the setup callback returned\. Steps must be recorded synchronously inside the callback/)
  })

  it('hashes the recorded plan: the same steps give the same workspace hash', () => {
    const a = defineWorkspace({ setup: ['a', 'b'] })
    const b = defineWorkspace({ setup: ({ serial }) => { serial('a'); serial('b') } })
    const c = defineWorkspace({ setup: ({ parallel }) => parallel(['a', 'b']) })
    expect(a.hash).toBe(b.hash)
    expect(a.hash).not.toBe(c.hash)
  })
})
