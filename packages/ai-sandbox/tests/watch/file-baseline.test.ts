/**
 * The run baseline on a fake handle whose exec runs on the host: git mode
 * (the commit at the run's start; modified, deleted, untracked, staged and
 * later-committed files) and non-git mode (synthesized add-patches), plus the
 * add-patch format itself.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SandboxHandle } from '../../src/index.js'
import { addPatch, captureFileBaseline } from '../../src/watch/file-baseline.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A workspace on the host and a handle whose fs.read reads it. */
function workspace(): { root: string; handle: SandboxHandle; git: (...args: string[]) => string } {
  const root = mkdtempSync(join(tmpdir(), 'tsbx-baseline-'))
  const fake = createFakeHandle(root)
  cleanups.push(() => rmSync(root, { recursive: true, force: true }), () => fake.destroy())
  const fs = { read: async (path: string) => readFileSync(path.startsWith('/') ? path : join(root, path), 'utf8') } as unknown as SandboxHandle['fs']
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: root, encoding: 'utf8' })
  return { root, handle: { ...fake, fs }, git }
}

describe('addPatch', () => {
  it('prints a git-style new-file patch', () => {
    expect(addPatch('a.txt', 'one\ntwo\n')).toBe('diff --git a/a.txt b/a.txt\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n')
    expect(addPatch('a.txt', 'one\n')).toBe('diff --git a/a.txt b/a.txt\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+one\n')
  })

  it('marks a missing final newline, and handles empty and binary files', () => {
    expect(addPatch('a', 'x')).toBe('diff --git a/a b/a\n--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n')
    expect(addPatch('e', '')).toBe('diff --git a/e b/e\n--- /dev/null\n+++ b/e\n')
    expect(addPatch('b.bin', 'a\0b')).toBe('diff --git a/b.bin b/b.bin\nBinary files /dev/null and b/b.bin differ\n')
  })

  it('matches what git prints for the same new file (apart from its mode and index lines)', () => {
    const { root } = workspace()
    writeFileSync(join(root, 'n.txt'), 'alpha\nbeta')
    let gitPatch = ''
    try {
      execFileSync('git', ['diff', '--no-color', '--no-index', '--', '/dev/null', 'n.txt'], { cwd: root, encoding: 'utf8' })
    } catch (error) {
      gitPatch = (error as { stdout: string }).stdout // exit 1: the files differ
    }
    expect(addPatch('n.txt', 'alpha\nbeta')).toBe(gitPatch.replace(/^new file mode \d+\n/m, '').replace(/^index .*\n/m, ''))
  })
})

describe('captureFileBaseline without git', () => {
  it('has no commit, empty before, current after, and add-patches of what exists', async () => {
    const { root, handle } = workspace()
    writeFileSync(join(root, "it's a file.txt"), 'hello\n')
    const baseline = await captureFileBaseline(handle)
    expect(baseline.commit).toBeNull()
    expect(await baseline.before(`${root}/it's a file.txt`)).toBe('')
    expect(await baseline.after(`${root}/it's a file.txt`)).toBe('hello\n')
    expect(await baseline.after(`${root}/missing.txt`)).toBe('')
    const diffs = await baseline.diff([`${root}/it's a file.txt`, `${root}/missing.txt`])
    expect(diffs.get(`${root}/it's a file.txt`)).toBe(addPatch("it's a file.txt", 'hello\n'))
    expect(diffs.get(`${root}/missing.txt`)).toBe('')
  })

  it('diffs more files than one exec batch holds', async () => {
    const { root, handle } = workspace()
    const paths = Array.from({ length: 230 }, (_, i) => `${root}/f${i}.txt`)
    for (const [i, path] of paths.entries()) writeFileSync(path, `file ${i}\n`)
    const diffs = await (await captureFileBaseline(handle)).diff(paths)
    expect(diffs.size).toBe(230)
    expect(diffs.get(`${root}/f229.txt`)).toBe(addPatch('f229.txt', 'file 229\n'))
  })
})

describe('captureFileBaseline in a git repository', () => {
  it('diffs the working tree against the commit HEAD had at the start', async () => {
    const { root, handle, git } = workspace()
    git('init', '-q')
    writeFileSync(join(root, 'a.txt'), 'one\ntwo\n')
    writeFileSync(join(root, 'b.txt'), 'bee\n')
    git('add', '-A')
    git('commit', '-qm', 'base')
    const sha = git('rev-parse', 'HEAD').trim()
    const baseline = await captureFileBaseline(handle)
    expect(baseline.commit).toBe(sha)

    writeFileSync(join(root, 'a.txt'), 'one\nTWO\n')
    unlinkSync(join(root, 'b.txt'))
    writeFileSync(join(root, 'untracked new.txt'), 'fresh\n')
    writeFileSync(join(root, 'staged.txt'), 'staged\n')
    git('add', 'staged.txt')
    writeFileSync(join(root, 'committed.txt'), 'later\n')
    git('add', 'committed.txt')
    git('commit', '-qm', 'agent commit') // HEAD moves; the baseline does not

    expect(await baseline.before(`${root}/a.txt`)).toBe('one\ntwo\n')
    expect(await baseline.before(`${root}/committed.txt`), 'a file the baseline lacks').toBe('')
    const paths = ['a.txt', 'b.txt', 'untracked new.txt', 'staged.txt', 'committed.txt', 'never.txt'].map((p) => `${root}/${p}`)
    const diffs = await baseline.diff(paths)
    expect(diffs.get(`${root}/a.txt`)).toContain('--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n')
    expect(diffs.get(`${root}/b.txt`)).toContain('deleted file mode 100644')
    expect(diffs.get(`${root}/b.txt`)).toContain('-bee\n')
    expect(diffs.get(`${root}/untracked new.txt`)).toMatch(/^diff --git a\/untracked new\.txt b\/untracked new\.txt\nnew file mode 100644\n[\s\S]*\+fresh\n$/)
    expect(diffs.get(`${root}/staged.txt`)).toContain('+staged\n')
    expect(diffs.get(`${root}/committed.txt`)).toContain('+later\n')
    expect(diffs.get(`${root}/never.txt`)).toBe('')
  })

  it('treats a repository without a commit as non-git', async () => {
    const { root, handle, git } = workspace()
    git('init', '-q')
    writeFileSync(join(root, 'a.txt'), 'x\n')
    const baseline = await captureFileBaseline(handle)
    expect(baseline.commit).toBeNull()
    expect((await baseline.diff([`${root}/a.txt`])).get(`${root}/a.txt`)).toBe(addPatch('a.txt', 'x\n'))
  })
})
