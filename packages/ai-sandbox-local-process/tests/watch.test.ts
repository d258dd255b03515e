/**
 * The provider's own `fs.watch` checks Node's reports against the
 * filesystem: removing a directory reports its files and itself, never the
 * siblings that share its name prefix (which Node's recursive watcher on
 * Linux reports too), while a same-size rewrite is still a change. A sentinel
 * written last proves the earlier reports were handled (events keep order).
 */
import { describe, expect, it } from 'vitest'
import type { SandboxWatchEvent } from '@tanstack/ai-sandbox'
import { useTempRoot, waitFor } from './helpers/temp-root.js'

const temp = useTempRoot()

describe('fs.watch verifies native reports', () => {
  it('rm -rf foo reports foo and its files, never foo_bar, foobar3 or foobar_dir', async () => {
    const handle = await temp.create()
    const made = await handle.process.exec('mkdir -p foo/sub foobar_dir && echo 1 > foo/a.txt && echo 2 > foo/sub/b.txt && echo 3 > foo_bar && echo 4 > foobar3 && echo 5 > foobar_dir/c.txt')
    expect(made.exitCode).toBe(0)
    const events: SandboxWatchEvent[] = []
    const watcher = await handle.fs.watch!((event) => events.push(event))
    const seen = (type: string, path: string) => events.some((event) => event.type === type && event.path === path)

    expect((await handle.process.exec('rm -rf foo')).exitCode).toBe(0)
    await waitFor(() => seen('delete', 'foo'), 'delete foo')
    await handle.fs.write('sentinel.txt', 's')
    await waitFor(() => seen('create', 'sentinel.txt'), 'create sentinel.txt')
    await watcher.close()

    // The sentinel's create may be followed by a change (Node reports the open and the write apart).
    expect(events.filter((event) => event.path !== 'sentinel.txt').map((event) => `${event.type} ${event.path}`).sort()).toEqual(['delete foo', 'delete foo/a.txt', 'delete foo/sub', 'delete foo/sub/b.txt'])
  })

  it('a same-size rewrite and a replacement by rename are changes', async () => {
    const handle = await temp.create()
    await handle.fs.write('a.txt', 'aaa')
    await handle.fs.write('b.txt', 'one')
    const events: SandboxWatchEvent[] = []
    const watcher = await handle.fs.watch!((event) => events.push(event))
    const seen = (type: string, path: string) => events.some((event) => event.type === type && event.path === path)

    await handle.fs.write('a.txt', 'bbb')
    await waitFor(() => seen('change', 'a.txt'), 'change a.txt')
    expect((await handle.process.exec('echo two > b.tmp && mv b.tmp b.txt')).exitCode).toBe(0)
    await waitFor(() => seen('change', 'b.txt'), 'change b.txt')
    await watcher.close()
    expect(events.filter((event) => !event.path.startsWith('b.tmp')).map((event) => `${event.type} ${event.path}`)).toEqual(expect.arrayContaining(['change a.txt', 'change b.txt']))
  })
})
