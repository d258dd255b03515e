/**
 * The snapshot policy, pure: the spec's default exclusions path by path,
 * how `include`, `exclude` and `redact` combine with them, the projection
 * marker that no policy un-excludes, subtree exclusion, and option checks.
 */
import { describe, expect, it } from 'vitest'
import { defaultSandboxSnapshotPolicy, SandboxConfigError, type SandboxSnapshotPathInfo } from '../../src/index.js'
import { resolveSnapshotPolicy } from '../../src/snapshots/policy.js'

const file: SandboxSnapshotPathInfo = { type: 'file' }
const directory: SandboxSnapshotPathInfo = { type: 'directory' }

describe('defaultSandboxSnapshotPolicy', () => {
  const { exclude } = defaultSandboxSnapshotPolicy()

  it.each([
    ['.git', true],
    ['.git/HEAD', true],
    ['src/.git', true],
    ['a/b/.git/objects/ab', true],
    ['node_modules', true],
    ['packages/app/node_modules/x/index.js', true],
    ['.env', true],
    ['.env.local', true],
    ['config/.env.production', true],
    ['.envrc', true],
    ['.environment/x', true],
    ['.tanstack-projection.json', true],
    ['CLAUDE.md', true],
    ['GEMINI.md', true],
    ['.claude/skills/review', true],
    ['.claude/skills/review/SKILL.md', true],
    ['.codex/skills/lint', true],
    ['.grok/skills/plan/notes.md', true],
    // Not excluded: deeper or partial names, and the folders above the projected skills.
    ['src/.tanstack-projection.json', false],
    ['docs/CLAUDE.md', false],
    ['docs/GEMINI.md', false],
    ['AGENTS.md', false],
    ['.claude/skills', false],
    ['.claude/settings.json', false],
    ['src/.claude/skills/review/SKILL.md', false],
    ['.agents/skills/x', false],
    ['git/x', false],
    ['my.git/x', false],
    ['node_modules_backup/x', false],
    ['env/.gitignore', false],
    ['src/environment.ts', false],
    ['README.md', false],
  ])('%s is excluded: %s', (path, expected) => {
    expect(exclude(path, file)).toBe(expected)
    expect(exclude(path, directory), 'paths decide, not kinds').toBe(expected)
  })

  it('returns a fresh object each time, so spreading and changing one leaves the default alone', () => {
    const a = defaultSandboxSnapshotPolicy()
    const b = defaultSandboxSnapshotPolicy()
    expect(a).not.toBe(b)
    expect(Object.keys(a)).toEqual(['exclude'])
  })
})

describe('resolveSnapshotPolicy', () => {
  it('without a policy, applies the default exclusions and prunes their names in the sandbox', () => {
    const policy = resolveSnapshotPolicy(undefined, 'policy')
    expect(policy.decide('src/a.ts', file)).toBe('kept')
    expect(policy.decide('node_modules/x.js', file)).toBe('excluded')
    expect(policy.pruneNames).toEqual(['.git', 'node_modules', '.env*'])
  })

  it('include alone keeps the default exclusions, and exclusion wins over include', () => {
    const policy = resolveSnapshotPolicy({ include: () => true }, 'policy')
    expect(policy.decide('.env', file)).toBe('excluded')
    expect(policy.decide('src/.git/config', file)).toBe('excluded')
    const only = resolveSnapshotPolicy({ include: (path) => path === 'src/a.ts' }, 'policy')
    expect(only.decide('src/a.ts', file)).toBe('kept')
    expect(only.decide('src/b.ts', file)).toBe('out')
    expect(only.pruneNames.length, 'include alone still prunes the default names').toBe(3)
  })

  it('redact alone keeps the default exclusions', () => {
    const policy = resolveSnapshotPolicy({ redact: ({ bytes }) => bytes }, 'policy')
    expect(policy.decide('a/node_modules/b', file)).toBe('excluded')
    expect(policy.redact).toBeTypeOf('function')
  })

  it('exclude replaces the defaults, but never the root projection marker', () => {
    const policy = resolveSnapshotPolicy({ exclude: () => false, include: () => true }, 'policy')
    expect(policy.decide('.git/HEAD', file)).toBe('kept')
    expect(policy.decide('.env', file)).toBe('kept')
    expect(policy.decide('CLAUDE.md', file)).toBe('kept')
    expect(policy.decide('.tanstack-projection.json', file)).toBe('excluded')
    expect(policy.decide('src/.tanstack-projection.json', file)).toBe('kept')
    expect(policy.pruneNames, 'a replaced exclude prunes nothing in the sandbox').toEqual([])
  })

  it('a spread default policy is still the default (and prunes); an exclude that calls it is not', () => {
    const defaults = defaultSandboxSnapshotPolicy()
    expect(resolveSnapshotPolicy({ ...defaults, include: () => true }, 'policy').pruneNames.length).toBe(3)
    const composed = resolveSnapshotPolicy({ exclude: (path, entry) => defaults.exclude(path, entry) || path.startsWith('dist/') }, 'policy')
    expect(composed.decide('dist/x.js', file)).toBe('excluded')
    expect(composed.decide('.env', file)).toBe('excluded')
    expect(composed.pruneNames).toEqual([])
  })

  it('an excluded folder excludes everything under it, asking each ancestor once, as a directory', () => {
    const asked: string[] = []
    const policy = resolveSnapshotPolicy(
      {
        exclude: (path, entry) => {
          asked.push(`${entry.type} ${path}`)
          return path === 'tmp'
        },
      },
      'policy',
    )
    expect(policy.decide('tmp/a/b.txt', file)).toBe('excluded')
    expect(policy.decide('tmp/a/c.txt', file)).toBe('excluded')
    expect(policy.decide('src/a.ts', file)).toBe('kept')
    expect(asked).toEqual(['directory tmp', 'directory src', 'file src/a.ts'])
  })

  it('hands the entry kind to the predicates', () => {
    const policy = resolveSnapshotPolicy({ exclude: (_, entry) => entry.type === 'symlink' }, 'policy')
    expect(policy.decide('a', { type: 'symlink' })).toBe('excluded')
    expect(policy.decide('a', file)).toBe('kept')
  })

  it('refuses a member that is not a function, or an unknown key, naming the field', () => {
    expect(() => resolveSnapshotPolicy({ include: 'src/**' } as never, 'captureSandboxWorkspace.policy')).toThrow(SandboxConfigError)
    try {
      resolveSnapshotPolicy({ excludes: () => true } as never, 'captureSandboxWorkspace.policy')
      expect.unreachable()
    } catch (error) {
      expect(SandboxConfigError.isInstance(error) && error.field).toBe('captureSandboxWorkspace.policy.excludes')
    }
  })

  it('lets a throwing predicate throw, unchanged', () => {
    const boom = new Error('predicate failed')
    const policy = resolveSnapshotPolicy({
      include: () => {
        throw boom
      },
    }, 'policy')
    expect(() => policy.decide('a', file)).toThrow(boom)
  })
})
