/**
 * The control-plane routes of a sandbox's life (`/sandbox…`: create, get,
 * list, start, stop, archive, autostop, delete) and the sandbox records
 * behind them. Every state change is finished before the response is sent
 * (create answers `started`, stop `stopped`), so the SDK never has to poll.
 * Snapshots and fork (snapshots.ts) and preview links (preview.ts) create and
 * read records through the helpers exported here. Bodies are typed against
 * `@daytona/api-client`'s models.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import type { Hono } from 'hono'
import type { CreateSandbox, ListSandboxesResponse, Sandbox, SandboxLabels, SandboxListItem, SandboxState } from '@daytona/api-client'
import type { SandboxEngine } from './engine.js'
import { SANDBOX_USER } from './engine.js'
import { StandinError } from './errors.js'
import type { SnapshotStore } from './snapshots.js'

/** What the stand-in keeps per sandbox. */
export interface SandboxRecord {
  dto: Sandbox
  containerId: string
  /** The token a standard preview link needs in `x-daytona-preview-token`; a new one at every start, as Daytona does. */
  previewToken: string
}

/** A preview token: 32 lowercase hex digits (Daytona's are 32 lowercase letters and digits). */
export const newPreviewToken = (): string => randomBytes(16).toString('hex')

/** The sandboxes by id; names are looked up by scanning (a stand-in holds a handful). */
export class SandboxStore {
  readonly byId = new Map<string, SandboxRecord>()

  /** The record for an id or a name, or a 404. */
  find(idOrName: string): SandboxRecord {
    const record = this.byId.get(idOrName) ?? [...this.byId.values()].find((r) => r.dto.name === idOrName)
    if (!record) throw new StandinError(404, `Sandbox with ID or name ${idOrName} not found`)
    return record
  }
}

/** Settings the control routes need from the server. */
export interface ControlSettings {
  engine: SandboxEngine
  store: SandboxStore
  /** The snapshot registry: names a create may use → local images, and the committed images to remove. */
  snapshots: SnapshotStore
  /** The toolbox base every DTO carries (the SDK appends `/{id}`). */
  toolboxProxyUrl: () => string
  /** Targets a create is refused for (400 naming the target); any other target is accepted. */
  rejectedTargets: ReadonlySet<string>
}

/** `FROM <image>` of a `buildInfo.dockerfileContent` the SDK sends for `create({ image })`; anything more is refused. */
function imageOfDockerfile(content: string): string {
  const lines = content.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))
  const from = /^FROM\s+(\S+)$/i.exec(lines[0] ?? '')
  if (!from || lines.length > 1) throw new StandinError(400, 'the stand-in builds no images: only a dockerfile of one FROM line naming a known snapshot is accepted')
  return from[1]!
}

/** The local image for a create body: a named snapshot, a one-line dockerfile, or the default. */
function imageFor(body: CreateSandbox, settings: ControlSettings): { snapshot: string; image: string } {
  if (body.buildInfo?.dockerfileContent !== undefined) return settings.snapshots.imageFor(imageOfDockerfile(body.buildInfo.dockerfileContent))
  return settings.snapshots.imageFor(body.snapshot)
}

/** Set a record's state (and its desired state when the state is a resting one), stamping the update. */
export function setState(record: SandboxRecord, state: SandboxState): void {
  const now = new Date().toISOString()
  const resting = state === 'started' || state === 'stopped' || state === 'archived' || state === 'destroyed'
  record.dto = { ...record.dto, state, desiredState: resting ? state : record.dto.desiredState, updatedAt: now, lastActivityAt: now }
}

