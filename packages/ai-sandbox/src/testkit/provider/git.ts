/**
 * `handle.git` conformance against the sandbox's own git: a repository made
 * with `git init` (status, add, commit, branch), and a bare repository cloned
 * over `file://` (clone, push, pull). Repositories are set up with `exec`, so
 * the group needs `exec` and a `git` on PATH; without them it skips by name.
 */
import { posix } from 'node:path'
import { describe, expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import { expectSandboxError } from './assert.js'
import { conformanceCase, skippedCase, useSharedSandbox } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { q, scratch, sh } from './io.js'

const IDENTITY = "-c user.name='Conformance' -c user.email=conformance@example.invalid"
const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/

/** status, add, commit (with author and allowEmpty) and branch on a repository made with `git init`. */
export async function checkGitLocalRepo(handle: SandboxHandle): Promise<void> {
  const dir = scratch('git-local')
  await sh(handle, `mkdir -p ${q(dir)} && cd ${q(dir)} && git init -q && git symbolic-ref HEAD refs/heads/main && printf 'one\\n' > a.txt`)
  const untracked = await handle.git.status({ dir })
  expect(untracked.branch, 'git.status reports the current branch of a repo without commits').toBe('main')
  expect(untracked.clean, 'git.status is not clean with an untracked file').toBe(false)
  expect(untracked.entries, 'git.status lists an untracked file with code "??"').toEqual([{ path: 'a.txt', code: '??' }])
  await handle.git.add(undefined, { dir })
  expect((await handle.git.status({ dir })).entries, 'git.add() stages everything (code "A ")').toEqual([{ path: 'a.txt', code: 'A ' }])
  const first = await handle.git.commit('first commit', { dir })
  expect(first.sha, 'git.commit returns the new commit sha').toMatch(SHA)
  const head = await sh(handle, 'git rev-parse HEAD && git log -1 --format=%s', { cwd: dir })
  expect(head.stdout, 'git.commit made HEAD with the given message').toBe(`${first.sha}\nfirst commit\n`)
  expect((await handle.git.status({ dir })).clean, 'git.status is clean after committing everything').toBe(true)
  await sh(handle, `printf 'two\\n' >> a.txt && printf 'x' > b.txt`, { cwd: dir })
  await handle.git.add(['a.txt'], { dir })
  expect((await handle.git.status({ dir })).entries, 'git.add(paths) stages only those paths').toEqual([
    { path: 'a.txt', code: 'M ' },
    { path: 'b.txt', code: '??' },
  ])
  const second = await handle.git.commit('second', { dir, author: { name: 'Ada Author', email: 'ada@example.invalid' } })
  const author = await sh(handle, 'git log -1 --format="%an <%ae>"', { cwd: dir })
  expect(author.stdout.trim(), 'git.commit({ author }) records that author').toBe('Ada Author <ada@example.invalid>')
  const empty = await handle.git.commit('empty', { dir, allowEmpty: true })
  expect(empty.sha, 'git.commit({ allowEmpty }) creates a new commit').not.toBe(second.sha)
  await expectSandboxError(() => handle.git.commit('nothing staged', { dir }), 'a failing git command rejects with a SandboxError (commit with nothing staged)')
  expect(await handle.git.branch('feature', { dir }), 'git.branch(name) creates and returns the branch').toEqual({ name: 'feature' })
  expect(await handle.git.branch(undefined, { dir }), 'git.branch(name) checks the new branch out').toEqual({ name: 'feature' })
  expect(await handle.git.branch('side', { dir, checkout: false }), 'git.branch(name, { checkout: false }) returns the new name').toEqual({ name: 'side' })
  expect(await handle.git.branch(undefined, { dir }), 'git.branch(name, { checkout: false }) leaves the current branch alone').toEqual({ name: 'feature' })
  expect((await sh(handle, 'git branch --list side', { cwd: dir })).stdout.trim(), 'git.branch(name, { checkout: false }) creates the branch').toBe('side')
}

/** clone over `file://` into a folder, push a branch to the bare repository, pull a new commit. */
export async function checkGitCloneRemote(handle: SandboxHandle): Promise<void> {
  const dir = scratch('git-remote')
  const clone = `${dir}/clone`
  await sh(
    handle,
    [
      `mkdir -p ${q(dir)} && cd ${q(dir)}`,
      'git init -q --bare remote.git && git -C remote.git symbolic-ref HEAD refs/heads/main',
      'git init -q seed && cd seed && git symbolic-ref HEAD refs/heads/main',
      `printf 'seed\\n' > README.md && git add -A && git ${IDENTITY} commit -q -m seed && git push -q ../remote.git main`,
    ].join(' && '),
  )
  const url = `file://${posix.join(handle.workspaceRoot, dir, 'remote.git')}`
  await handle.git.clone({ url, dir: clone })
  expect((await sh(handle, 'cat README.md', { cwd: clone })).stdout, 'git.clone({ url, dir }) checks the repository out into dir').toBe('seed\n')
  const status = await handle.git.status({ dir: clone })
  expect({ branch: status.branch, clean: status.clean }, 'a fresh clone is clean on the default branch').toEqual({ branch: 'main', clean: true })
  await handle.git.branch('feature', { dir: clone })
  await sh(handle, `printf 'feature\\n' > feature.txt`, { cwd: clone })
  await handle.git.add(undefined, { dir: clone })
  const { sha } = await handle.git.commit('feature work', { dir: clone })
  await handle.git.push({ dir: clone, branch: 'feature' })
  const remoteSha = await sh(handle, 'git -C remote.git rev-parse refs/heads/feature', { cwd: dir })
  expect(remoteSha.stdout.trim(), 'git.push({ branch }) updates that branch on the remote').toBe(sha)
  await sh(handle, `cd seed && printf 'more\\n' > second.txt && git add -A && git ${IDENTITY} commit -q -m second && git push -q ../remote.git main`, { cwd: dir })
  await sh(handle, 'git checkout -q main', { cwd: clone })
  await handle.git.pull({ dir: clone, branch: 'main' })
  expect((await sh(handle, 'cat second.txt', { cwd: clone })).stdout, 'git.pull({ branch }) brings in the remote commit').toBe('more\n')
}

/** Register the git group. */
export function registerGitConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  describe('git', () => {
    if (!ctx.capabilities.exec) {
      skippedCase('git', 'repositories are set up with exec, and capabilities().exec is false')
      return
    }
    if (!ctx.tools.git) {
      skippedCase('git', ctx.tools.missing.git ?? 'git not found in the sandbox')
      return
    }
    const sandbox = useSharedSandbox(getContext)
    conformanceCase(ctx, 'status, add, commit and branch on a git init repo', () => checkGitLocalRepo(sandbox()))
    conformanceCase(ctx, 'clone a file:// bare repo, push and pull', () => checkGitCloneRemote(sandbox()))
  })
}
