/**
 * chat() + withSandbox over the real Docker provider: commands run inside a
 * container, a thread reuses its container, a new thread of the same
 * workspace starts from the after-setup snapshot, an abort mid-command
 * destroys the container, and an abort after the run has finished does not.
 * Every container carries a label unique to this file; afterwards no
 * container, image or volume with it may remain. Skips naming the engine when
 * it is not answering, fails instead under REQUIRE_DOCKER=1.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, withSandbox } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { runShell } from '@testing/support/run-shell'
import { waitFor } from './helpers/run-chat.js'
import { dockerLeftovers, dockerMissing, engine } from '@testing/support/docker-engine'

const IMAGE = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `e2e-${randomUUID().slice(0, 8)}` }
const leftovers = () => dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`)

const containerExists = async (id: string) => (await engine(`/containers/${id}/json`)).status === 200

const reason = await dockerMissing([IMAGE], { needsBridge: false })

if (reason !== null && process.env.REQUIRE_DOCKER !== '1') {
  describe('chat() with a Docker sandbox', () => {
    it.skip(`skipped — ${reason}`, () => undefined)
  })
} else if (reason !== null) {
  describe('chat() with a Docker sandbox', () => {
    it(`needs the Docker engine (REQUIRE_DOCKER=1): ${reason}`, () => {
      throw new Error(`REQUIRE_DOCKER=1 but ${reason}`)
    })
  })
} else {
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500 })

  afterAll(async () => {
    expect((await leftovers()).containers, 'every sandbox container was destroyed by the runs').toEqual([])
    // After-setup snapshots outlive their sandboxes by design: remove them, then nothing may remain.
    await pruneDockerSandboxes({ labels: RUN })
    expect(await leftovers(), 'no container, image or volume with our labels is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  describe('chat() with a Docker sandbox', () => {
    it('runs commands inside the container workspace and removes the container after the run', async () => {
      const sandbox = defineSandbox({ id: 'e2e-docker-basic', provider, lifecycle: { reuse: 'none' } })
      const out = await runShell({ command: 'pwd; cat /proc/1/comm; hostname', threadId: 't-docker-basic', middleware: [withSandbox(sandbox)] })
      expect(out.error).toBeUndefined()
      const [pwd, init, hostname] = out.text.trim().split('\n')
      expect(pwd).toBe('/workspace')
      expect(init, 'PID 1 is the container init').toBe('docker-init')
      expect(await waitFor(async () => !(await containerExists(hostname!))), "reuse 'none' removes the container").toBe(true)
    })

    it("reuses one container per thread, and a new thread starts from the workspace's after-setup snapshot", async () => {
      const sandbox = defineSandbox({ id: 'e2e-docker-thread', provider, workspace: defineWorkspace({ setup: ['echo seeded > seed.txt', 'date +%s%N > built-at.txt'] }) })
      const first = await runShell({ command: 'echo from-run-1 > shared.txt && hostname', threadId: 't-docker-a', middleware: [withSandbox(sandbox)] })
      const second = await runShell({ command: 'cat shared.txt seed.txt && hostname', threadId: 't-docker-a', middleware: [withSandbox(sandbox)] })
      expect(second.text).toContain('from-run-1')
      expect(second.text).toContain('seeded')
      expect(second.text.trim().split('\n').at(-1), 'the same container').toBe(first.text.trim())
      const other = await runShell({ command: 'ls; cat built-at.txt; hostname', threadId: 't-docker-b', middleware: [withSandbox(sandbox)] })
      expect(other.text).not.toContain('shared.txt')
      expect(other.text).toContain('seed.txt')
      expect(other.text.trim().split('\n').at(-1), 'another container').not.toBe(first.text.trim())
      const builtA = (await runShell({ command: 'cat built-at.txt', threadId: 't-docker-a', middleware: [withSandbox(sandbox)] })).text
      expect(other.text, 'thread b restored the snapshot instead of running setup again').toContain(builtA.trim())
      for (const threadId of ['t-docker-a', 't-docker-b']) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
      expect(await containerExists(first.text.trim())).toBe(false)
    })

    it('destroys the container when the run is aborted mid-command', async () => {
      const sandbox = defineSandbox({ id: 'e2e-docker-abort', provider, lifecycle: { snapshot: 'none' } })
      const controller = new AbortController()
      let text = ''
      const run = runShell({
        command: `hostname; sh -c 'sleep 300; :' & sh -c 'sh -c "sleep 301; :"; :' & echo started; wait`,
        threadId: 't-docker-abort',
        middleware: [withSandbox(sandbox)],
        abortController: controller,
        onChunk: (chunk) => {
          if (chunk.type === 'TEXT_MESSAGE_CONTENT') {
            text += chunk.delta
            if (text.includes('started')) controller.abort()
          }
        },
      })
      await run.catch(() => undefined)
      expect(text).toContain('started')
      const id = text.trim().split('\n')[0]!
      expect(await waitFor(async () => !(await containerExists(id))), 'the aborted run destroyed its container').toBe(true)
      expect(await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-docker-abort', runId: '' }))).toBeNull()
    })

    it('keeps the thread container when the abort signal fires after the run finished', async () => {
      const sandbox = defineSandbox({ id: 'e2e-docker-late-abort', provider, lifecycle: { snapshot: 'none' } })
      const key = sandbox.key({ threadId: 't-docker-late-abort', runId: '' })
      const controller = new AbortController()
      const first = await runShell({ command: 'echo from-run-1 > kept.txt && hostname', threadId: 't-docker-late-abort', middleware: [withSandbox(sandbox)], abortController: controller })
      expect(first.error).toBeUndefined()
      controller.abort()
      const second = await runShell({ command: 'cat kept.txt && hostname', threadId: 't-docker-late-abort', middleware: [withSandbox(sandbox)] })
      expect(second.error, 'the second run found its container').toBeUndefined()
      expect(second.text, 'the same container, with run 1\'s file').toBe(`from-run-1\n${first.text}`)
      expect(await containerExists(first.text.trim())).toBe(true)
      expect(await sandbox.fallbackInstances.get(key)).not.toBeNull()
      await sandbox.destroy({ key })
      expect(await containerExists(first.text.trim())).toBe(false)
    })

    it('destroys the container when the abort lands while setup is still running', async () => {
      const sandbox = defineSandbox({ id: 'e2e-docker-abort-setup', provider, workspace: defineWorkspace({ setup: ['sleep 2'] }) })
      const controller = new AbortController()
      setTimeout(() => controller.abort(), 700)
      await runShell({ command: 'echo never', threadId: 't-docker-abort-setup', middleware: [withSandbox(sandbox)], abortController: controller }).catch(() => undefined)
      expect(await waitFor(async () => (await leftovers()).containers.length === 0), 'no container is left').toBe(true)
      expect(await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-docker-abort-setup', runId: '' }))).toBeNull()
    })
  })
}
