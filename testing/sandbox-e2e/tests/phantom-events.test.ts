/**
 * Events name only what changed. Node's recursive fs.watch on Linux reports
 * every sibling that shares a name prefix with a removed directory (`rm -rf
 * foo` also reports `foo_bar`, `foobar3`, `foobar_dir`); those must not become
 * events, hooks or file.changed diffs. On local-process (native fs.watch),
 * with git on the host and without it (PATH without git, so diffs are
 * add-patches of the current content), and, as a control, on Docker BusyBox
 * and Debian (the poll). A sentinel file written after the removal proves
 * the watcher had handled the removal's events before the assertion.
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { SandboxFileHookEvent, StreamChunk } from '@tanstack/ai'
import { defineSandbox, defineWorkspace, FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT, watchWorkspace, withSandbox, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { eventLog, perPath } from '@testing/support/event-log'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

/** `foo/` with files, and siblings whose names start with `foo`. */
const SETUP = 'mkdir -p foo/sub foobar_dir && echo 1 > foo/a.txt && echo 2 > foo/sub/b.txt && echo 3 > foo_bar && echo 4 > foobar3 && echo 5 > foobar_dir/c.txt'

type Custom = { type: 'CUSTOM'; name: string; value: any }
const customs = (chunks: StreamChunk[], name: string) => (chunks as unknown as Custom[]).filter((c) => c.type === 'CUSTOM' && c.name === name).map((c) => c.value)

/** A provider whose sandboxes get `env` on create (here: a PATH without git). */
function withEnv(provider: SandboxProvider, env: Record<string, string>): SandboxProvider {
  return Object.assign(Object.create(provider) as SandboxProvider, { create: (input?: Parameters<SandboxProvider['create']>[0]) => provider.create({ ...input, env: { ...input?.env, ...env } }) })
}

/** A folder of links to every host program except git's. */
function pathWithoutGit(dir: string): string {
  mkdirSync(dir)
  for (const folder of ['/usr/local/bin', '/usr/bin', '/usr/sbin']) {
    let names: string[]
    try {
      names = readdirSync(folder)
    } catch {
      continue // not on this host
    }
    for (const name of names) {
      if (name.startsWith('git')) continue
      try {
        symlinkSync(join(folder, name), join(dir, name))
      } catch {
        // already linked from an earlier folder, which PATH would find first
      }
    }
  }
  return dir
}

function phantomCases(provider: SandboxProvider, label: string, git: boolean): void {
  it('watchWorkspace: rm -rf foo reports only the deletion of foo\'s files', async () => {
    const handle = await provider.create()
    try {
      expect((await handle.process.exec(SETUP)).exitCode).toBe(0)
      const log = eventLog()
      const watcher = await watchWorkspace(handle, { onEvent: log.onEvent, intervalMs: 100 })
      const root = handle.workspaceRoot.replace(/\/+$/, '')
      expect((await handle.process.exec('rm -rf foo')).exitCode).toBe(0)
      await log.until((e) => e.path === `${root}/foo/a.txt`)
      await log.until((e) => e.path === `${root}/foo/sub/b.txt`)
      expect((await handle.process.exec('echo s > sentinel.txt')).exitCode).toBe(0)
      await log.until((e) => e.path === `${root}/sentinel.txt`)
      await watcher.flush()
      await watcher.stop()
      expect(perPath(log.events)).toEqual({ [`${root}/foo/a.txt`]: 'delete', [`${root}/foo/sub/b.txt`]: 'delete', [`${root}/sentinel.txt`]: 'create' })
    } finally {
      await handle.destroy()
    }
  })

  it(`a chat() run that removes foo: chunks, hooks and file.changed name only foo's files (${git ? 'git diffs' : 'no git'})`, async () => {
    const handles: SandboxHandle[] = []
    const hooked: SandboxFileHookEvent[] = []
    const sandbox = defineSandbox({
      id: `phantoms-${label}`,
      provider,
      lifecycle: { reuse: 'none', snapshot: 'none' },
      workspace: defineWorkspace({ setup: [SETUP] }),
      hooks: { onReady: (handle) => void handles.push(handle), onFile: (e) => void hooked.push(e) },
    })
    const out = await runShell({ command: 'rm -rf foo && echo s > sentinel.txt && echo ok', threadId: `t-phantoms-${label}`, middleware: [withSandbox(sandbox)] })
    expect(out.error).toBeUndefined()
    const root = handles[0]!.workspaceRoot.replace(/\/+$/, '')
    const expected = { [`${root}/foo/a.txt`]: 'delete', [`${root}/foo/sub/b.txt`]: 'delete', [`${root}/sentinel.txt`]: 'create' }
    expect(perPath(customs(out.chunks, SANDBOX_FILE_EVENT))).toEqual(expected)
    expect(perPath(hooked)).toEqual(expected)
    const changed = (customs(out.chunks, FILE_CHANGED_EVENT) as { path: string; diff: string }[]).map((c) => c.path)
    // With git the deletions diff against the run's start; without it a deleted file has no content to show.
    expect(changed).toEqual(git ? [`${root}/foo/a.txt`, `${root}/foo/sub/b.txt`, `${root}/sentinel.txt`] : [`${root}/sentinel.txt`])
  })
}

describe('no phantom events on local-process (native fs.watch)', () => {
  const tmp = makeRoot('phantoms')
  const bin = makeRoot('phantoms-bin')
  afterAll(() => {
    const left = tmp.entries()
    tmp.cleanup()
    bin.cleanup()
    expect(left, 'every sandbox directory is removed by the tests').toEqual([])
  })
  const provider = localProcessSandbox({ root: tmp.root })
  describe('git on the host', () => phantomCases(provider, 'local-git', true))
  describe('no git in PATH', () => phantomCases(withEnv(provider, { PATH: pathWithoutGit(join(bin.root, 'bin')) }), 'local-nogit', false))
})

const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `phantoms-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([BUSYBOX, DEBIAN], { needsBridge: false })

describeWithDocker('no phantom events on Docker (poll)', reason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`)
    await pruneDockerSandboxes({ labels: RUN })
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  describe('BusyBox image', () => phantomCases(dockerSandbox({ image: BUSYBOX, labels: RUN, killGraceMs: 500 }), 'busybox', false))
  describe('Debian image', () => phantomCases(dockerSandbox({ image: DEBIAN, labels: RUN, killGraceMs: 500 }), 'debian', true))
})
