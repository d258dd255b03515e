/**
 * The run baseline on a fake handle whose exec runs on the host: the start
 * snapshot (a git repository, with files an earlier run left untracked or
 * uncommitted, one without a commit, and a plain folder through a private git
 * dir; the workspace's repository is never written and dispose removes the
 * temp files), the fallbacks (the start commit when the snapshot cannot be
 * recorded, add-patches without git), plus the add-patch format itself.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SandboxHandle } from '../../src/index.js'
import { addPatch, captureFileBaseline } from '../../src/watch/file-baseline.js'
import { durableRunFiles } from '../../src/journal/run-files.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/**
 * A workspace on the host and a handle whose fs.read reads it. Every exec
 * starts with `preamble` (shell functions can shadow `git` or `mktemp`) and
 * uses a private TMPDIR, so the test sees what the baseline leaves there.
 */
function workspace(preamble = ''): { root: string; temp: string; handle: SandboxHandle; git: (...args: string[]) => string } {
  const root = mkdtempSync(join(tmpdir(), 'tsbx-baseline-'))
  const temp = mkdtempSync(join(tmpdir(), 'tsbx-baseline-tmp-'))
  const fake = createFakeHandle(root)
  cleanups.push(() => rmSync(root, { recursive: true, force: true }), () => rmSync(temp, { recursive: true, force: true }), () => fake.destroy())
  const fs = { read: async (path: string) => readFileSync(path.startsWith('/') ? path : join(root, path), 'utf8') } as unknown as SandboxHandle['fs']
  const exec: SandboxHandle['process']['exec'] = (command, options) => fake.process.exec(`export TMPDIR='${temp}'\n${preamble}\n${command}`, options)
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: root, encoding: 'utf8' })
  return { root, temp, handle: { ...fake, fs, process: { ...fake.process, exec } }, git }
}

/** Shadows git in the sandbox's shell, as in an image without it. */
const NO_GIT = 'git() { return 127; }'

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

describe('captureFileBaseline without git in the sandbox', () => {
  it('records nothing: empty before, current after, and add-patches of what exists', async () => {
    const { root, temp, handle } = workspace(NO_GIT)
    writeFileSync(join(root, "it's a file.txt"), 'hello\n')
    const baseline = await captureFileBaseline(handle)
    expect(baseline.commit).toBeNull()
    expect(baseline.snapshot).toBeNull()
    expect(readdirSync(temp), 'nothing is left in the temp folder').toEqual([])
    expect(await baseline.before(`${root}/it's a file.txt`)).toBe('')
    expect(await baseline.after(`${root}/it's a file.txt`)).toBe('hello\n')
    expect(await baseline.after(`${root}/missing.txt`)).toBe('')
    const diffs = await baseline.diff([`${root}/it's a file.txt`, `${root}/missing.txt`])
    expect(diffs.get(`${root}/it's a file.txt`)).toBe(addPatch("it's a file.txt", 'hello\n'))
    expect(diffs.get(`${root}/missing.txt`)).toBe('')
  })

  it('diffs more files than one exec batch holds', async () => {
    const { root, handle } = workspace(NO_GIT)
    const paths = Array.from({ length: 230 }, (_, i) => `${root}/f${i}.txt`)
    for (const [i, path] of paths.entries()) writeFileSync(path, `file ${i}\n`)
    const diffs = await (await captureFileBaseline(handle)).diff(paths)
    expect(diffs.size).toBe(230)
    expect(diffs.get(`${root}/f229.txt`)).toBe(addPatch('f229.txt', 'file 229\n'))
  })
})

