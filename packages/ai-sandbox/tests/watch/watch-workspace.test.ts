/**
 * watchWorkspace on a fake handle whose exec runs on the host: the poll path
 * (create/change/delete, ignore, flush, stop, failing subscribers, a listing
 * that cannot run, names with any byte) and, with a scripted `fs.watch`, how
 * native events are normalised, checked against the file and reconciled, and
 * that no event names a path outside the workspace root. Real providers run in testing/sandbox-e2e.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxError, watchWorkspace, WorkspaceWatchError, type SandboxHandle, type SandboxWatchEvent, type WorkspaceWatcher } from '../../src/index.js'
import { createFakeHandle } from '../helpers/fake-handle.js'
import { eventLog } from '../helpers/event-log.js'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A fresh workspace and a handle without fs (so the poll path runs). */
function workspace(): { root: string; handle: SandboxHandle } {
  const root = mkdtempSync(join(tmpdir(), 'tsbx-watch-'))
  const fake = createFakeHandle(root)
  cleanups.push(() => rmSync(root, { recursive: true, force: true }), () => fake.destroy())
  return { root, handle: { ...fake, fs: {} as SandboxHandle['fs'] } }
}

async function watch(handle: SandboxHandle, options: Omit<Parameters<typeof watchWorkspace>[1], 'onEvent'> = {}) {
  const log = eventLog()
  const logged: string[] = []
  const watcher: WorkspaceWatcher = await watchWorkspace(handle, { onEvent: log.onEvent, intervalMs: 60_000, logger: { sandbox: (m) => void logged.push(m) }, ...options })
  cleanups.push(() => watcher.stop())
  return { log, watcher, logged }
}

