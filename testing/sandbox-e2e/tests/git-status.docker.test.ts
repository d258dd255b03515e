/**
 * `git.status()` on the real Docker provider (Debian image with git): the
 * real paths of names that plain porcelain output quotes and escapes, and a
 * rename's two paths read as one entry.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { byPath, EXPECTED_ENTRIES, makeOddlyNamedChanges } from './helpers/git-status-names.js'

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `git-status-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([DEBIAN], { needsBridge: false })

describeWithDocker('git.status on Docker', reason, () => {
  afterAll(async () => {
    await pruneDockerSandboxes({ labels: RUN })
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'no container, image or volume with our labels is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  it('Debian: returns the real paths of special and non-ASCII names, and a rename as its new path', async () => {
    const sandbox = defineSandbox({ id: 'git-status-docker', provider: dockerSandbox({ image: DEBIAN, labels: RUN, killGraceMs: 500 }), workspace: defineWorkspace({}), lifecycle: { reuse: 'none', snapshot: 'none' } })
    const run = { threadId: 't1', runId: 'r1' }
    const handle = await sandbox.ensure(run)
    try {
      await makeOddlyNamedChanges(handle, 'repo')
      const status = await handle.git.status({ dir: 'repo' })
      expect(status.branch).toBe('main')
      expect([...status.entries].sort(byPath)).toEqual(EXPECTED_ENTRIES)
    } finally {
      await sandbox.destroy({ key: sandbox.key(run) })
    }
  }, 120_000)
})
