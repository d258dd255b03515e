/**
 * Snapshots and fork: the snapshot registry (the configured names → local
 * images, plus the images `docker commit` made), the `/snapshots` routes
 * (get, list, delete) and the sandbox routes that commit a container
 * (`POST /sandbox/{id}/snapshot`, `POST /sandbox/{id}/fork`), and the removal
 * of committed images once nothing needs them. Each commit is finished before
 * the response, so the SDK never waits on `snapshotting` or `creating`.
 * Bodies are typed against `@daytona/api-client`'s models.
 */
import { randomUUID } from 'node:crypto'
import type { Hono } from 'hono'
import type { CreateSandboxSnapshot, ForkSandbox, PaginatedSnapshots, Sandbox, SnapshotDto } from '@daytona/api-client'
import type { SandboxEngine } from './engine.js'
import { StandinError } from './errors.js'
import type { ControlSettings, SandboxRecord } from './control.js'
import { launchSandbox, setState } from './control.js'

/** One registered snapshot: its DTO, the local image behind it, and whether the stand-in made that image (and so removes it). */
interface SnapshotRecord {
  dto: SnapshotDto
  image: string
  committed: boolean
}

/** The snapshots a create may name, and the committed images still to remove. */
export class SnapshotStore {
  readonly byId = new Map<string, SnapshotRecord>()
  /** Committed images no snapshot names any more (deleted snapshots, fork sources), removed once no container or child image needs them. */
  private readonly unnamed = new Set<string>()

  /**
   * @param engine - Commits and removes the images.
   * @param configured - Snapshot name → local image given to the stand-in; never removed from the engine.
   * @param defaultName - The snapshot a create naming none uses.
   */
  constructor(
    private readonly engine: SandboxEngine,
    configured: Record<string, string>,
    private readonly defaultName: string,
  ) {
    for (const [name, image] of Object.entries(configured)) this.register(name, image, false, null)
  }

  /** Add a snapshot to the registry; `sourceSandboxId` is the sandbox it was taken from (null for a configured one). */
  register(name: string, image: string, committed: boolean, sourceSandboxId: string | null): SnapshotDto {
    const now = new Date()
    const dto: SnapshotDto = {
      id: randomUUID(),
      organizationId: 'standin-organization',
      general: false,
      name,
      imageName: image,
      state: 'active',
      size: null,
      entrypoint: null,
      cpu: 1,
      gpu: 0,
      mem: 1,
      disk: 3,
      errorReason: null,
      createdAt: now,
      updatedAt: now,
      lastUsedAt: null,
      sourceSandboxId,
      sandboxClass: 'container',
    }
    this.byId.set(dto.id, { dto, image, committed })
    return dto
  }

  /** The record for an id or a name, or a 404. */
  find(idOrName: string): SnapshotRecord {
    const record = this.byId.get(idOrName) ?? [...this.byId.values()].find((r) => r.dto.name === idOrName)
    if (!record) throw new StandinError(404, `Snapshot with ID or name ${idOrName} not found`)
    return record
  }

  /** The image a create runs for a snapshot name or id (default when absent), or for a configured image named directly; a 404 listing the known names otherwise. */
  imageFor(snapshot: string | undefined): { snapshot: string; image: string } {
    const wanted = snapshot === undefined || snapshot.trim() === '' ? this.defaultName : snapshot
    const record = this.byId.get(wanted) ?? [...this.byId.values()].find((r) => r.dto.name === wanted || (!r.committed && r.image === wanted))
    if (!record) throw new StandinError(404, `Snapshot ${wanted} not found. Known to the stand-in: ${[...this.byId.values()].map((r) => r.dto.name).join(', ')}`)
    record.dto = { ...record.dto, lastUsedAt: new Date() }
    return { snapshot: record.dto.name, image: record.image }
  }

  /** Drop a snapshot from the registry; a committed image goes too, as soon as nothing needs it. */
  async delete(record: SnapshotRecord): Promise<void> {
    this.byId.delete(record.dto.id)
    if (record.committed) this.unnamed.add(record.image)
    await this.sweep()
  }

  /** Remember a committed image that no snapshot names (a fork's), to remove once its sandbox is gone. */
  async forget(image: string): Promise<void> {
    this.unnamed.add(image)
    await this.sweep()
  }

  /** Remove every unnamed committed image that no container and no child image uses any more. */
  async sweep(): Promise<void> {
    await this.removeAll(this.unnamed)
  }

  /** Remove every committed image, named or not (at close, after the containers): newest first, so a child goes before its parent. */
  async close(): Promise<void> {
    for (const record of this.byId.values()) if (record.committed) this.unnamed.add(record.image)
    await this.removeAll(this.unnamed)
  }

