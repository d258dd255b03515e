/**
 * What a restore removes and creates, pure: inside the policy's scope the
 * workspace is made to match the manifest; excluded and left-out entries
 * stay unless they stand where the manifest needs a file or a folder.
 */
import { describe, expect, it } from 'vitest'
import type { SandboxSnapshotEntry } from '../../src/index.js'
import { resolveSnapshotPolicy } from '../../src/snapshots/policy.js'
import { planRestore } from '../../src/snapshots/restore-plan.js'
import type { ListedEntry } from '../../src/snapshots/tree-listing.js'

const SHA = 'a'.repeat(64)
const file = (path: string): SandboxSnapshotEntry => ({ path, type: 'file', mode: 0o644, size: 0, sha256: SHA })
const listed = (spec: Record<string, ListedEntry['kind']>): ListedEntry[] => Object.entries(spec).map(([path, kind]) => ({ path, kind }))
const defaults = resolveSnapshotPolicy(undefined, 'policy')

describe('planRestore', () => {
  it('into an empty workspace removes nothing and creates the folders, parents first', () => {
    const plan = planRestore([file('a/b/c.txt'), file('a/d.txt'), { path: 'e', type: 'directory', mode: 0o700 }], [], defaults)
    expect(plan.remove).toEqual([])
    expect(plan.createDirectories).toEqual(['a', 'a/b'])
    expect(plan.entries).toHaveLength(3)
  })

  it('removes kept entries the manifest lacks (a folder with everything in it) and keeps excluded ones', () => {
    const plan = planRestore(
      [file('src/a.ts'), file('keep/x.txt')],
      listed({ src: 'directory', 'src/a.ts': 'file', 'src/stale.ts': 'file', 'src/run.sh': 'executable', 'gone': 'directory', 'gone/node_modules': 'directory', keep: 'directory', '.git': 'directory', '.env': 'file', 'src/link': 'symlink', fifo: 'other' }),
      defaults,
    )
    expect(plan.remove).toEqual(['fifo', 'gone', 'src/link', 'src/run.sh', 'src/stale.ts'])
    expect(plan.createDirectories).toEqual([])
  })

  it('removes whatever stands where the manifest needs a file or a folder, even entries the policy excludes', () => {
    const policy = resolveSnapshotPolicy({ exclude: (_, entry) => entry.type === 'symlink' || entry.type === 'other' }, 'policy')
    const plan = planRestore([file('a/b.txt'), file('c.txt'), { path: 'd', type: 'directory', mode: 0o755 }], listed({ a: 'symlink', 'c.txt': 'directory', 'c.txt/x': 'file', d: 'other' }), policy)
    expect(plan.remove).toEqual(['a', 'c.txt', 'd'])
    expect(plan.createDirectories, 'a replaced folder is created again').toEqual(['a'])
  })

  it('does not touch, nor write, what the policy leaves out', () => {
    const policy = resolveSnapshotPolicy({ include: (path) => path.startsWith('large/') }, 'policy')
    const plan = planRestore([file('large/a.txt'), file('other.txt')], listed({ 'notes.txt': 'file', large: 'directory', 'large/stale.txt': 'file' }), policy)
    expect(plan.skipped).toEqual(['other.txt'])
    expect(plan.entries.map((entry) => entry.path)).toEqual(['large/a.txt'])
    expect(plan.remove).toEqual(['large/stale.txt'])
  })

  it('skips manifest entries the policy excludes, the root projection marker included', () => {
    const policy = resolveSnapshotPolicy({ exclude: () => false }, 'policy')
    const plan = planRestore([file('.git/config'), file('.tanstack-projection.json')], [], policy)
    expect(plan.entries.map((entry) => entry.path)).toEqual(['.git/config'])
    expect(plan.skipped).toEqual(['.tanstack-projection.json'])
  })
})
