/**
 * File events of chat() runs over the real local-process provider (native
 * fs.watch): `sandbox.file` chunks while the run holds the sandbox, the
 * `file.changed` diffs after it (git and non-git workspaces), the
 * definition's file hooks and a middleware's `sandbox` hooks with their lazy
 * before/after/diff, `fileEvents: false`, a throwing hook, the `sandbox`
 * debug category, and secrets: files the harness projects are not reported
 * and no workspace secret value travels in a diff.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { chat, defineChatMiddleware, type SandboxFileHookEvent, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import { bearer, createSecrets, defineSandbox, defineWorkspace, FILE_CHANGED_EVENT, getProjection, mcpSkill, SANDBOX_FILE_EVENT, withSandbox, type SandboxHandle } from '@tanstack/ai-sandbox'
import { shellText } from '@example/local-process-basic/shell-adapter'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { perPath } from '@testing/support/event-log'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('file-events')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

type Custom = { type: 'CUSTOM'; name: string; value: any }
const customs = (chunks: StreamChunk[], name: string) => (chunks as unknown as Custom[]).filter((c) => c.type === 'CUSTOM' && c.name === name).map((c) => c.value)

const base = (path: string) => path.split('/').at(-1)!

/** A hook recorder: each call stores the event with its before/after/diff read inside the hook. */
function recorder() {
  const calls: { hook: string; type: string; path: string; before: string; after: string; diff: string }[] = []
  const hook = (name: string) => async (e: SandboxFileHookEvent) => {
    calls.push({ hook: name, type: e.type, path: e.path, before: await e.before(), after: await e.after(), diff: await e.diff() })
  }
  return { calls, hook }
}