describe('captureFileBaseline in a plain folder, with git in the sandbox', () => {
  it("diffs against the folder as it was at the start, through a private git dir, and dispose removes it", async () => {
    const { root, temp, handle } = workspace()
    writeFileSync(join(root, "it's a file.txt"), 'hello\n')
    writeFileSync(join(root, 'kept.txt'), 'same\n')
    writeFileSync(join(root, 'doomed.txt'), 'old\n')
    mkdirSync(join(root, 'node_modules'))
    writeFileSync(join(root, 'node_modules/dep.js'), 'v1\n')
    const baseline = await captureFileBaseline(handle)
    expect(baseline.commit).toBeNull()
    expect(baseline.snapshot).toMatch(/^[0-9a-f]{40}$/)
    expect(existsSync(join(root, '.git')), 'the workspace is not made a repository').toBe(false)
    expect(readdirSync(temp)).toHaveLength(1)

    writeFileSync(join(root, "it's a file.txt"), 'hello\nagain\n')
    unlinkSync(join(root, 'doomed.txt'))
    writeFileSync(join(root, 'new.txt'), 'fresh\n')
    writeFileSync(join(root, 'node_modules/dep.js'), 'v2\n')
    expect(await baseline.before(`${root}/it's a file.txt`)).toBe('hello\n')
    expect(await baseline.before(`${root}/new.txt`)).toBe('')
    const paths = ["it's a file.txt", 'kept.txt', 'doomed.txt', 'new.txt', 'node_modules/dep.js', 'never.txt'].map((p) => `${root}/${p}`)
    const diffs = await baseline.diff(paths)
    expect(diffs.get(`${root}/it's a file.txt`), 'only the change, with no private blob ids').toBe("diff --git a/it's a file.txt b/it's a file.txt\n--- a/it's a file.txt\t\n+++ b/it's a file.txt\t\n@@ -1 +1,2 @@\n hello\n+again\n") // git ends a name with a space by a tab
    expect(diffs.get(`${root}/kept.txt`)).toBe('')
    expect(diffs.get(`${root}/doomed.txt`)).toBe('diff --git a/doomed.txt b/doomed.txt\ndeleted file mode 100644\n--- a/doomed.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n')
    expect(diffs.get(`${root}/new.txt`), 'a file the start lacks is an add-patch').toBe(addPatch('new.txt', 'fresh\n'))
    expect(diffs.get(`${root}/node_modules/dep.js`), 'ignored entries are not recorded').toBe(addPatch('node_modules/dep.js', 'v2\n'))
    expect(diffs.get(`${root}/never.txt`)).toBe('')

    await baseline.dispose()
    expect(readdirSync(temp), 'dispose removed the private git dir').toEqual([])
    expect((await baseline.diff([`${root}/kept.txt`])).get(`${root}/kept.txt`), 'after dispose nothing is recorded').toBe(addPatch('kept.txt', 'same\n'))
  })
})

