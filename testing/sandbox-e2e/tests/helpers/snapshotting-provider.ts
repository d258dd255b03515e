/**
 * A test provider: the real local-process provider plus snapshots made with
 * tar on the host, so core's snapshot-after-setup logic can be exercised
 * without a container engine (the Docker suite proves it with real commits).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { SandboxOperationError, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'

/** Wrap `inner` so its handles can snapshot and it can restore/delete snapshots (kept under `store`). */
export function withTarSnapshots(inner: SandboxProvider, store: string): SandboxProvider & { snapshots: () => string[] } {
  mkdirSync(store, { recursive: true })
  let n = 0
  const taken = new Set<string>()
  const file = (id: string) => join(store, `${id}.tar`)
  const wrap = (handle: SandboxHandle): SandboxHandle => ({
    ...handle,
    capabilities: { ...handle.capabilities, snapshots: true },
    snapshot: async (label) => {
      const snapshotId = `tarsnap-${++n}-${Date.now()}`
      execFileSync('tar', ['-cf', file(snapshotId), '-C', handle.workspaceRoot, '.'])
      taken.add(snapshotId)
      return { snapshotId, createdAt: Date.now(), ...(label ? { label } : {}) }
    },
  })
  return {
    name: inner.name,
    snapshots: () => [...taken],
    capabilities: () => ({ ...inner.capabilities(), snapshots: true }),
    create: async (input) => wrap(await inner.create(input)),
    resume: async (input) => {
      const handle = await inner.resume(input)
      return handle && wrap(handle)
    },
    destroy: (input) => inner.destroy(input),
    restoreSnapshot: async ({ snapshotId, key, labels }) => {
      if (!taken.has(snapshotId)) throw new SandboxOperationError('not-found', inner.name, `snapshot ${snapshotId} does not exist`)
      const handle = await inner.create({ ...(key ? { key } : {}), ...(labels ? { labels } : {}) })
      execFileSync('tar', ['-xf', file(snapshotId), '-C', handle.workspaceRoot])
      return wrap(handle)
    },
    deleteSnapshot: async ({ snapshotId }) => {
      taken.delete(snapshotId)
      rmSync(file(snapshotId), { force: true })
    },
  }
}