describe('file events of a chat() run (local-process, native fs.watch)', () => {
  it('streams sandbox.file chunks and a file.changed diff, and fires definition and middleware hooks', async () => {
    const handles: SandboxHandle[] = []
    const definition = recorder()
    const sandbox = defineSandbox({
      id: 'fe-basic',
      provider,
      lifecycle: { reuse: 'none' },
      workspace: defineWorkspace({ setup: ['echo old > doomed.txt'] }),
      hooks: {
        onReady: (handle) => void handles.push(handle),
        onFile: definition.hook('onFile'),
        onFileCreate: definition.hook('onFileCreate'),
        onFileChange: definition.hook('onFileChange'),
        onFileDelete: definition.hook('onFileDelete'),
      },
    })
    const middlewareCalls: { runId: string; hook: string; type: string; path: string; diff: string }[] = []
    const audit = defineChatMiddleware({
      name: 'audit',
      sandbox: {
        onFile: async (ctx, e) => void middlewareCalls.push({ runId: ctx.runId, hook: 'onFile', type: e.type, path: e.path, diff: await e.diff() }),
        onFileDelete: (ctx, e) => void middlewareCalls.push({ runId: ctx.runId, hook: 'onFileDelete', type: e.type, path: e.path, diff: '' }),
      },
    })
    const out = await runShell({ command: 'mkdir -p src && printf "hello\\nworld\\n" > src/notes.txt && rm doomed.txt && echo done', threadId: 't-fe-basic', middleware: [withSandbox(sandbox), audit] })
    expect(out.error).toBeUndefined()
    const root = handles[0]!.workspaceRoot
    const notes = `${root}/src/notes.txt`
    const expectedDiff = 'diff --git a/src/notes.txt b/src/notes.txt\n--- /dev/null\n+++ b/src/notes.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n'
    // Not a git repository, but git in the sandbox recorded the run's start, so the deletion of a file setup made is a change too.
    const deletedDiff = 'diff --git a/doomed.txt b/doomed.txt\ndeleted file mode 100644\n--- a/doomed.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n'

    const fileEvents = customs(out.chunks, SANDBOX_FILE_EVENT)
    expect(perPath(fileEvents)).toEqual({ [notes]: 'create', [`${root}/doomed.txt`]: 'delete' })
    for (const value of fileEvents) {
      expect(Object.keys(value).sort(), 'the chunk carries only the serializable fields').toEqual(['path', 'timestamp', 'type'])
      expect(Number.isFinite(value.timestamp)).toBe(true)
    }
    expect(customs(out.chunks, FILE_CHANGED_EVENT)).toEqual([
      { path: `${root}/doomed.txt`, diff: deletedDiff },
      { path: notes, diff: expectedDiff },
    ])
    expect(customs(out.chunks, 'sandbox.file.diff'), 'the diff travels as file.changed only').toEqual([])
    const types = (out.chunks as unknown as Custom[]).map((c) => (c.type === 'CUSTOM' ? c.name : c.type))
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(types.lastIndexOf(SANDBOX_FILE_EVENT), 'file events come before the diff').toBeLessThan(types.indexOf(FILE_CHANGED_EVENT))

    // Every event reached onFile and its typed hook; the accessors read content when the hook ran (after the write).
    expect(definition.calls).toEqual(
      expect.arrayContaining([
        { hook: 'onFile', type: 'create', path: notes, before: '', after: 'hello\nworld\n', diff: expectedDiff },
        { hook: 'onFileCreate', type: 'create', path: notes, before: '', after: 'hello\nworld\n', diff: expectedDiff },
        { hook: 'onFile', type: 'delete', path: `${root}/doomed.txt`, before: 'old\n', after: '', diff: deletedDiff },
        { hook: 'onFileDelete', type: 'delete', path: `${root}/doomed.txt`, before: 'old\n', after: '', diff: deletedDiff },
      ]),
    )
    const byHook = (hook: string) => perPath(definition.calls.filter((c) => c.hook === hook))
    expect(byHook('onFile')).toEqual(perPath(fileEvents))
    expect(byHook('onFileCreate')).toEqual({ [notes]: 'create' })
    expect(byHook('onFileDelete')).toEqual({ [`${root}/doomed.txt`]: 'delete' })
    for (const call of definition.calls.filter((c) => c.hook === 'onFileChange')) expect(call).toMatchObject({ path: notes, after: 'hello\nworld\n', diff: expectedDiff })

    const runIds = new Set(middlewareCalls.map((c) => c.runId))
    expect(runIds.size, 'middleware hooks get the run context').toBe(1)
    expect([...runIds][0]).toMatch(/\S/)
    expect(perPath(middlewareCalls.filter((c) => c.hook === 'onFile'))).toEqual(perPath(fileEvents))
    expect(perPath(middlewareCalls.filter((c) => c.hook === 'onFileDelete'))).toEqual({ [`${root}/doomed.txt`]: 'delete' })
    expect(middlewareCalls.find((c) => c.type === 'create')!.diff).toBe(expectedDiff)
  })

  it('diffs against the commit HEAD had when the run started in a git workspace', async () => {
    const sandbox = defineSandbox({
      id: 'fe-git',
      provider,
      lifecycle: { reuse: 'none' },
      workspace: defineWorkspace({ setup: ['git init -q', 'printf "one\\ntwo\\nthree\\n" > a.txt', 'echo keep > b.txt', 'git add -A', 'git -c user.name=t -c user.email=t@t.invalid commit -qm base'] }),
    })
    const changes: SandboxFileHookEvent[] = []
    const before: Record<string, string> = {}
    const watch = defineChatMiddleware({ name: 'watch', sandbox: { onFileChange: async (_ctx, e) => void (changes.push(e), (before[e.path] = await e.before())) } })
    const out = await runShell({
      command: 'printf "one\\nTWO\\nthree\\n" > a.txt && echo fresh > c.txt && git add c.txt && git -c user.name=t -c user.email=t@t.invalid commit -qm agent && echo ok',
      threadId: 't-fe-git',
      middleware: [withSandbox(sandbox), watch],
    })
    expect(out.error).toBeUndefined()
    const changed = customs(out.chunks, FILE_CHANGED_EVENT) as { path: string; diff: string }[]
    expect(changed.map((c) => base(c.path))).toEqual(['a.txt', 'c.txt'])
    expect(changed[0]!.diff).toContain('--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n')
    expect(changed[1]!.diff, 'committed by the agent, still new against the run baseline').toMatch(/new file mode 100644[\s\S]*\+fresh\n$/)
    expect(perPath(customs(out.chunks, SANDBOX_FILE_EVENT), base), '.git is ignored').toEqual({ 'a.txt': 'change', 'c.txt': 'create' })
    const aPath = changes.find((e) => e.path.endsWith('/a.txt'))!.path
    expect(before[aPath]).toBe('one\ntwo\nthree\n')
  })

  it('emits nothing and calls no hook with fileEvents: false', async () => {
    let hookCalls = 0
    const sandbox = defineSandbox({ id: 'fe-off', provider, lifecycle: { reuse: 'none' }, fileEvents: false, hooks: { onFile: () => void hookCalls++ } })
    const mw = defineChatMiddleware({ name: 'mw', sandbox: { onFile: () => void hookCalls++ } })
    const out = await runShell({ command: 'echo x > a.txt && echo ok', threadId: 't-fe-off', middleware: [withSandbox(sandbox), mw] })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe('ok\n')
    expect(customs(out.chunks, SANDBOX_FILE_EVENT)).toEqual([])
    expect(customs(out.chunks, FILE_CHANGED_EVENT)).toEqual([])
    expect(hookCalls).toBe(0)
    expect(sandbox.fileEvents).toBe(false)
  })

  it('finishes the run when file hooks throw, and logs watcher start, dispatch and stop under the sandbox category', async () => {
    const sandbox = defineSandbox({
      id: 'fe-throw',
      provider,
      lifecycle: { reuse: 'none' },
      hooks: {
        onFile: () => {
          throw new Error('definition hook bug')
        },
        onFileCreate: async () => Promise.reject(new Error('async hook bug')),
      },
    })
    const mw = defineChatMiddleware({
      name: 'throws',
      sandbox: {
        onFile: () => {
          throw new Error('middleware hook bug')
        },
      },
    })
    const lines: string[] = []
    const logger = { debug: (m: string) => lines.push(m), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) }
    const out = await runShell({
      command: 'echo x > made.txt && echo ok',
      threadId: 't-fe-throw',
      middleware: [withSandbox(sandbox), mw],
      debug: { sandbox: true, errors: true, logger, output: false, provider: false, middleware: false, agentLoop: false, config: false, request: false, tools: false },
    })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe('ok\n')
    expect(customs(out.chunks, FILE_CHANGED_EVENT)).toHaveLength(1)
    const log = lines.join('\n')
    expect(log).toMatch(/watching \S+\/workspace of sandbox \S+ \(native; ignore \.git, node_modules; files: 0\)/)
    expect(log).toMatch(/dispatch file create \S+\/made\.txt/)
    expect(log).toMatch(/sandbox hook onFile threw for create \S+\/made\.txt/)
    expect(log).toMatch(/sandbox hook onFileCreate threw/)
    expect(log, "core logs the middleware hook's throw").toMatch(/hook=onFileCreate middleware=throws threw/)
    expect(log).toMatch(/stopped watching \S+\/workspace/)
  })

  it('watches each run of a thread from that run\'s own start', async () => {
    const sandbox = defineSandbox({ id: 'fe-thread', provider })
    const first = await runShell({ command: 'echo one > a.txt', threadId: 't-fe-thread', middleware: [withSandbox(sandbox)] })
    const second = await runShell({ command: 'echo two > b.txt && echo again >> a.txt', threadId: 't-fe-thread', middleware: [withSandbox(sandbox)] })
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-fe-thread', runId: '' }) })
    expect(perPath(customs(first.chunks, SANDBOX_FILE_EVENT), base)).toEqual({ 'a.txt': 'create' })
    expect(perPath(customs(second.chunks, SANDBOX_FILE_EVENT), base)).toEqual({ 'a.txt': 'change', 'b.txt': 'create' })
    // Not a git repository, but git is in the sandbox: the run's start is recorded, so a.txt's diff is this run's line only.
    expect(customs(second.chunks, FILE_CHANGED_EVENT).map((v) => v.diff)).toEqual([
      'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n one\n+again\n',
      'diff --git a/b.txt b/b.txt\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+two\n',
    ])
  })

  it("diffs against this run's start in a git workspace: a file an earlier run left untracked or uncommitted shows only this run's change", async () => {
    const sandbox = defineSandbox({
      id: 'fe-thread-git',
      provider,
      workspace: defineWorkspace({ setup: ['git init -q', 'echo base > tracked.txt', 'git add -A', 'git -c user.name=t -c user.email=t@t.invalid commit -qm base'] }),
    })
    const threadId = 't-fe-thread-git'
    const first = await runShell({ command: 'echo first > notes.txt && echo other > other.txt && echo run1 >> tracked.txt', threadId, middleware: [withSandbox(sandbox)] })
    const second = await runShell({ command: 'echo appended >> notes.txt && echo run2 >> tracked.txt && git status --porcelain', threadId, middleware: [withSandbox(sandbox)] })
    await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    expect(first.error).toBeUndefined()
    expect(second.error).toBeUndefined()
    expect(second.text, 'notes.txt and other.txt are still untracked, tracked.txt uncommitted').toBe(' M tracked.txt\n?? notes.txt\n?? other.txt\n')
    expect(customs(first.chunks, FILE_CHANGED_EVENT).map((c) => base(c.path))).toEqual(['notes.txt', 'other.txt', 'tracked.txt'])
    const changed = customs(second.chunks, FILE_CHANGED_EVENT) as { path: string; diff: string }[]
    expect(changed.map((c) => base(c.path)), 'other.txt was not touched in run 2').toEqual(['notes.txt', 'tracked.txt'])
    expect(changed[0]!.diff).toMatch(/^diff --git a\/notes\.txt b\/notes\.txt\n[\s\S]*--- a\/notes\.txt\n\+\+\+ b\/notes\.txt\n@@ -1 \+1,2 @@\n first\n\+appended\n$/)
    expect(changed[1]!.diff).toMatch(/--- a\/tracked\.txt\n\+\+\+ b\/tracked\.txt\n@@ -1,2 \+1,3 @@\n base\n run1\n\+run2\n$/)
  })

  it('leaves projected harness files out and redacts workspace secrets from diffs', async () => {
    const secrets = createSecrets({ API_TOKEN: 'tok-8c1f0a2b-not-for-the-stream' })
    const sandbox = defineSandbox({
      id: 'fe-secrets',
      provider,
      lifecycle: { reuse: 'none' },
      hooks: {
        onFileCreate: (event) => {
          throw new Error(`hook bug while reading ${event.path}`)
        },
      },
      workspace: defineWorkspace({ secrets, skills: [mcpSkill('issues', { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: bearer(secrets.API_TOKEN) } })] }),
    })
    // A harness-style adapter: projects its MCP config (holding the resolved token) before running the command.
    const shell = shellText()
    const adapter = {
      ...shell,
      async *chatStream(options: Parameters<typeof shell.chatStream>[0]) {
        await getProjection(options.capabilities!).project({
          harness: 'fake-harness',
          paths: ['.fake-mcp.json'],
          write: (ctx) => ctx.handle.fs.write('.fake-mcp.json', JSON.stringify({ Authorization: ctx.resolve(bearer(secrets.API_TOKEN)) })),
        })
        yield* shell.chatStream(options)
      },
    } as TextAdapter<any, any, any, any>
    const lines: string[] = []
    const record = (message: string, ...meta: unknown[]) => void lines.push([message, ...meta.map((m) => JSON.stringify(m))].join(' '))
    const logger = { debug: record, info: record, warn: record, error: record }
    const debug = { sandbox: true, errors: true, logger, output: false, provider: false, middleware: false, agentLoop: false, config: false, request: false, tools: false }
    const chunks: StreamChunk[] = []
    for await (const chunk of chat({ adapter, threadId: 't-fe-secrets', debug, messages: [{ role: 'user', content: 'cat .fake-mcp.json > copy.json && echo "$API_TOKEN" > token.txt && touch "name-$API_TOKEN.txt" && echo ok' }], middleware: [withSandbox(sandbox)] } as any) as AsyncIterable<StreamChunk>) chunks.push(chunk)
    expect((chunks as any[]).find((c) => c.type === 'RUN_ERROR')).toBeUndefined()
    expect(Object.keys(perPath(customs(chunks, SANDBOX_FILE_EVENT), base)).sort(), 'the projected config and the marker are not reported; a secret in a file name is redacted').toEqual(['copy.json', 'name-[secret API_TOKEN].txt', 'token.txt'])
    const changed = customs(chunks, FILE_CHANGED_EVENT)
    expect(changed.map((c) => base(c.path))).toEqual(['copy.json', 'name-[secret API_TOKEN].txt', 'token.txt'])
    expect(changed[2].diff).toBe('diff --git a/token.txt b/token.txt\n--- /dev/null\n+++ b/token.txt\n@@ -0,0 +1 @@\n+[secret API_TOKEN]\n')
    expect(changed[0].diff).toContain('Bearer [secret API_TOKEN]')
    expect(JSON.stringify(chunks)).not.toContain('tok-8c1f0a2b')
    // The logs name the file too (dispatch, and the throwing hook with its error), redacted like the stream.
    const log = lines.join('\n')
    expect(log).toMatch(/dispatch file create \S+\/name-\[secret API_TOKEN\]\.txt/)
    expect(log).toMatch(/sandbox hook onFileCreate threw for create \S+\/name-\[secret API_TOKEN\]\.txt/)
    expect(log).toContain('hook bug while reading')
    expect(log).not.toContain('tok-8c1f0a2b')
  })
})