describe('watchWorkspace (poll)', () => {
  it('reports create, change and delete of files with absolute paths, and no directories', async () => {
    const { root, handle } = workspace()
    writeFileSync(join(root, 'existing.txt'), 'old')
    const { log, watcher } = await watch(handle)
    expect(watcher.mode).toBe('poll')

    mkdirSync(join(root, 'src/deep'), { recursive: true })
    writeFileSync(join(root, 'src/deep/new file.txt'), 'hello')
    writeFileSync(join(root, 'existing.txt'), 'new') // same size: the nanosecond mtime tells
    await watcher.flush()
    expect(log.lines()).toEqual([`change ${root}/existing.txt`, `create ${root}/src/deep/new file.txt`])

    unlinkSync(join(root, 'existing.txt'))
    await watcher.flush()
    expect(log.lines().slice(2)).toEqual([`delete ${root}/existing.txt`])
    for (const event of log.events) expect(Number.isFinite(event.timestamp)).toBe(true)
  })

  it('ignores .git and node_modules by default; a given list replaces the default', async () => {
    const { root, handle } = workspace()
    const defaults = await watch(handle)
    const custom = await watch(handle, { ignore: ['build', 'docs/generated'] })
    for (const dir of ['.git/objects', 'node_modules/x', 'build', 'docs/generated', 'docs']) mkdirSync(join(root, dir), { recursive: true })
    for (const file of ['.git/objects/o', 'node_modules/x/i.js', 'build/out.js', 'docs/generated/api.md', 'docs/guide.md']) writeFileSync(join(root, file), 'x')
    await defaults.watcher.flush()
    await custom.watcher.flush()
    expect(defaults.log.lines().sort()).toEqual([`create ${root}/build/out.js`, `create ${root}/docs/generated/api.md`, `create ${root}/docs/guide.md`])
    expect(custom.log.lines().sort()).toEqual([`create ${root}/.git/objects/o`, `create ${root}/docs/guide.md`, `create ${root}/node_modules/x/i.js`])
  })

  it('polls on its own every intervalMs', async () => {
    const { root, handle } = workspace()
    const { log } = await watch(handle, { intervalMs: 50 })
    writeFileSync(join(root, 'later.txt'), 'x')
    expect((await log.until((e) => e.path.endsWith('/later.txt'))).type).toBe('create')
  })

  it('delivers nothing after stop(), which is idempotent, and logs start and stop', async () => {
    const { root, handle } = workspace()
    const { log, watcher, logged } = await watch(handle, { intervalMs: 50 })
    await Promise.all([watcher.stop(), watcher.stop()])
    writeFileSync(join(root, 'after-stop.txt'), 'x')
    await watcher.flush()
    await new Promise((resolve) => setTimeout(resolve, 200)) // several intervals: a running poll would have seen it
    expect(log.events).toEqual([])
    expect(logged[0]).toMatch(/^watching .* \(poll every 50 ms; ignore \.git, node_modules; files: 0\)$/)
    expect(logged.at(-1)).toMatch(/^stopped watching /)
  })

  it('keeps going when onEvent throws, and logs the throw', async () => {
    const { root, handle } = workspace()
    const seen: string[] = []
    const logged: string[] = []
    const watcher = await watchWorkspace(handle, {
      onEvent: (e) => {
        seen.push(e.path)
        throw new Error('subscriber bug')
      },
      intervalMs: 60_000,
      logger: { sandbox: (m) => void logged.push(m) },
    })
    cleanups.push(() => watcher.stop())
    writeFileSync(join(root, 'a.txt'), 'x')
    writeFileSync(join(root, 'b.txt'), 'x')
    await watcher.flush()
    expect(seen).toEqual([`${root}/a.txt`, `${root}/b.txt`])
    expect(logged.filter((m) => m.startsWith('watchWorkspace onEvent threw'))).toHaveLength(2)
  })

  it('reports names with newlines under their real names, never a record forged by one', async () => {
    const { root, handle } = workspace()
    const { log, watcher } = await watch(handle)
    const names = ['line\nbreak.txt', 'evil\n1 1 2026-01-01 00:00:00.000000000 +0000|..', 'trailing\n']
    for (const name of names) writeFileSync(join(root, name), 'x')
    await watcher.flush()
    expect(log.lines().sort()).toEqual(names.map((name) => `create ${root}/${name}`).sort())
    for (const name of names) unlinkSync(join(root, name))
    await watcher.flush()
    expect(log.lines().slice(3).sort()).toEqual(names.map((name) => `delete ${root}/${name}`).sort())
  })

  it('leaves out a name that is not UTF-8, logging it once', async () => {
    const { root, handle } = workspace()
    const { log, watcher, logged } = await watch(handle)
    execFileSync('sh', ['-c', "printf x > \"$(printf 'bad\\377.txt')\" && printf x > good.txt"], { cwd: root })
    await watcher.flush()
    await watcher.flush()
    expect(log.lines()).toEqual([`create ${root}/good.txt`])
    expect(logged.filter((m) => m.startsWith('watchWorkspace leaves out'))).toEqual([`watchWorkspace leaves out "./bad\\\\xff.txt" in sandbox ${handle.id}: its name is not UTF-8`])
  })

  it('fails to start with WorkspaceWatchError list-failed when the listing cannot run', async () => {
    const { handle } = workspace()
    const broken: SandboxHandle = { ...handle, process: { ...handle.process, exec: async () => ({ exitCode: 127, stdout: '', stderr: 'sh: find: not found' }) } }
    const error = await watchWorkspace(broken, { onEvent: () => undefined }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WorkspaceWatchError)
    expect(SandboxError.isInstance(error)).toBe(true)
    expect((error as WorkspaceWatchError).reason).toBe('list-failed')
    expect((error as Error).message).toMatch(/exit code 127: sh: find: not found.*needs `find`, `stat -c` and `base64`/)
  })

  it('validates its options', async () => {
    const { handle } = workspace()
    await expect(watchWorkspace(handle, {} as never)).rejects.toThrow(SandboxConfigError)
    await expect(watchWorkspace(handle, { onEvent: () => undefined, intervalMs: 5 })).rejects.toThrow(/watchWorkspace\.intervalMs: expected at least 50 ms/)
    // A longer delay would overflow setTimeout and poll every 1 ms.
    await expect(watchWorkspace(handle, { onEvent: () => undefined, intervalMs: 2 ** 31 })).rejects.toThrow(/watchWorkspace\.intervalMs: expected at most 2147483647 ms/)
    await expect(watchWorkspace(handle, { onEvent: () => undefined, ignore: [''] })).rejects.toThrow(/watchWorkspace\.ignore\.0/)
  })
})

