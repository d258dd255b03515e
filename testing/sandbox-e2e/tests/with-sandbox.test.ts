/**
 * chat() + withSandbox over the real local-process provider: the capability
 * check, running commands in the sandbox, reuse across runs of a thread,
 * reuse 'none', abort (and a late abort after the run, which destroys
 * nothing), stores, locks, tenants and debug logging.
 */
import { existsSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { defineChatMiddleware } from '@tanstack/ai'
import { InMemoryLockStore, withLocks } from '@tanstack/ai/locks'
import {
  createSecrets,
  defineSandbox,
  defineWorkspace,
  InMemorySandboxInstanceStore,
  provideSandboxInstanceStore,
  SandboxInstanceStoreCapability,
  withSandbox,
} from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runShell } from '@testing/support/run-shell'
import { makeRoot, processesMatching, waitFor } from './helpers/run-chat.js'

const tmp = makeRoot('with-sandbox')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

describe('chat() with a sandbox-requiring adapter', () => {
  it('fails with the missing-capability error without withSandbox', async () => {
    await expect(runShell({ command: 'true', threadId: 't-missing', middleware: [] })).rejects.toThrow(/requires capability "sandbox"/)
  })

  it('runs commands inside the sandbox workspace with withSandbox', async () => {
    const sandbox = defineSandbox({ id: 'e2e-basic', provider, lifecycle: { reuse: 'none' } })
    const out = await runShell({ command: 'pwd && echo $0', threadId: 't-basic', middleware: [withSandbox(sandbox)] })
    expect(out.error).toBeUndefined()
    const [pwd] = out.text.trim().split('\n')
    expect(pwd!.startsWith(tmp.root)).toBe(true)
    expect(pwd!.endsWith('/workspace')).toBe(true)
    expect(existsSync(pwd!), "reuse 'none' removes the sandbox directory after the run").toBe(false)
  })

  it('redacts workspace secrets from the error of a failed command', async () => {
    const secrets = createSecrets({ DEPLOY_TOKEN: 'dtk-5e1f-not-for-errors' })
    const sandbox = defineSandbox({ id: 'e2e-error-redact', provider, lifecycle: { reuse: 'none' }, workspace: defineWorkspace({ secrets }) })
    const out = await runShell({ command: 'echo "auth failed for $DEPLOY_TOKEN" >&2; exit 3', threadId: 't-error-redact', middleware: [withSandbox(sandbox)] })
    expect(out.error).toBe('command exited with code 3: auth failed for [secret DEPLOY_TOKEN]\n')
    expect(JSON.stringify(out.chunks)).not.toContain('dtk-5e1f')
  })

  it('reuses one sandbox per thread: a second run sees the first run\'s files', async () => {
    const sandbox = defineSandbox({ id: 'e2e-thread', provider, workspace: defineWorkspace({ setup: ['echo seeded > seed.txt'] }) })
    const first = await runShell({ command: 'echo from-run-1 > shared.txt && pwd', threadId: 't-reuse', middleware: [withSandbox(sandbox)] })
    const second = await runShell({ command: 'cat shared.txt seed.txt && pwd', threadId: 't-reuse', middleware: [withSandbox(sandbox)] })
    expect(second.text).toContain('from-run-1')
    expect(second.text).toContain('seeded')
    expect(second.text.trim().split('\n').at(-1)).toBe(first.text.trim())
    const other = await runShell({ command: 'ls', threadId: 't-other', middleware: [withSandbox(sandbox)] })
    expect(other.text).not.toContain('shared.txt')
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-reuse', runId: '' }) })
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-other', runId: '' }) })
    expect(existsSync(first.text.trim())).toBe(false)
  })

  it('destroys the sandbox after a successful run with destroyOnComplete', async () => {
    const sandbox = defineSandbox({ id: 'e2e-doc', provider, lifecycle: { reuse: 'thread', destroyOnComplete: true } })
    const out = await runShell({ command: 'pwd', threadId: 't-doc', middleware: [withSandbox(sandbox)] })
    expect(existsSync(out.text.trim())).toBe(false)
    expect(await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-doc', runId: '' }))).toBeNull()
  })

  it('destroys an idle sandbox after keepAlive', async () => {
    const sandbox = defineSandbox({ id: 'e2e-keepalive', provider, lifecycle: { keepAlive: 200 } })
    const out = await runShell({ command: 'pwd', threadId: 't-ka', middleware: [withSandbox(sandbox)] })
    expect(existsSync(out.text.trim())).toBe(true)
    expect(await waitFor(() => !existsSync(out.text.trim()))).toBe(true)
  })

  it('kills the process group and removes the directory on abort mid-command', async () => {
    const sandbox = defineSandbox({ id: 'e2e-abort', provider })
    const marker = `tsbx-abort-${process.pid}-${Date.now()}`
    const controller = new AbortController()
    let pwd = ''
    const run = runShell({
      // A job with a child and a grandchild, all in one process group.
      command: `pwd; sh -c 'sleep 300 # ${marker}' & sh -c 'sh -c "sleep 301 # ${marker}"' & echo started; wait`,
      threadId: 't-abort',
      middleware: [withSandbox(sandbox)],
      abortController: controller,
      onChunk: (chunk) => {
        if (chunk.type === 'TEXT_MESSAGE_CONTENT') {
          pwd += chunk.delta
          if (pwd.includes('started')) controller.abort()
        }
      },
    })
    await run.catch(() => undefined)
    expect(pwd).toContain('started')
    const dir = pwd.trim().split('\n')[0]!
    expect(await waitFor(() => processesMatching(marker).length === 0), `no process of the job is left: ${processesMatching(marker)}`).toBe(true)
    expect(await waitFor(() => !existsSync(dir)), 'the sandbox directory is removed').toBe(true)
  })

  it('keeps a thread sandbox when the abort signal fires after the run finished', async () => {
    // Web frameworks abort a request's signal after a normal response: that must not end the thread's sandbox.
    const destroyed: string[] = []
    const sandbox = defineSandbox({ id: 'e2e-late-abort', provider, hooks: { onDestroy: () => void destroyed.push('destroy') } })
    const key = sandbox.key({ threadId: 't-late-abort', runId: '' })
    const controller = new AbortController()
    const first = await runShell({ command: 'echo from-run-1 > kept.txt && pwd', threadId: 't-late-abort', middleware: [withSandbox(sandbox)], abortController: controller })
    expect(first.error).toBeUndefined()
    controller.abort()
    const second = await runShell({ command: 'cat kept.txt && pwd', threadId: 't-late-abort', middleware: [withSandbox(sandbox)] })
    expect(second.error, 'the second run found its workspace').toBeUndefined()
    expect(second.text).toBe(`from-run-1\n${first.text}`)
    expect(existsSync(first.text.trim())).toBe(true)
    expect(await sandbox.fallbackInstances.get(key)).not.toBeNull()
    expect(destroyed, 'the late abort destroyed nothing').toEqual([])
    await sandbox.destroy({ key })
    expect(destroyed).toEqual(['destroy'])
  })

  it('keeps a thread sandbox when the client aborts the moment it sees RUN_FINISHED (same tick)', async () => {
    // The client holds the end before the run's terminal hook runs; an abort then is a late one, not a live one.
    const destroyed: string[] = []
    const sandbox = defineSandbox({ id: 'e2e-abort-at-end', provider, hooks: { onDestroy: () => void destroyed.push('destroy') } })
    const key = sandbox.key({ threadId: 't-abort-at-end', runId: '' })
    const controller = new AbortController()
    const first = await runShell({
      command: 'echo at-end > kept.txt && pwd',
      threadId: 't-abort-at-end',
      middleware: [withSandbox(sandbox)],
      abortController: controller,
      onChunk: (chunk) => {
        if (chunk.type === 'RUN_FINISHED') controller.abort()
      },
    }).catch((error: unknown) => ({ text: '', error: String(error) }))
    expect(controller.signal.aborted).toBe(true)
    const second = await runShell({ command: 'cat kept.txt', threadId: 't-abort-at-end', middleware: [withSandbox(sandbox)] })
    expect(second.error, 'the second run found its workspace').toBeUndefined()
    expect(second.text).toBe('at-end\n')
    expect(await sandbox.fallbackInstances.get(key)).not.toBeNull()
    expect(destroyed, 'an abort after RUN_FINISHED destroyed nothing').toEqual([])
    void first
    await sandbox.destroy({ key })
  })

  it('destroys the sandbox when the abort lands while it is still being set up', async () => {
    const sandbox = defineSandbox({ id: 'e2e-abort-setup', provider, workspace: defineWorkspace({ setup: ['sleep 1'] }) })
    const before = tmp.entries().length
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    await runShell({ command: 'echo never', threadId: 't-abort-setup', middleware: [withSandbox(sandbox)], abortController: controller }).catch(() => undefined)
    expect(await waitFor(() => tmp.entries().length === before), 'no sandbox directory is left').toBe(true)
    expect(await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-abort-setup', runId: '' }))).toBeNull()
  })

  it('stops the setup steps when the run is aborted before the sandbox is ready', async () => {
    const sandbox = defineSandbox({ id: 'e2e-abort-steps', provider, workspace: defineWorkspace({ setup: ['sleep 1', 'touch "$TMPDIR_MARK"', 'sleep 45'] }) })
    const mark = `${tmp.root}-step2-${Date.now()}`
    process.env.TMPDIR_MARK = mark
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const error = await runShell({ command: 'echo never', threadId: 't-abort-steps', middleware: [withSandbox(sandbox)], abortController: controller }).catch((e: unknown) => e)
    delete process.env.TMPDIR_MARK
    expect(String(error)).toMatch(/aborted/)
    expect(existsSync(mark), 'no later setup step ran').toBe(false)
    expect(await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-abort-steps', runId: '' }))).toBeNull()
  })

  it('keeps a kept-alive sandbox while another run on the thread is still working', async () => {
    const sandbox = defineSandbox({ id: 'e2e-keepalive-busy', provider, lifecycle: { keepAlive: 100 } })
    await runShell({ command: 'true', threadId: 't-busy', middleware: [withSandbox(sandbox)] })
    const long = runShell({ command: 'sleep 1; echo long-finished', threadId: 't-busy', middleware: [withSandbox(sandbox)] })
    await new Promise((resolve) => setTimeout(resolve, 50))
    await runShell({ command: 'true', threadId: 't-busy', middleware: [withSandbox(sandbox)] })
    const out = await long
    expect(out.error).toBeUndefined()
    expect(out.text).toContain('long-finished')
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-busy', runId: '' }) })
  })

  it('destroys the sandbox of a run that has no threadId (it could never be reused)', async () => {
    const sandbox = defineSandbox({ id: 'e2e-no-thread', provider })
    const before = tmp.entries().length
    const { chat } = await import('@tanstack/ai')
    const { shellText } = await import('@example/local-process-basic/shell-adapter')
    let text = ''
    for await (const chunk of chat({ adapter: shellText(), messages: [{ role: 'user', content: 'pwd' }], middleware: [withSandbox(sandbox)], debug: { errors: false } })) {
      if (chunk.type === 'TEXT_MESSAGE_CONTENT') text += chunk.delta
    }
    expect(text.trim().startsWith(tmp.root)).toBe(true)
    expect(tmp.entries().length).toBe(before)
  })

  it('serialises concurrent first runs of one thread onto one sandbox', async () => {
    const sandbox = defineSandbox({ id: 'e2e-lock', provider })
    const locks = new InMemoryLockStore()
    const runs = await Promise.all(
      [1, 2, 3].map(() => runShell({ command: 'pwd', threadId: 't-lock', middleware: [withLocks(locks), withSandbox(sandbox)] })),
    )
    expect(new Set(runs.map((r) => r.text.trim())).size).toBe(1)
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-lock', runId: '' }) })
  })

  it('keeps tenants apart: the same thread id in two tenants gets two sandboxes', async () => {
    const sandbox = defineSandbox({ id: 'e2e-tenant', provider })
    const a = await runShell({ command: 'pwd', threadId: 't-shared', middleware: [withSandbox(sandbox)], context: { tenantId: 'acme' } })
    const b = await runShell({ command: 'pwd', threadId: 't-shared', middleware: [withSandbox(sandbox)], context: { tenantId: 'globex' } })
    expect(a.text.trim()).not.toBe(b.text.trim())
    for (const tenant of ['acme', 'globex']) await sandbox.destroy({ key: sandbox.key({ threadId: 't-shared', runId: '', tenant }) })
  })

  it('keeps numeric tenants apart, and a tenant named "-" apart from no tenant', async () => {
    const sandbox = defineSandbox({ id: 'e2e-tenant-kinds', provider })
    const dirOf = async (tenantId: unknown) => (await runShell({ command: 'pwd', threadId: 't-kinds', middleware: [withSandbox(sandbox)], ...(tenantId === undefined ? {} : { context: { tenantId } }) })).text.trim()
    const dirs = [await dirOf(42), await dirOf(43), await dirOf('-'), await dirOf(undefined)]
    expect(new Set(dirs).size, 'four tenants, four sandboxes').toBe(4)
    expect(await dirOf('42'), 'the number 42 and the string "42" are one tenant').toBe(dirs[0])
    for (const tenant of ['42', '43', '-', undefined]) await sandbox.destroy({ key: sandbox.key({ threadId: 't-kinds', runId: '', ...(tenant === undefined ? {} : { tenant }) }) })
  })

  it('refuses a tenantId that is neither a string nor a number, naming context.tenantId', async () => {
    const sandbox = defineSandbox({ id: 'e2e-tenant-bad', provider })
    await expect(runShell({ command: 'true', threadId: 't-bad-tenant', middleware: [withSandbox(sandbox)], context: { tenantId: { id: 1 } } })).rejects.toThrow(/context: \{ tenantId \} \}\) must be a string or a finite number/)
  })

  it('with destroyOnComplete, destroys a shared thread sandbox only when the last concurrent run finishes', async () => {
    const sandbox = defineSandbox({ id: 'e2e-doc-concurrent', provider, lifecycle: { destroyOnComplete: true } })
    const before = tmp.entries().length
    const long = runShell({ command: 'sleep 1; echo long-ok', threadId: 't-doc', middleware: [withSandbox(sandbox)] })
    await new Promise((resolve) => setTimeout(resolve, 300))
    const short = await runShell({ command: 'echo short-ok', threadId: 't-doc', middleware: [withSandbox(sandbox)] })
    expect(short.error).toBeUndefined()
    const out = await long
    expect(out.error, 'the long run was not killed by the short one finishing').toBeUndefined()
    expect(out.text).toContain('long-ok')
    expect(tmp.entries().length, 'the last run destroyed the sandbox').toBe(before)
  })

  it('uses the instances option over the capability, and the capability over the in-memory fallback', async () => {
    const sandbox = defineSandbox({ id: 'e2e-stores', provider })
    const explicit = new InMemorySandboxInstanceStore()
    const ambient = new InMemorySandboxInstanceStore()
    const platform = defineChatMiddleware({
      name: 'platform',
      provides: [SandboxInstanceStoreCapability],
      setup: (ctx) => provideSandboxInstanceStore(ctx, ambient),
    })
    const key = (threadId: string) => sandbox.key({ threadId, runId: '' })
    await runShell({ command: 'true', threadId: 't-explicit', middleware: [platform, withSandbox(sandbox, { instances: explicit })] })
    await runShell({ command: 'true', threadId: 't-ambient', middleware: [platform, withSandbox(sandbox)] })
    await runShell({ command: 'true', threadId: 't-fallback', middleware: [withSandbox(sandbox)] })
    expect(await explicit.get(key('t-explicit'))).not.toBeNull()
    expect(await ambient.get(key('t-explicit'))).toBeNull()
    expect(await ambient.get(key('t-ambient'))).not.toBeNull()
    expect(await sandbox.fallbackInstances.get(key('t-fallback'))).not.toBeNull()
    await sandbox.destroy({ key: key('t-explicit'), instances: explicit })
    await sandbox.destroy({ key: key('t-ambient'), instances: ambient })
    await sandbox.destroy({ key: key('t-fallback') })
  })

  it('resumes the recorded sandbox from a second provider instance (a new process)', async () => {
    const instances = new InMemorySandboxInstanceStore()
    const first = defineSandbox({ id: 'e2e-resume', provider })
    const out1 = await runShell({ command: 'echo kept > kept.txt && pwd', threadId: 't-resume', middleware: [withSandbox(first, { instances })] })
    const second = defineSandbox({ id: 'e2e-resume', provider: localProcessSandbox({ root: tmp.root }) })
    const out2 = await runShell({ command: 'cat kept.txt && pwd', threadId: 't-resume', middleware: [withSandbox(second, { instances })] })
    expect(out2.text).toContain('kept')
    expect(out2.text.trim().split('\n').at(-1)).toBe(out1.text.trim())
    await second.destroy({ key: second.key({ threadId: 't-resume', runId: '' }), instances })
  })

  it('logs lifecycle transitions under the sandbox debug category', async () => {
    const sandbox = defineSandbox({ id: 'e2e-debug', provider, lifecycle: { reuse: 'none' } })
    const lines: string[] = []
    const logger = { debug: (m: string) => lines.push(m), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) }
    await runShell({ command: 'true', threadId: 't-debug', middleware: [withSandbox(sandbox)], debug: { sandbox: true, logger, output: false, provider: false, middleware: false, agentLoop: false, config: false, request: false, tools: false } })
    const text = lines.join('\n')
    expect(text).toMatch(/ensure sbx:/)
    expect(text).toMatch(/created sbx:/)
    expect(text).toMatch(/destroying sandbox/)
  })

  it('calls onReady, onDestroy and onError hooks', async () => {
    const events: string[] = []
    const sandbox = defineSandbox({
      id: 'e2e-hooks',
      provider,
      lifecycle: { reuse: 'none' },
      hooks: { onReady: (h) => void events.push(`ready:${h.provider}`), onDestroy: () => void events.push('destroy'), onError: () => void events.push('error') },
    })
    await runShell({ command: 'true', threadId: 't-hooks', middleware: [withSandbox(sandbox)] })
    expect(events).toEqual(['ready:local-process', 'destroy'])
    const failing = defineSandbox({ id: 'e2e-hooks-fail', provider, workspace: defineWorkspace({ setup: ['exit 9'] }), hooks: { onError: () => void events.push('error') } })
    await expect(runShell({ command: 'true', threadId: 't-hooks-fail', middleware: [withSandbox(failing)] })).rejects.toThrow(/Setup step 1 failed/)
    expect(events.at(-1)).toBe('error')
  })
})
