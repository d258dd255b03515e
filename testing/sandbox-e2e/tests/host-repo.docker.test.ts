/**
 * Issue 30: a workspace cloned from a host repository bind-mounted into a
 * Docker sandbox, under the provider's default user (`1000:1000`) while the
 * repository belongs to this process's uid (root in CI): git's "dubious
 * ownership" refusal must not stop the clone, and no system config has to be
 * mounted for it (the web example used to mount a read-only /etc/gitconfig).
 */
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, gitSource } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `host-repo-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([DEBIAN], { needsBridge: false })

describeWithDocker('a workspace cloned from a mounted host repository (Docker)', reason, () => {
  const host = mkdtempSync(join(tmpdir(), 'tsbx-host-repo-'))
  afterAll(async () => {
    rmSync(host, { recursive: true, force: true })
    await pruneDockerSandboxes({ labels: RUN })
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'no container, image or volume with our labels is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  /** A one-commit repository under the host folder that is not the container user's (1000:1000): the cases mean nothing otherwise. */
  function hostRepo(name: string, text: string, message: string): string {
    const repo = join(host, name)
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { cwd: host, stdio: 'pipe' })
    git('init', '-q', '-b', 'main', repo)
    writeFileSync(join(repo, 'README.md'), text)
    git('-C', repo, 'add', '-A')
    git('-C', repo, 'commit', '-q', '-m', message)
    if (statSync(repo).uid === 1000) execFileSync('chown', ['-R', '12345:12345', repo])
    return repo
  }

  it('clones under the default user a repository that belongs to another uid', async () => {
    const repo = hostRepo('origin', 'from the host\n', 'host commit')
    const sandbox = defineSandbox({
      id: 'host-repo-docker',
      provider: dockerSandbox({ image: DEBIAN, labels: RUN, killGraceMs: 500, mounts: [{ source: repo, target: '/mnt/origin', readOnly: true }] }),
      workspace: defineWorkspace({ source: gitSource({ url: 'file:///mnt/origin' }) }),
      lifecycle: { reuse: 'none', snapshot: 'none' },
    })
    const run = { threadId: 't1', runId: 'r1' }
    const handle = await sandbox.ensure(run)
    try {
      expect((await handle.process.exec('id -u')).stdout.trim(), 'the default user').toBe('1000')
      expect((await handle.process.exec('cat README.md && git log --format=%s')).stdout).toBe('from the host\nhost commit\n')
      expect((await handle.process.exec('git config --get-all safe.directory')).exitCode, 'nothing was added to a config git reads later').toBe(1)
    } finally {
      await sandbox.destroy({ key: sandbox.key(run) })
    }
  }, 120_000)

  it("says to make the repository readable when the sandbox's user cannot read it, and leaves no container", async () => {
    const repo = hostRepo('private', 'private\n', 'private commit')
    // Owned by another uid and closed to everyone else, as a mkdtemp folder is (mode 0700).
    execFileSync('chmod', ['-R', 'go-rwx', repo])
    const sandbox = defineSandbox({
      id: 'host-repo-private',
      provider: dockerSandbox({ image: DEBIAN, labels: RUN, killGraceMs: 500, mounts: [{ source: repo, target: '/mnt/private', readOnly: true }] }),
      workspace: defineWorkspace({ source: gitSource({ url: 'file:///mnt/private' }) }),
      lifecycle: { reuse: 'none', snapshot: 'none' },
    })
    const error = await sandbox.ensure({ threadId: 't2', runId: 'r2' }).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    expect(error).toMatchObject({ reason: 'source', message: expect.stringMatching(/must be readable by the sandbox's user .*chmod -R a\+rX/) })
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'the half-made sandbox is gone').toMatchObject({ containers: [] })
  }, 120_000)
})