/** Register a new sandbox (its DTO in state `creating`) and start its container from `image`; the record is `started` when this resolves. */
export async function launchSandbox(settings: ControlSettings, dto: Sandbox, image: string): Promise<SandboxRecord> {
  const { engine, store } = settings
  if ([...store.byId.values()].some((r) => r.dto.name === dto.name)) throw new StandinError(409, `Sandbox with name ${dto.name} already exists`)
  const record: SandboxRecord = { dto, containerId: '', previewToken: newPreviewToken() }
  store.byId.set(dto.id, record)
  try {
    record.containerId = await engine.create(dto.id, image, { env: dto.env, networkBlockAll: dto.networkBlockAll })
  } catch (error) {
    store.byId.delete(dto.id)
    throw error
  }
  setState(record, 'started')
  return record
}

/** Remove a sandbox's container and record (state `destroyed`), then the committed images nothing needs any more. */
export async function destroySandbox(settings: ControlSettings, record: SandboxRecord): Promise<void> {
  setState(record, 'destroying')
  await settings.engine.remove(record.containerId)
  settings.store.byId.delete(record.dto.id)
  setState(record, 'destroyed')
  await settings.snapshots.sweep()
}

/** The list item view of a sandbox (the list endpoint omits `env` and a few more). */
function listItem(dto: Sandbox): SandboxListItem {
  const { env: _env, buildInfo: _buildInfo, volumes: _volumes, outboundProxyUrl: _proxy, otelEndpointOverride: _otel, linkedSandboxId: _linked, backupCreatedAt: _backup, sandboxClass: _class, ...item } = dto
  return item
}

/** Whether every `labels` entry of the filter is on the sandbox. */
function hasLabels(dto: Sandbox, filter: string | undefined): boolean {
  if (filter === undefined || filter === '') return true
  let wanted: Record<string, string>
  try {
    wanted = JSON.parse(filter) as Record<string, string>
  } catch {
    throw new StandinError(400, 'labels must be a JSON object of strings')
  }
  return Object.entries(wanted).every(([k, v]) => dto.labels[k] === v)
}

