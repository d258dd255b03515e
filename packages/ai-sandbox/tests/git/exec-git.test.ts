/**
 * The exec-backed git never lets a ref, branch or remote be read as an option:
 * `--branch=<ref>` on clone; push and pull refuse a remote or branch starting
 * with `-` (`git pull -- x` still hands `x` to fetch as an option). Real git
 * on the host through the fake handle; each hostile value would run a command
 * (`--upload-pack`, `--receive-pack`) if git parsed it as an option.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError } from '../../src/index.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const root = mkdtempSync(join(tmpdir(), 'tsbx-exec-git-'))
const marker = join(root, 'ran-as-option')
const git = (args: string[], cwd = root) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { cwd, stdio: 'pipe' })

beforeAll(() => {
  git(['init', '-q', '--bare', 'remote.git'])
  git(['-C', 'remote.git', 'symbolic-ref', 'HEAD', 'refs/heads/main'])
  git(['init', '-q', 'seed'])
  git(['-C', 'seed', 'symbolic-ref', 'HEAD', 'refs/heads/main'])
  git(['-C', 'seed', 'commit', '-q', '--allow-empty', '-m', 'seed'])
  git(['-C', 'seed', 'push', '-q', '../remote.git', 'main'])
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('createExecBackedGit: values are never options', () => {
  const handle = createFakeHandle(root)
  const url = `file://${join(root, 'remote.git')}`

  it('clone passes ref as --branch=<ref>', async () => {
    const error = await handle.git.clone({ url, dir: 'c1', ref: `--upload-pack=touch ${marker};git-upload-pack` }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect((error as Error).message).toMatch(/Remote branch --upload-pack=.* not found/)
    expect(existsSync(marker)).toBe(false)
    await handle.git.clone({ url, dir: 'c2', ref: 'main' })
    expect(existsSync(join(root, 'c2/.git'))).toBe(true)
  })

  it('push and pull refuse a remote or branch that git would read as an option', async () => {
    await handle.git.clone({ url, dir: 'work' })
    const hostile = `--receive-pack=touch ${marker};git-receive-pack`
    const cases: [string, () => Promise<unknown>][] = [
      ['git.push.branch', () => handle.git.push({ dir: 'work', branch: hostile })],
      ['git.push.remote', () => handle.git.push({ dir: 'work', remote: hostile })],
      ['git.pull.remote', () => handle.git.pull({ dir: 'work', remote: `--upload-pack=touch ${marker};git-upload-pack` })],
      ['git.pull.branch', () => handle.git.pull({ dir: 'work', branch: `--upload-pack=touch ${marker};git-upload-pack` })],
    ]
    for (const [field, call] of cases) {
      const error = await call().catch((e: unknown) => e)
      expect(error, field).toBeInstanceOf(SandboxConfigError)
      expect((error as SandboxConfigError).field).toBe(field)
      expect((error as Error).message).toMatch(/starts with "-", which git would read as an option/)
    }
    expect(existsSync(marker), 'no hostile value ran as an option').toBe(false)
    await handle.git.push({ dir: 'work', branch: 'main' })
    await handle.git.pull({ dir: 'work', branch: 'main' })
  })
})

describe('createExecBackedGit: status', () => {
  const handle = createFakeHandle(root)

  it('reads NUL-separated entries: a rename is one entry, even when its source name looks like an entry', async () => {
    git(['init', '-q', 'st'])
    git(['-C', 'st', 'symbolic-ref', 'HEAD', 'refs/heads/main'])
    const source = '?? looks like an entry\n## main'
    execFileSync('sh', ['-c', 'printf x > "$1"', 'sh', join(root, 'st', source)])
    git(['-C', 'st', 'add', '--', source])
    git(['-C', 'st', 'commit', '-q', '-m', 'one'])
    git(['-C', 'st', 'mv', '--', source, 'é x'])
    expect(await handle.git.status({ dir: 'st' })).toEqual({ branch: 'main', clean: false, entries: [{ code: 'R ', path: 'é x' }] })
    git(['-C', 'st', 'commit', '-q', '-m', 'two'])
    git(['-C', 'st', 'checkout', '-q', '--detach'])
    expect(await handle.git.status({ dir: 'st' })).toEqual({ branch: null, clean: true, entries: [] })
  })
})

describe('createExecBackedGit: a local repository of another owner', () => {
  // Issue 30: a bind-mounted or host repository usually belongs to another uid than the clone's, and git refuses
  // it ("dubious ownership") unless it is a safe.directory; the clone names exactly its source as safe.
  const owned = mkdtempSync(join(tmpdir(), 'tsbx-exec-git-owner-'))
  const handle = createFakeHandle(owned)
  afterAll(() => rmSync(owned, { recursive: true, force: true }))

  it.skipIf(process.getuid?.() !== 0)('clones a repository that belongs to another uid, bare or not, by path or file:// URL (needs root to chown)', async () => {
    git(['init', '-q', 'theirs'], owned)
    git(['-C', 'theirs', 'commit', '-q', '--allow-empty', '-m', 'theirs'], owned)
    git(['clone', '-q', '--bare', 'theirs', 'theirs.git'], owned)
    execFileSync('chown', ['-R', '12345:12345', join(owned, 'theirs'), join(owned, 'theirs.git')])
    // Without the fix git refuses it, as a plain `git clone` here shows.
    expect(() => execFileSync('git', ['clone', '-q', join(owned, 'theirs'), join(owned, 'plain')], { stdio: 'pipe' })).toThrow(/dubious ownership/)
    await handle.git.clone({ url: `file://${join(owned, 'theirs')}`, dir: 'by-url' })
    await handle.git.clone({ url: join(owned, 'theirs.git'), dir: 'by-path' })
    expect(existsSync(join(owned, 'by-url/.git'))).toBe(true)
    expect(existsSync(join(owned, 'by-path/.git'))).toBe(true)
    // Nothing was written to a config git reads later: no safe.directory is set for the clone (exit 1: no value).
    expect(spawnSync('git', ['config', '--get-all', 'safe.directory'], { cwd: join(owned, 'by-url') }).status).toBe(1)
  })
})
