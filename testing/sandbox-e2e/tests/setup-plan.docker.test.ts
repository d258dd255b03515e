/**
 * The setup shell's state and the instruction files on the real Docker
 * provider, with GNU (Debian) and BusyBox tools: the state directory is 700
 * and its files 600 even after a step sets `umask 000`, nothing of it is left
 * in the container's /tmp after setup, and a source directory named AGENTS.md
 * fails the bootstrap with a typed error instead of EISDIR.
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, localSource, WorkspaceBootstrapError } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `setup-docker-${randomUUID().slice(0, 8)}` }
const host = mkdtempSync(join(tmpdir(), 'tsbx-setup-docker-'))
const reason = await dockerMissing([DEBIAN, BUSYBOX], { needsBridge: false })

describeWithDocker('setup shell state and instructions on Docker', reason, () => {
  afterAll(async () => {
    await pruneDockerSandboxes({ labels: RUN })
    rmSync(host, { recursive: true, force: true })
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'no container, image or volume with our labels is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  for (const [label, image] of [['Debian', DEBIAN], ['BusyBox', BUSYBOX]] as const) {
    const provider = dockerSandbox({ image, labels: RUN, killGraceMs: 500 })

    it(`${label}: keeps the state owner-only whatever umask a step sets, and removes it after setup`, async () => {
      const sandbox = defineSandbox({
        id: `setup-docker-${label.toLowerCase()}`,
        provider,
        workspace: defineWorkspace({
          setup: [
            'umask 000; export STAGE=one',
            // The container's /tmp holds only this plan's state.
            `d=$(ls -d /tmp/tanstack-setup-*) && stat -c '%a %n' "$d" "$d/cwd" "$d/env" > perms.txt && echo "$STAGE" > stage.txt`,
          ],
        }),
        lifecycle: { reuse: 'none', snapshot: 'none' },
      })
      const run = { threadId: 't1', runId: 'r1' }
      const handle = await sandbox.ensure(run)
      try {
        const lines = (await handle.fs.read('perms.txt')).trim().split('\n')
        expect(lines.map((line) => line.split(' ')[0]), lines.join('\n')).toEqual(['700', '600', '600'])
        expect(lines[0]).toMatch(/ \/tmp\/tanstack-setup-[0-9a-f]+$/)
        expect((await handle.fs.read('stage.txt')).trim(), 'the exported variable still carried over').toBe('one')
        const left = await handle.process.exec('ls -a /tmp')
        expect(left.stdout.split('\n').filter((name) => name.startsWith('tanstack-setup')), 'nothing of the state is left in /tmp').toEqual([])
      } finally {
        await sandbox.destroy({ key: sandbox.key(run) })
      }
    })

    it(`${label}: a source directory named AGENTS.md with instructions is a typed bootstrap error`, async () => {
      const src = join(host, `agents-dir-${label}`)
      mkdirSync(join(src, 'AGENTS.md'), { recursive: true })
      writeFileSync(join(src, 'AGENTS.md', 'notes.md'), 'keep me\n')
      const sandbox = defineSandbox({ id: `instr-docker-${label.toLowerCase()}`, provider, workspace: defineWorkspace({ source: localSource({ path: src }), instructions: 'Be brief.' }), lifecycle: { snapshot: 'none' } })
      const error = await sandbox.ensure({ threadId: 't1', runId: 'r1' }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(WorkspaceBootstrapError)
      expect((error as WorkspaceBootstrapError).reason).toBe('source')
      expect((error as Error).message).toContain('has a directory at /workspace/AGENTS.md, where instructions write the file AGENTS.md')
      expect((error as Error).message).toContain('Remove or rename the AGENTS.md directory in the source, or drop defineWorkspace({ instructions })')
    })
  }
})