/** Register the control-plane routes on `app`. */
export function controlRoutes(app: Hono, settings: ControlSettings): void {
  const { engine, store } = settings

  app.post('/sandbox', async (c) => {
    const body = (await c.req.json()) as CreateSandbox
    if (body.target !== undefined && settings.rejectedTargets.has(body.target)) throw new StandinError(400, `Target ${body.target} is not available to this organization`)
    const { snapshot, image } = imageFor(body, settings)
    const id = randomUUID()
    const now = new Date().toISOString()
    const dto: Sandbox = {
      id,
      organizationId: 'standin-organization',
      name: body.name ?? id,
      snapshot,
      user: body.user ?? SANDBOX_USER,
      env: body.env ?? {},
      labels: body.labels ?? {},
      public: body.public ?? false,
      networkBlockAll: body.networkBlockAll ?? false,
      ...(body.networkAllowList !== undefined ? { networkAllowList: body.networkAllowList } : {}),
      target: body.target ?? 'us',
      cpu: body.cpu ?? 1,
      gpu: body.gpu ?? 0,
      memory: body.memory ?? 1,
      disk: body.disk ?? 3,
      state: 'creating',
      desiredState: 'started',
      backupState: 'None',
      autoStopInterval: body.autoStopInterval ?? 15,
      autoArchiveInterval: body.autoArchiveInterval ?? 10080,
      autoDeleteInterval: body.autoDeleteInterval ?? -1,
      createdAt: now,
      updatedAt: now,
      lastActivityAt: now,
      sandboxClass: 'container',
      toolboxProxyUrl: settings.toolboxProxyUrl(),
    }
    return c.json((await launchSandbox(settings, dto, image)).dto)
  })

  app.get('/sandbox', (c) => {
    const q = c.req.query()
    const states = c.req.queries('states')
    const matching = [...store.byId.values()]
      .map((r) => r.dto)
      .filter((dto) => (q.id === undefined || dto.id === q.id) && (q.name === undefined || dto.name === q.name))
      .filter((dto) => hasLabels(dto, q.labels))
      .filter((dto) => states === undefined || states.includes(dto.state ?? ''))
    const start = q.cursor !== undefined ? Number(q.cursor) : 0
    const limit = q.limit !== undefined ? Number(q.limit) : 100
    const page = matching.slice(start, start + limit)
    const body: ListSandboxesResponse = { items: page.map(listItem), nextCursor: start + limit < matching.length ? String(start + limit) : null }
    return c.json(body)
  })

  app.get('/sandbox/:idOrName', (c) => c.json(store.find(c.req.param('idOrName')).dto))

  app.get('/sandbox/:idOrName/toolbox-proxy-url', (c) => {
    store.find(c.req.param('idOrName'))
    return c.json({ url: settings.toolboxProxyUrl() })
  })

  app.post('/sandbox/:idOrName/start', async (c) => {
    const record = store.find(c.req.param('idOrName'))
    if (record.dto.state !== 'started') {
      if (record.dto.state !== 'stopped' && record.dto.state !== 'archived') throw new StandinError(409, `Sandbox is ${record.dto.state}; only a stopped or archived sandbox can be started`)
      // An archived sandbox is a stopped container here: its filesystem never left the engine.
      setState(record, record.dto.state === 'archived' ? 'restoring' : 'starting')
      await engine.start(record.containerId)
      record.previewToken = newPreviewToken()
      setState(record, 'started')
    }
    return c.json(record.dto)
  })

  app.post('/sandbox/:idOrName/stop', async (c) => {
    const record = store.find(c.req.param('idOrName'))
    if (record.dto.state !== 'stopped') {
      if (record.dto.state !== 'started') throw new StandinError(409, `Sandbox is ${record.dto.state}; only a started sandbox can be stopped`)
      setState(record, 'stopping')
      await engine.stop(record.containerId, c.req.query('force') === 'true')
      setState(record, 'stopped')
      // autoDeleteInterval 0 (the SDK's `ephemeral`): deleted as soon as it stops.
      if (record.dto.autoDeleteInterval === 0) await destroySandbox(settings, record)
    }
    return c.json(record.dto)
  })

  // Daytona archives only a stopped, non-ephemeral sandbox (its server answers 400 otherwise). The container stays, stopped: nothing moves to object storage.
  app.post('/sandbox/:idOrName/archive', (c) => {
    const record = store.find(c.req.param('idOrName'))
    if (record.dto.state !== 'archived') {
      if (record.dto.state !== 'stopped') throw new StandinError(400, `Sandbox is ${record.dto.state}; only a stopped sandbox can be archived (stop it first)`)
      if (record.dto.autoDeleteInterval === 0) throw new StandinError(400, 'Ephemeral sandboxes cannot be archived')
      setState(record, 'archived')
    }
    return c.json(record.dto)
  })

  app.put('/sandbox/:idOrName/labels', async (c) => {
    const record = store.find(c.req.param('idOrName'))
    const body = (await c.req.json()) as SandboxLabels
    if (typeof body?.labels !== 'object' || body.labels === null || Object.values(body.labels).some((v) => typeof v !== 'string')) throw new StandinError(400, 'labels must be an object of strings')
    record.dto = { ...record.dto, labels: { ...body.labels }, updatedAt: new Date().toISOString() }
    return c.json({ labels: record.dto.labels } satisfies SandboxLabels)
  })

  // Stored on the DTO only: the stand-in never stops a sandbox on its own.
  app.post('/sandbox/:idOrName/autostop/:interval', (c) => {
    const record = store.find(c.req.param('idOrName'))
    const interval = Number(c.req.param('interval'))
    if (!Number.isInteger(interval) || interval < 0) throw new StandinError(400, `autostop interval must be a non-negative integer of minutes, got ${c.req.param('interval')}`)
    record.dto = { ...record.dto, autoStopInterval: interval, updatedAt: new Date().toISOString() }
    return c.json(record.dto)
  })

  app.delete('/sandbox/:idOrName', async (c) => {
    const record = store.find(c.req.param('idOrName'))
    await destroySandbox(settings, record)
    return c.json(record.dto)
  })
}
