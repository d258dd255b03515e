/**
 * Setup plans over one persistent shell, on the real local-process provider:
 * cwd and exported env carry over between serial steps, parallel steps really
 * run at the same time and start from the shell state, failures are typed,
 * and secret values never reach the saved shell state.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createSecrets, defineSandbox, defineWorkspace, SandboxConfigError, SetupStepFailedError, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('setup-plan')
const provider = localProcessSandbox({ root: tmp.root })
const handles: SandboxHandle[] = []

afterAll(async () => {
  for (const handle of handles) await handle.destroy()
  const left = tmp.entries()
  tmp.cleanup()
  expect(left).toEqual([])
})

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

  it('keeps secret values out of the saved shell state and removes the state files', async () => {
    const secrets = createSecrets({ PLAN_TOKEN: 'plan-secret-value-123' })
    const unique = `visible-${process.pid}-${Date.now()}`
    const handle = await ready('plan-secret', {
      secrets,
      // Other sandboxes on this host may have state files under /tmp at the same time: find ours by a unique value.
      setup: [`export VISIBLE=${unique}`, `f=$(grep -l ${unique} /tmp/tanstack-setup-*.env); cat "$f" > state-copy.txt; echo "$f" > state-files.txt; echo "\${f%.env}.cwd" >> state-files.txt`, 'echo "$PLAN_TOKEN" > token-seen.txt'],
    })
    const state = readFileSync(join(handle.workspaceRoot, 'state-copy.txt'), 'utf8')
    expect(state).toContain(unique)
    expect(state).not.toContain('plan-secret-value-123')
    expect(readFileSync(join(handle.workspaceRoot, 'token-seen.txt'), 'utf8').trim(), 'steps still see the secret').toBe('plan-secret-value-123')
    const stateFiles = readFileSync(join(handle.workspaceRoot, 'state-files.txt'), 'utf8').trim().split('\n')
    expect(stateFiles).toHaveLength(2)
    for (const file of stateFiles) expect(existsSync(file), `${file} is removed after setup`).toBe(false)
  })

  it('refuses bad plans at definition time', () => {
    expect(() => defineWorkspace({ setup: ({ parallel }) => parallel([]) })).toThrow(SandboxConfigError)
    expect(() => defineWorkspace({ setup: ({ serial }) => serial('  ') })).toThrow(/non-empty shell command/)
    expect(() => defineWorkspace({ setup: (async () => undefined) as never })).toThrow(/synchronously/)
    expect(() => defineWorkspace({ setup: 'npm install' as never })).toThrow(/workspace.setup/)
  })

  it('hashes the recorded plan: the same steps give the same workspace hash', () => {
    const a = defineWorkspace({ setup: ['a', 'b'] })
    const b = defineWorkspace({ setup: ({ serial }) => { serial('a'); serial('b') } })
    const c = defineWorkspace({ setup: ({ parallel }) => parallel(['a', 'b']) })
    expect(a.hash).toBe(b.hash)
    expect(a.hash).not.toBe(c.hash)
  })
})
