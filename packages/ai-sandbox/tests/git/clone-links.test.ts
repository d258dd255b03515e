/**
 * `git.clone({ dir })` never goes through a symlink: git would create the
 * missing directories through it and write the clone outside the workspace.
 * Five link shapes (the dir itself, a parent, an absolute outside target, a
 * relative `..` climb, a chain), plus a link that stays inside, are refused
 * with `SandboxPathError` `symlink-escape` naming `dir`, and the outside
 * folder is left exactly as it was. Real git and a real shell on the host
 * through the fake handle; a plain nested `dir` still clones.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxPathError } from '../../src/index.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const root = realpathSync(mkdtempSync(join(tmpdir(), 'tsbx-clone-links-')))
const workspace = join(root, 'ws')
const outside = join(root, 'outside')
const git = (args: string[], cwd = root) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { cwd, stdio: 'pipe' })

/** Every path under `dir`, sorted: the canary's fingerprint. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()
}

beforeAll(() => {
  mkdirSync(workspace)
  mkdirSync(join(outside, 'self-target'), { recursive: true })
  git(['init', '-q', 'seed'])
  git(['-C', 'seed', 'commit', '-q', '--allow-empty', '-m', 'seed'])
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('git.clone({ dir }) through symlinks', () => {
  const handle = createFakeHandle(workspace)
  const url = `file://${join(root, 'seed')}`

  const shapes: { shape: string; link: string; target: string; dir: string }[] = [
    { shape: 'the dir itself is a link to an outside folder', link: 'self', target: join(outside, 'self-target'), dir: 'self' },
    { shape: 'a parent is a relative link to the outside folder', link: 'parent', target: '../outside', dir: 'parent/repo' },
    { shape: 'a link to an absolute outside path, with missing folders after it', link: 'abs', target: outside, dir: 'abs/deep/er/repo' },
    { shape: 'a relative link climbing out with ..', link: 'sub/up', target: '../..', dir: 'sub/up/outside/dotdot-repo' },
    { shape: 'a chain of links ending outside', link: 'chain-1', target: 'chain-2', dir: 'chain-1/repo' },
  ]

  beforeAll(() => {
    mkdirSync(join(workspace, 'sub'))
    symlinkSync(outside, join(workspace, 'chain-2'))
    for (const { link, target } of shapes) symlinkSync(target, join(workspace, link))
    mkdirSync(join(workspace, 'real'))
    symlinkSync('real', join(workspace, 'inside-link'))
  })

  for (const { shape, dir } of shapes) {
    it(`refuses ${shape} (${dir})`, async () => {
      const before = tree(outside)
      const error = await handle.git.clone({ url, dir }).catch((e: unknown) => e)
      expect(SandboxPathError.isInstance(error), String(error)).toBe(true)
      expect(error).toMatchObject({ reason: 'symlink-escape', path: dir })
      expect((error as Error).message).toMatch(/symlink/)
      expect(tree(outside), 'nothing was created outside the workspace').toEqual(before)
    })
  }

  it('refuses a link that stays inside too, and clones into plain nested folders', async () => {
    const error = await handle.git.clone({ url, dir: 'inside-link/repo' }).catch((e: unknown) => e)
    expect(error).toMatchObject({ reason: 'symlink-escape', path: 'inside-link/repo' })
    expect(readdirSync(join(workspace, 'real'))).toEqual([])
    await handle.git.clone({ url, dir: 'plain/nested/repo' })
    expect(existsSync(join(workspace, 'plain/nested/repo/.git'))).toBe(true)
    await handle.git.clone({ url, dir: '/workspace/virtual' })
    expect(existsSync(join(workspace, 'virtual/.git'))).toBe(true)
  })
})