  /** Remove what can be removed, in passes until a pass removes nothing (a removed child can free its parent). */
  private async removeAll(images: Set<string>): Promise<void> {
    let progress = true
    while (progress && images.size > 0) {
      progress = false
      for (const image of [...images].reverse()) {
        if ((await this.engine.removeImage(image)) === 'removed') {
          images.delete(image)
          progress = true
        }
      }
    }
  }
}

/** Register the snapshot and fork routes on `app`. */
export function snapshotRoutes(app: Hono, settings: ControlSettings): void {
  const { engine, store, snapshots } = settings

  /**
   * Commit a sandbox's container while it shows `during` (`snapshotting`,
   * `forking`), then put its state back; resolves with the image id.
   */
  const commit = async (sandbox: SandboxRecord, during: 'snapshotting' | 'forking', labels: Record<string, string>): Promise<string> => {
    const before = sandbox.dto.state!
    setState(sandbox, during)
    try {
      return await engine.commit(sandbox.containerId, labels)
    } finally {
      setState(sandbox, before)
    }
  }

  // Daytona snapshots a started or stopped sandbox and answers at once in state `snapshotting`, which the SDK waits out; here the commit is done first and the answer is in the state before it.
  app.post('/sandbox/:idOrName/snapshot', async (c) => {
    const sandbox = store.find(c.req.param('idOrName'))
    const { name } = (await c.req.json()) as CreateSandboxSnapshot
    if (typeof name !== 'string' || name.trim() === '') throw new StandinError(400, 'name is required')
    if (sandbox.dto.state !== 'started' && sandbox.dto.state !== 'stopped') throw new StandinError(400, `Sandbox is ${sandbox.dto.state}; it must be started or stopped to create a snapshot`)
    if ([...snapshots.byId.values()].some((r) => r.dto.name === name)) throw new StandinError(409, `Snapshot with name ${name} already exists`)
    const image = await commit(sandbox, 'snapshotting', { 'daytona-standin.snapshot': name })
    snapshots.register(name, image, true, sandbox.dto.id)
    return c.json(sandbox.dto)
  })

  // Daytona forks a started sandbox (its server refuses container-class sandboxes with 422; the stand-in forks them anyway). The new sandbox gets the source's settings and a copy of its filesystem.
  app.post('/sandbox/:idOrName/fork', async (c) => {
    const source = store.find(c.req.param('idOrName'))
    const { name } = (await c.req.json().catch(() => ({}))) as ForkSandbox
    if (source.dto.state !== 'started') throw new StandinError(400, `Sandbox is ${source.dto.state}; it must be started to fork`)
    const id = randomUUID()
    const forkName = name ?? id
    if ([...store.byId.values()].some((r) => r.dto.name === forkName)) throw new StandinError(409, `Sandbox with name ${forkName} already exists`)
    const image = await commit(source, 'forking', { 'daytona-standin.fork': id })
    const now = new Date().toISOString()
    const { toolboxProxyUrl: _proxy, ...settingsOfSource } = source.dto
    const dto: Sandbox = {
      ...settingsOfSource,
      env: { ...source.dto.env },
      labels: { ...source.dto.labels },
      id,
      name: forkName,
      state: 'creating',
      desiredState: 'started',
      createdAt: now,
      updatedAt: now,
      lastActivityAt: now,
      toolboxProxyUrl: settings.toolboxProxyUrl(),
    }
    try {
      return c.json((await launchSandbox(settings, dto, image)).dto)
    } finally {
      // The image stays while the fork's container uses it, and goes when the fork is deleted.
      await snapshots.forget(image)
    }
  })

  app.get('/snapshots', (c) => {
    const q = c.req.query()
    const page = q.page !== undefined ? Number(q.page) : 1
    const limit = q.limit !== undefined ? Number(q.limit) : 100
    if (!Number.isInteger(page) || page < 1 || !Number.isInteger(limit) || limit < 1) throw new StandinError(400, 'page and limit must be positive integers')
    const matching = [...snapshots.byId.values()]
      .map((r) => r.dto)
      .filter((dto) => (q.sourceSandboxId === undefined || dto.sourceSandboxId === q.sourceSandboxId) && (q.name === undefined || dto.name.includes(q.name)))
    const body: PaginatedSnapshots = { items: matching.slice((page - 1) * limit, page * limit), total: matching.length, page, totalPages: Math.ceil(matching.length / limit) }
    return c.json(body)
  })

  app.get('/snapshots/:idOrName', (c) => c.json(snapshots.find(c.req.param('idOrName')).dto))

  // By id only: the SDK resolves a name first (GET /snapshots/{name}). A configured snapshot leaves the registry; its image stays.
  app.delete('/snapshots/:id', async (c) => {
    const record = snapshots.byId.get(c.req.param('id'))
    if (!record) throw new StandinError(404, `Snapshot with ID ${c.req.param('id')} not found`)
    await snapshots.delete(record)
    return c.body(null, 200)
  })
}
