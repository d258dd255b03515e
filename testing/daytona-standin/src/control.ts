/**
 * The control-plane routes (`/sandbox…`) and the sandbox records behind them.
 * Every state change is finished before the response is sent (create answers
 * `started`, stop answers `stopped`), so the SDK never has to poll. Bodies are
 * typed against `@daytona/api-client`'s models.
 */
import { randomUUID } from 'node:crypto'
import type { Hono } from 'hono'
import type { CreateSandbox, ListSandboxesResponse, Sandbox, SandboxListItem, SandboxState } from '@daytona/api-client'
import type { SandboxEngine } from './engine.js'
import { SANDBOX_USER } from './engine.js'
import { StandinError } from './errors.js'

/** What the stand-in keeps per sandbox. */
export interface SandboxRecord {
  dto: Sandbox
  containerId: string
}

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
  /** Snapshot name → local image; a create naming another snapshot is a 404. */
  snapshots: Record<string, string>
  /** The snapshot used when a create names none. */
  defaultSnapshot: string
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
  const name = body.buildInfo?.dockerfileContent !== undefined ? imageOfDockerfile(body.buildInfo.dockerfileContent) : (body.snapshot ?? settings.defaultSnapshot)
  const image = settings.snapshots[name] ?? Object.values(settings.snapshots).find((i) => i === name)
  if (image === undefined) throw new StandinError(404, `Snapshot ${name} not found. Known to the stand-in: ${Object.keys(settings.snapshots).join(', ')}`)
  return { snapshot: name, image }
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
  const setState = (record: SandboxRecord, state: SandboxState) => {
    const now = new Date().toISOString()
    record.dto = { ...record.dto, state, desiredState: state === 'started' || state === 'stopped' || state === 'destroyed' ? state : record.dto.desiredState, updatedAt: now, lastActivityAt: now }
  }

  app.post('/sandbox', async (c) => {
    const body = (await c.req.json()) as CreateSandbox
    if (body.target !== undefined && settings.rejectedTargets.has(body.target)) throw new StandinError(400, `Target ${body.target} is not available to this organization`)
    const { snapshot, image } = imageFor(body, settings)
    const id = randomUUID()
    const name = body.name ?? id
    if ([...store.byId.values()].some((r) => r.dto.name === name)) throw new StandinError(409, `Sandbox with name ${name} already exists`)
    const now = new Date().toISOString()
    const env = body.env ?? {}
    const dto: Sandbox = {
      id,
      organizationId: 'standin-organization',
      name,
      snapshot,
      user: body.user ?? SANDBOX_USER,
      env,
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
    const record: SandboxRecord = { dto, containerId: '' }
    store.byId.set(id, record)
    try {
      record.containerId = await engine.create(id, image, env)
    } catch (error) {
      store.byId.delete(id)
      throw error
    }
    setState(record, 'started')
    return c.json(record.dto)
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
      if (record.dto.state !== 'stopped') throw new StandinError(409, `Sandbox is ${record.dto.state}; only a stopped sandbox can be started`)
      setState(record, 'starting')
      await engine.start(record.containerId)
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
      if (record.dto.autoDeleteInterval === 0) {
        await engine.remove(record.containerId)
        store.byId.delete(record.dto.id)
        setState(record, 'destroyed')
      }
    }
    return c.json(record.dto)
  })

  app.delete('/sandbox/:idOrName', async (c) => {
    const record = store.find(c.req.param('idOrName'))
    setState(record, 'destroying')
    await engine.remove(record.containerId)
    store.byId.delete(record.dto.id)
    setState(record, 'destroyed')
    return c.json(record.dto)
  })
}
