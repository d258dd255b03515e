/**
 * Workspace provisioning on the real Docker provider: setup plans over the
 * persistent shell, snapshot-after-setup with real `docker commit` (a counter
 * on a host mount proves setup is skipped), instructions and git skills,
 * projection, and secrets that reach processes but never the container's
 * config, its filesystem (outside the projected file) or its snapshot.
 */
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { bearer, createSecrets, defineSandbox, defineWorkspace, gitSkill, InMemorySandboxInstanceStore, mcpSkill, PROJECTION_MARKER, projectWorkspace, type McpSkill } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing, engine } from '@testing/support/docker-engine'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `prov-${randomUUID().slice(0, 8)}` }
const host = mkdtempSync(join(tmpdir(), 'tsbx-prov-docker-'))
const reason = await dockerMissing([IMAGE], { needsBridge: false })

describeWithDocker('provisioning on Docker', reason, () => {
  const counterDir = join(host, 'counter')
  mkdirSync(counterDir)
  // The sandbox runs as uid 1000 (not root): it must be allowed to read the mount and write the counter.
  chmodSync(host, 0o755)
  chmodSync(counterDir, 0o777)
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500, mounts: [{ source: counterDir, target: '/counter' }, { source: host, target: '/host', readOnly: true }] })
  const instances = new InMemorySandboxInstanceStore()
  const count = () => (existsSync(join(counterDir, 'setup.count')) ? readFileSync(join(counterDir, 'setup.count'), 'utf8').trim().split('\n').length : 0)
  const TOKEN = `docker-token-${randomUUID()}`
  const secrets = createSecrets({ API_TOKEN: TOKEN })

  afterAll(async () => {
    await pruneDockerSandboxes({ labels: RUN })
    rmSync(host, { recursive: true, force: true })
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'no container, image or volume with our labels is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  it('runs serial and parallel setup steps over one shell and restores the after-setup snapshot', async () => {
    const wait = (mine: string, other: string) => `touch ${mine}; i=0; while [ ! -e ${other} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -e ${other} ] && echo "$STAGE" > ${mine}.ok`
    const sandbox = defineSandbox({
      id: 'prov-docker',
      provider,
      workspace: defineWorkspace({
        secrets,
        instructions: 'Run the tests before proposing a change.',
        setup: ({ serial, parallel }) => {
          serial('echo ran >> /counter/setup.count')
          serial('git init -q && mkdir -p build && cd build && export STAGE=two')
          parallel([wait('left', 'right'), wait('right', 'left')])
          serial('echo "$(basename "$PWD"):$STAGE:${API_TOKEN:+token-visible}" > ../marker.txt')
        },
      }),
    })
    expect(sandbox.lifecycle.snapshot, 'Docker has snapshots, so after-setup is the default').toBe('after-setup')
    const first = await sandbox.ensure({ threadId: 't1', runId: 'r1', instances })
    expect((await first.fs.read('marker.txt')).trim()).toBe('build:two:token-visible')
    expect((await first.fs.read('build/left.ok')).trim()).toBe('two')
    expect((await first.fs.read('build/right.ok')).trim()).toBe('two')
    expect((await first.fs.lstat!('CLAUDE.md')).type, 'CLAUDE.md points at AGENTS.md').toBe('symlink')
    expect((await first.fs.read('CLAUDE.md')).trim()).toBe('Run the tests before proposing a change.')
    expect(count()).toBe(1)

    const inspect = await engine(`/containers/${first.id}/json`)
    expect(JSON.stringify(inspect.body.Config.Env), 'secrets are never part of the container config').not.toContain(TOKEN)
    const record = await instances.get(sandbox.key({ threadId: 't1', runId: '' }))
    expect(record?.latestSnapshotId).toBeTruthy()
    const image = await engine(`/images/${encodeURIComponent(record!.latestSnapshotId!)}/json`)
    expect(image.status).toBe(200)
    expect(JSON.stringify(image.body.Config), 'nor of the snapshot image').not.toContain(TOKEN)

    // The container goes away (keepAlive, a host restart); the next run restores the snapshot.
    await provider.destroy({ id: first.id })
    const restored = await sandbox.ensure({ threadId: 't1', runId: 'r2', instances })
    expect(restored.id).not.toBe(first.id)
    expect(count(), 'setup did not run again').toBe(1)
    expect((await restored.fs.read('marker.txt')).trim()).toBe('build:two:token-visible')
    expect((await restored.process.exec('echo "$API_TOKEN"')).stdout.trim(), 'secrets are re-applied after a restore').toBe(TOKEN)
    const hits = await restored.process.exec(`grep -rl --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=host --exclude-dir=counter -- ${TOKEN} / 2>/dev/null; true`)
    expect(hits.stdout.trim(), 'the token is nowhere in the restored filesystem').toBe('')

    const other = await sandbox.ensure({ threadId: 't2', runId: 'r3', instances })
    expect(count(), 'a new thread of the same workspace restores too').toBe(1)
    expect((await other.fs.read('marker.txt')).trim()).toBe('build:two:token-visible')
    for (const threadId of ['t1', 't2']) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }), instances })
  })

  it('clones git skills and projects secrets only into the projected file', async () => {
    const repo = join(host, 'skills-src')
    mkdirSync(repo)
    writeFileSync(join(repo, 'SKILL.md'), '---\nname: review\ndescription: Reviews\n---\nReview carefully.\n')
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } })
    git('init', '-q', '-b', 'main')
    git('add', '-A')
    git('commit', '-q', '-m', 'skill')
    execFileSync('git', ['clone', '-q', '--bare', repo, join(host, 'review.git')])
    // Owned by the sandbox's uid 1000: git refuses to read a repository another user owns ("dubious ownership").
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', '1000:1000', join(host, 'review.git')])
    const workspace = defineWorkspace({
      secrets,
      setup: ['git init -q'],
      skills: [gitSkill({ repo: 'file:///host/review.git' }), mcpSkill('svc', { url: 'https://svc.example/mcp', headers: { Authorization: bearer(secrets.API_TOKEN) } })],
    })
    const sandbox = defineSandbox({ id: 'prov-docker-skills', provider, workspace, lifecycle: { reuse: 'none', snapshot: 'none' } })
    const handle = await sandbox.ensure({ threadId: 't-skills', runId: 'r1', instances })
    try {
      expect((await handle.fs.read('.tanstack-skills/review/SKILL.md'))).toContain('Review carefully.')
      await projectWorkspace(handle, workspace, {
        harness: 'test-harness',
        paths: ['svc.json'],
        async write(ctx) {
          const mcp = ctx.workspace.skills.find((s): s is McpSkill => s.kind === 'mcp' && s.transport === 'http')!
          await ctx.handle.fs.write('svc.json', JSON.stringify({ auth: mcp.transport === 'http' ? ctx.resolve(mcp.headers.Authorization!) : '' }))
        },
      })
      expect(await handle.fs.exists(PROJECTION_MARKER)).toBe(true)
      expect((await handle.process.exec('git status --porcelain')).stdout, 'skills, marker and projected files stay out of git status').toBe('')
      const hits = await handle.process.exec(`grep -rl --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=host --exclude-dir=counter -- ${TOKEN} / 2>/dev/null; true`)
      expect(hits.stdout.trim().split('\n').filter(Boolean), 'only the projected file holds the token').toEqual([`${handle.workspaceRoot}/svc.json`])
    } finally {
      await sandbox.destroy({ key: sandbox.key({ threadId: 't-skills', runId: 'r1' }), instances })
    }
  })
})