describe('watchWorkspace (native fs.watch)', () => {
  /** A handle whose fs.watch is driven by the test, with lstat over the host directory. */
  function scripted() {
    const { root, handle } = workspace()
    let emit: (event: SandboxWatchEvent) => void = () => undefined
    let closed = false
    const native: SandboxHandle = {
      ...handle,
      fs: {
        ...handle.fs,
        watch: async (onEvent) => {
          emit = onEvent
          return { close: async () => void (closed = true) }
        },
        lstat: async (path) => {
          const { lstatSync } = await import('node:fs')
          const info = lstatSync(join(root, path))
          return { type: info.isDirectory() ? 'directory' : 'file', size: info.size, mode: info.mode & 0o777, mtimeMs: info.mtimeMs }
        },
      },
    }
    return { root, handle: native, emit: (type: SandboxWatchEvent['type'], path: string) => emit({ type, path, timestamp: 1 }), closed: () => closed }
  }

  it('coalesces each path\'s burst into one event, skips directories and temp files that came and went', async () => {
    const { root, handle, emit, closed } = scripted()
    const { log, watcher } = await watch(handle)
    expect(watcher.mode).toBe('native')
    mkdirSync(join(root, 'dir'))
    writeFileSync(join(root, 'dir/a.txt'), 'x')
    emit('create', 'dir')
    emit('create', 'dir/a.txt')
    emit('change', 'dir/a.txt')
    // An atomic write: a temp file appears, is written and renamed away.
    emit('create', 'dir/a.txt.tmp.1')
    emit('change', 'dir/a.txt.tmp.1')
    emit('delete', 'dir/a.txt.tmp.1')
    expect(await log.until(() => true), 'settled on its own after the quiet time').toEqual({ type: 'create', path: `${root}/dir/a.txt`, timestamp: 1 })
    await watcher.flush()
    expect(log.lines()).toEqual([`create ${root}/dir/a.txt`])

    writeFileSync(join(root, 'dir/a.txt'), 'y')
    emit('change', 'dir/a.txt')
    await watcher.flush()
    unlinkSync(join(root, 'dir/a.txt'))
    emit('delete', 'dir/a.txt')
    emit('delete', 'dir')
    await watcher.flush()
    expect(log.lines()).toEqual([`create ${root}/dir/a.txt`, `change ${root}/dir/a.txt`, `delete ${root}/dir/a.txt`])
    await watcher.stop()
    expect(closed()).toBe(true)
  })

  it('reconciles on flush what the native watcher missed, without repeating what it reported', async () => {
    const { root, handle, emit } = scripted()
    writeFileSync(join(root, 'kept.txt'), 'x')
    writeFileSync(join(root, 'removed.txt'), 'x')
    const { log, watcher } = await watch(handle)
    writeFileSync(join(root, 'reported.txt'), 'x')
    emit('create', 'reported.txt')
    writeFileSync(join(root, 'missed.txt'), 'x')
    writeFileSync(join(root, 'kept.txt'), 'changed')
    unlinkSync(join(root, 'removed.txt'))
    await watcher.flush()
    expect(log.lines()).toEqual([`create ${root}/reported.txt`, `change ${root}/kept.txt`, `create ${root}/missed.txt`, `delete ${root}/removed.txt`])
    // A late native event for something the flush already reported is never a second create.
    emit('create', 'missed.txt')
    await watcher.flush()
    expect(log.events.filter((e) => e.type === 'create' && e.path.endsWith('/missed.txt'))).toHaveLength(1)
  })
  it('drops native reports for files that did not change (a change, a delete of a file still there, a create of a known one)', async () => {
    const { root, handle, emit } = scripted()
    for (const name of ['foo_bar', 'foobar3', 'known.txt']) writeFileSync(join(root, name), 'same')
    const { log, watcher, logged } = await watch(handle)
    // What Node reports for the siblings of a removed foo/, and a late create.
    emit('change', 'foo_bar')
    emit('delete', 'foobar3')
    emit('create', 'known.txt')
    await watcher.flush()
    expect(log.lines()).toEqual([])
    expect(logged.filter((m) => m.startsWith('watchWorkspace dropped a native')).sort()).toEqual([
      `watchWorkspace dropped a native change for "foo_bar" of sandbox ${handle.id}: the file did not change`,
      `watchWorkspace dropped a native create for "known.txt" of sandbox ${handle.id}: the file did not change`,
      `watchWorkspace dropped a native delete for "foobar3" of sandbox ${handle.id}: the file did not change`,
    ])

    writeFileSync(join(root, 'foo_bar'), 'changed')
    emit('change', 'foo_bar')
    await watcher.flush()
    emit('change', 'foo_bar') // again, with nothing written since the last report
    await watcher.flush()
    expect(log.lines()).toEqual([`change ${root}/foo_bar`])
  })

  it('normalises native paths and drops, with a log, any that leaves the workspace root', async () => {
    const { root, handle, emit } = scripted()
    const outside = `${root}-outside.txt`
    writeFileSync(outside, 'x')
    cleanups.push(() => rmSync(outside, { force: true }))
    writeFileSync(join(root, 'b.txt'), 'x')
    const { log, watcher, logged } = await watch(handle)
    rmSync(join(root, 'b.txt'))
    writeFileSync(join(root, 'c.txt'), 'x')
    emit('create', `../${outside.split('/').at(-1)}`)
    emit('delete', 'a/../b.txt')
    emit('create', './c.txt')
    await watcher.flush()
    expect(log.lines()).toEqual([`delete ${root}/b.txt`, `create ${root}/c.txt`])
    for (const event of log.events) expect(event.path.startsWith(`${root}/`)).toBe(true)
    expect(logged.filter((m) => m.includes('not inside the workspace root'))).toEqual([`watchWorkspace dropped create "../${outside.split('/').at(-1)}" of sandbox ${handle.id}: not inside the workspace root ${root}`])
  })
})
