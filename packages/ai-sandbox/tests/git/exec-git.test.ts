/**
 * The exec-backed git never lets a ref, branch or remote be read as an option:
 * `--branch=<ref>` on clone; push and pull refuse a remote or branch starting
 * with `-` (`git pull -- x` still hands `x` to fetch as an option). Real git
 * on the host through the fake handle; each hostile value would run a command
 * (`--upload-pack`, `--receive-pack`) if git parsed it as an option.
 */
import { execFileSync } from 'node:child_process'
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