describe('captureFileBaseline in a git repository', () => {
  it('diffs the working tree against the start, whatever the agent commits', async () => {
    const { root, handle, git } = workspace()
    git('init', '-q')
    writeFileSync(join(root, 'a.txt'), 'one\ntwo\n')
    writeFileSync(join(root, 'b.txt'), 'bee\n')
    git('add', '-A')
    git('commit', '-qm', 'base')
    const sha = git('rev-parse', 'HEAD').trim()
    const baseline = await captureFileBaseline(handle)
    expect(baseline.commit).toBe(sha)
    expect(baseline.snapshot).toBe(git('rev-parse', 'HEAD^{tree}').trim())

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

  it('shows only the change since the start for files left untracked or uncommitted before it, and never writes the repository', async () => {
    const { root, temp, handle, git } = workspace()
    git('init', '-q')
    writeFileSync(join(root, 'tracked.txt'), 'base\n')
    git('add', '-A')
    git('commit', '-qm', 'base')
    // What an earlier run left: an untracked file, an uncommitted change, an untouched untracked file.
    writeFileSync(join(root, 'notes.txt'), 'first\n')
    writeFileSync(join(root, 'tracked.txt'), 'base\nrun1\n')
    writeFileSync(join(root, 'other.txt'), 'other\n')
    const repoState = () => ({ status: git('status', '--porcelain'), index: readFileSync(join(root, '.git/index')).toString('base64'), objects: git('count-objects', '-v') })
    const before = repoState()

    const baseline = await captureFileBaseline(handle)
    writeFileSync(join(root, 'notes.txt'), 'first\nappended\n')
    writeFileSync(join(root, 'tracked.txt'), 'base\nrun1\nrun2\n')
    expect(await baseline.before(`${root}/notes.txt`)).toBe('first\n')
    const diffs = await baseline.diff(['notes.txt', 'tracked.txt', 'other.txt'].map((p) => `${root}/${p}`))
    expect(diffs.get(`${root}/notes.txt`)).toMatch(/^diff --git a\/notes\.txt b\/notes\.txt\nindex [0-9a-f]+\.\.[0-9a-f]+ 100644\n--- a\/notes\.txt\n\+\+\+ b\/notes\.txt\n@@ -1 \+1,2 @@\n first\n\+appended\n$/)
    expect(diffs.get(`${root}/tracked.txt`)).toMatch(/@@ -1,2 \+1,3 @@\n base\n run1\n\+run2\n$/)
    expect(diffs.get(`${root}/other.txt`)).toBe('')
    await baseline.dispose()

    writeFileSync(join(root, 'notes.txt'), 'first\n')
    writeFileSync(join(root, 'tracked.txt'), 'base\nrun1\n')
    expect(repoState(), "the repository's index and objects are as they were").toEqual(before)
    expect(readdirSync(temp)).toEqual([])
  })

  it('records a repository without a commit too', async () => {
    const { root, handle, git } = workspace()
    git('init', '-q')
    writeFileSync(join(root, 'a.txt'), 'x\n')
    const baseline = await captureFileBaseline(handle)
    expect(baseline.commit).toBeNull()
    expect(baseline.snapshot).toMatch(/^[0-9a-f]{40}$/)
    expect((await baseline.diff([`${root}/a.txt`])).get(`${root}/a.txt`), 'unchanged since the start').toBe('')
    writeFileSync(join(root, 'a.txt'), 'x\ny\n')
    expect((await baseline.diff([`${root}/a.txt`])).get(`${root}/a.txt`)).toMatch(/@@ -1 \+1,2 @@\n x\n\+y\n$/)
  })

  it('falls back to the start commit when the snapshot cannot be recorded', async () => {
    const { root, temp, handle, git } = workspace('mktemp() { return 1; }')
    git('init', '-q')
    writeFileSync(join(root, 'a.txt'), 'one\n')
    git('add', '-A')
    git('commit', '-qm', 'base')
    writeFileSync(join(root, 'left.txt'), 'from an earlier run\n')
    const baseline = await captureFileBaseline(handle)
    expect(baseline.snapshot).toBeNull()
    expect(baseline.commit).toBe(git('rev-parse', 'HEAD').trim())
    writeFileSync(join(root, 'a.txt'), 'one\ntwo\n')
    const diffs = await baseline.diff([`${root}/a.txt`, `${root}/left.txt`])
    expect(diffs.get(`${root}/a.txt`)).toContain('@@ -1 +1,2 @@\n one\n+two\n')
    expect(diffs.get(`${root}/left.txt`), 'untracked: new against the commit').toContain('+from an earlier run\n')
    expect(readdirSync(temp)).toEqual([])
  })
})

describe('captureFileBaseline with a durable snapshot folder (a run taken over by another host)', () => {
  /** A durable folder under the sandbox's temp folder, as `durableRunFiles(...).baseline` makes it beside a journal folder. */
  const durableDir = (temp: string, runId: string) => durableRunFiles(runId, join(temp, 'runs')).baseline

  it('in a repository: a later capture of the same run reuses the start, lists every path that differs from it, and only the last dispose removes it', async () => {
    const { root, temp, handle, git } = workspace()
    git('init', '-q')
    writeFileSync(join(root, '.gitignore'), 'build/\n')
    writeFileSync(join(root, 'tracked.txt'), 'base\n')
    writeFileSync(join(root, 'doomed.txt'), 'old\n')
    git('add', '-A')
    git('commit', '-qm', 'base')
    writeFileSync(join(root, 'left.txt'), 'an earlier run left this\n') // untracked before the run: part of its start
    const dir = durableDir(temp, 'run-A')
    expect(dir).toBe(`${temp}/runs/baseline-${dir.slice(-32)}`)
    expect(durableRunFiles('run-A', '/tmp/tanstack-runs/').baseline).toBe(`/tmp/tanstack-runs/baseline-${dir.slice(-32)}`)

    // Host 1 starts the run, the agent writes, and host 1 detaches: the folder stays.
    const first = await captureFileBaseline(handle, { snapshotDir: dir })
    expect(first.resumed).toBe(false)
    await first.rememberExcluded(['.mcp.json', 'odd\nname'])
    writeFileSync(join(root, 'tracked.txt'), 'base\nbefore the takeover\n')
    writeFileSync(join(root, 'early.txt'), 'written before the takeover\n')
    await first.dispose({ keep: true })
    expect(existsSync(join(dir, 'fields')), 'a detach keeps the folder').toBe(true)

    // Host 2 takes over: the same start, and what was excluded.
    const second = await captureFileBaseline(handle, { snapshotDir: dir })
    expect(second.resumed).toBe(true)
    expect(second.snapshot).toBe(first.snapshot)
    expect(second.excluded).toEqual(['.mcp.json', 'odd\nname'])
    unlinkSync(join(root, 'doomed.txt'))
    writeFileSync(join(root, 'late.txt'), 'written after the takeover\n')
    mkdirSync(join(root, 'node_modules'))
    writeFileSync(join(root, 'node_modules/dep.js'), 'ignored by the baseline\n')
    mkdirSync(join(root, 'build'))
    writeFileSync(join(root, 'build/out.js'), 'ignored by git\n')
    const changed = await second.changedFiles()
    expect(changed.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: `${root}/doomed.txt`, type: 'delete' },
      { path: `${root}/early.txt`, type: 'create' },
      { path: `${root}/late.txt`, type: 'create' },
      { path: `${root}/tracked.txt`, type: 'change' },
    ])
    const listed = changed.map((file) => file.path)
    const diffs = await second.diff(listed)
    expect(diffs.get(`${root}/tracked.txt`), 'the change since the run started, not since the takeover').toMatch(/@@ -1 \+1,2 @@\n base\n\+before the takeover\n$/)
    expect(diffs.get(`${root}/early.txt`)).toMatch(/new file mode[\s\S]*\+written before the takeover\n$/)
    expect(diffs.get(`${root}/doomed.txt`)).toMatch(/deleted file mode[\s\S]*-old\n$/)
    expect(await second.before(`${root}/left.txt`)).toBe('an earlier run left this\n')

    await second.dispose()
    expect(existsSync(dir), 'the end of the run removes the folder').toBe(false)
  })

  it('in a plain folder: the private git dir is reused the same way', async () => {
    const { root, temp, handle } = workspace()
    writeFileSync(join(root, 'a.txt'), 'one\n')
    const dir = durableDir(temp, 'run-B')
    const first = await captureFileBaseline(handle, { snapshotDir: dir })
    writeFileSync(join(root, 'a.txt'), 'one\ntwo\n')
    await first.dispose({ keep: true })
    const second = await captureFileBaseline(handle, { snapshotDir: dir })
    expect(second.resumed).toBe(true)
    writeFileSync(join(root, 'b.txt'), 'new\n')
    expect((await second.changedFiles()).sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: `${root}/a.txt`, type: 'change' },
      { path: `${root}/b.txt`, type: 'create' },
    ])
    expect((await second.diff([`${root}/a.txt`])).get(`${root}/a.txt`)).toMatch(/@@ -1 \+1,2 @@\n one\n\+two\n$/)
    await second.dispose()
    expect(existsSync(dir)).toBe(false)
  })

  it('records afresh over a folder whose snapshot no longer reads, and a temp baseline lists nothing it cannot', async () => {
    const { root, temp, handle } = workspace()
    writeFileSync(join(root, 'a.txt'), 'one\n')
    const dir = durableDir(temp, 'run-C')
    const first = await captureFileBaseline(handle, { snapshotDir: dir })
    await first.dispose({ keep: true })
    rmSync(join(dir, 'git'), { recursive: true, force: true }) // the objects are gone
    const second = await captureFileBaseline(handle, { snapshotDir: dir })
    expect(second.resumed).toBe(false)
    expect(second.snapshot).toMatch(/^[0-9a-f]{40}$/)
    await second.dispose()
    expect(existsSync(dir)).toBe(false)

    const none = await captureFileBaseline(workspace(NO_GIT).handle, { snapshotDir: durableDir(temp, 'run-D') })
    expect(none.resumed).toBe(false)
    expect(await none.changedFiles()).toEqual([])
  })
})
