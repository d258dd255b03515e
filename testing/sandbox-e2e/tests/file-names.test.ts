/**
 * Any byte in a file name: names with newlines (one crafted so that a
 * line-based listing would read it as a record for `..`), `|`, backslashes,
 * a leading dash, a trailing newline and non-ASCII letters are reported under
 * their real names, and no event ever names a path outside the workspace
 * root; a name that is not UTF-8 is never reported under a mangled name.
 * Through watchWorkspace and through chat() runs (sandbox.file chunks, the
 * definition's hooks, file.changed), on local-process (native fs.watch, the
 * listing at start and on flush) and on Docker BusyBox and Debian (the poll).
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { SandboxFileHookEvent, StreamChunk } from '@tanstack/ai'
import { defineSandbox, FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT, shellQuote, watchWorkspace, withSandbox, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { eventLog, perPath } from '@testing/support/event-log'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

/** Names made inside `odd/`, each reported as it is. */
const NAMES = [
  'line\nbreak.txt',
  // Read line by line, the tail of this name is a well-formed listing record for `..`.
  'evil\n1 1 2026-01-01 00:00:00.000000000 +0000|..',
  'pipe|name.txt',
  'back\\slash.txt',
  '-dash.txt',
  'trailing newline\n',
  'ünïcödé.txt',
]

/** Makes every name of {@link NAMES} with content `x`, plus a name with the byte 0xff, which is not UTF-8. */
const MAKE = ['mkdir -p odd', ...NAMES.map((name) => `printf x > ${shellQuote(`odd/${name}`)}`), `printf x > "odd/$(printf 'bad\\377.txt')"`].join(' && ')

type Custom = { type: 'CUSTOM'; name: string; value: any }
const customs = (chunks: StreamChunk[], name: string) => (chunks as unknown as Custom[]).filter((c) => c.type === 'CUSTOM' && c.name === name).map((c) => c.value)

/** Every path is strictly inside `root`, with no `.`/`..`/empty segment and no replacement character. */
function expectInside(paths: readonly string[], root: string): void {
  for (const path of paths) {
    expect(path.startsWith(`${root}/`), `${JSON.stringify(path)} is inside ${root}`).toBe(true)
    expect(path.slice(root.length + 1).split('/').filter((part) => part === '' || part === '.' || part === '..'), JSON.stringify(path)).toEqual([])
    expect(path, 'no name is mangled into U+FFFD').not.toContain('\uFFFD')
  }
}

/** The watchWorkspace and chat() cases for one provider. */
function oddNameCases(provider: SandboxProvider, label: string): void {
  it('watchWorkspace reports each odd name once under its real name, and its deletion', async () => {
    const handle = await provider.create()
    try {
      const log = eventLog()
      const watcher = await watchWorkspace(handle, { onEvent: log.onEvent, intervalMs: 100 })
      const root = handle.workspaceRoot.replace(/\/+$/, '')
      expect((await handle.process.exec(MAKE)).exitCode).toBe(0)
      await log.until((e) => e.path === `${root}/odd/${NAMES[0]}`)
      await watcher.flush()
      const made = Object.fromEntries(NAMES.map((name) => [`${root}/odd/${name}`, 'create']))
      expect(perPath(log.events)).toEqual(made)

      expect((await handle.process.exec('rm -rf odd')).exitCode).toBe(0)
      await watcher.flush()
      await watcher.stop()
      expect(perPath(log.events)).toEqual(Object.fromEntries(NAMES.map((name) => [`${root}/odd/${name}`, 'create,delete'])))
      expectInside(
        log.events.map((e) => e.path),
        root,
      )
    } finally {
      await handle.destroy()
    }
  })

  it('a chat() run streams sandbox.file chunks, hooks and file.changed under the real names only', async () => {
    const handles: SandboxHandle[] = []
    const hooked: SandboxFileHookEvent[] = []
    const sandbox = defineSandbox({
      id: `odd-names-${label}`,
      provider,
      lifecycle: { reuse: 'none', snapshot: 'none' },
      hooks: { onReady: (handle) => void handles.push(handle), onFile: (e) => void hooked.push(e) },
    })
    const out = await runShell({ command: `${MAKE} && echo ok`, threadId: `t-odd-names-${label}`, middleware: [withSandbox(sandbox)] })
    expect(out.error).toBeUndefined()
    const root = handles[0]!.workspaceRoot.replace(/\/+$/, '')
    const expected = NAMES.map((name) => `${root}/odd/${name}`).sort()
    const streamed = customs(out.chunks, SANDBOX_FILE_EVENT) as { type: string; path: string }[]
    expect(perPath(streamed)).toEqual(Object.fromEntries(expected.map((path) => [path, 'create'])))
    expect(perPath(hooked)).toEqual(perPath(streamed))
    const changed = customs(out.chunks, FILE_CHANGED_EVENT) as { path: string; diff: string }[]
    expect(changed.map((c) => c.path)).toEqual(expected)
    for (const change of changed) expect(change.diff, change.path).toMatch(/\+x\n\\ No newline at end of file\n$/)
    expectInside([...streamed, ...hooked, ...changed].map((e) => e.path), root)
  })
}

describe('odd file names on local-process (native fs.watch)', () => {
  const tmp = makeRoot('file-names')
  afterAll(() => {
    const left = tmp.entries()
    tmp.cleanup()
    expect(left, 'every sandbox directory is removed by the tests').toEqual([])
  })
  oddNameCases(localProcessSandbox({ root: tmp.root }), 'local')
})

const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `names-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([BUSYBOX, DEBIAN], { needsBridge: false })

describeWithDocker('odd file names on Docker (poll)', reason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`)
    await pruneDockerSandboxes({ labels: RUN })
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  for (const [name, image] of [
    ['BusyBox', BUSYBOX],
    ['Debian', DEBIAN],
  ] as const) {
    describe(`${name} image`, () => oddNameCases(dockerSandbox({ image, labels: RUN, killGraceMs: 500 }), name.toLowerCase()))
  }
})
