/**
 * Route coverage: the operations of the SDK's generated clients
 * (`@daytona/api-client` SandboxApi and SnapshotsApi, `@daytona/toolbox-api-client`
 * ProcessApi and FileSystemApi) that docs/design/daytona.md section 10 says a
 * provider needs are each called once through the real `@daytona/sdk`, and
 * each must have reached a route of the stand-in (no 404 "no route", no 501).
 * Fails when the doc's list grows past what is called here, or a route goes missing.
 */
import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { Configuration, SandboxApiAxiosParamCreator, SnapshotsApiAxiosParamCreator } from '@daytona/api-client'
import { FileSystemApiAxiosParamCreator, ProcessApiAxiosParamCreator } from '@daytona/toolbox-api-client'
import type { Sandbox, Snapshot } from '@daytona/sdk'
import { describeWithDocker } from '@testing/support/docker-engine'
import { standinLab } from './helpers/lab.js'

const { reason, use } = await standinLab('routes')

/** A generated operation: its HTTP method (`WS` for the follow socket on its path) and path, `{}` for each parameter segment, toolbox paths under `/toolbox/{}`. */
interface Route {
  method: string
  path: string
}

/** Placeholder for every argument, so the parameter segments of a generated path can be found. */
const MARK = 'ARGUMENT'

/** Every operation of the four generated clients, by `Api.operation`, from their request builders (no request is sent). */
async function generatedOperations(): Promise<Map<string, Route>> {
  type Builder = (...args: unknown[]) => Promise<{ url: string; options: { method?: string } }>
  const clients = { SandboxApi: [SandboxApiAxiosParamCreator, ''], SnapshotsApi: [SnapshotsApiAxiosParamCreator, ''], ProcessApi: [ProcessApiAxiosParamCreator, '/toolbox/{}'], FileSystemApi: [FileSystemApiAxiosParamCreator, '/toolbox/{}'] } as const
  const operations = new Map<string, Route>()
  for (const [api, [creator, prefix]] of Object.entries(clients)) {
    const builders = creator(new Configuration()) as unknown as Record<string, Builder>
    for (const [name, build] of Object.entries(builders)) {
      const { url, options } = await build(...Array.from({ length: build.length }, () => MARK))
      const path = url.split('?')[0]!.split('/').map((segment) => (segment === MARK ? '{}' : segment)).join('/')
      operations.set(`${api}.${name}`, { method: options.method ?? 'GET', path: `${prefix}${path}` })
    }
  }
  return operations
}

/** The routes of docs/design/daytona.md section 10, each with its item number (an item may name two, or none). */
function documentedRoutes(): { item: number; route: Route }[] {
  const doc = readFileSync(new URL('../../../docs/design/daytona.md', import.meta.url), 'utf8')
  const section = doc.slice(doc.indexOf('## 10. '), doc.indexOf('\n## 11. '))
  const items = [...section.matchAll(/^(\d+)\. (.*)$/gm)]
  expect(items.map((m) => Number(m[1])), 'section 10 lists 31 operations').toEqual(Array.from({ length: 31 }, (_, i) => i + 1))
  return items.flatMap(([, item, text]) =>
    [...text!.matchAll(/`(GET|POST|PUT|DELETE|PATCH|WS) ([^`\s]+)`/g)].map(([, method, raw]) => ({
      item: Number(item),
      route: { method: method!, path: raw!.split('?')[0]!.replace('{tb}', '/toolbox/{}').replace(/\{[^}/]*\}/g, '{}') },
    })),
  )
}

/** What the calls below share. */
interface Ctx {
  sandbox: Sandbox
  cmdId: string
  snapshot: Snapshot
  forked: Sandbox
  followed: string
}

describeWithDocker('every route a provider uses exists on the stand-in (route coverage)', reason, () => {
  const lab = use()

  it('answers each generated operation of section 10 through the real SDK with neither 404 nor 501', async () => {
    const operations = await generatedOperations()
    const same = (a: Route, b: Route) => a.method === b.method && a.path === b.path
    const needed = new Map<string, Route>()
    const unmatched: string[] = []
    for (const { item, route } of documentedRoutes()) {
      const http = route.method === 'WS' ? { ...route, method: 'GET' } : route
      const found = [...operations].find(([, op]) => same(op, http))
      if (found) needed.set(route.method === 'WS' ? `WS ${found[0]}` : found[0], route)
      else unmatched.push(`${item}: ${route.method} ${route.path}`)
    }
    // Git (item 30) is GitApi, not one of the four clients; the socket.io channel (item 31) is no generated operation.
    expect(unmatched).toEqual(['30: GET /toolbox/{}/git/status', '30: POST /toolbox/{}/git/clone'])

    const ctx = { sandbox: lab.sandbox } as Ctx
    // One SDK call per needed operation, in an order where each finds what it needs.
    const calls: [string, (c: Ctx) => Promise<unknown>][] = [
      ['SandboxApi.setAutostopInterval', (c) => c.sandbox.setAutostopInterval(30)],
      ['ProcessApi.executeCommand', (c) => c.sandbox.process.executeCommand('echo hi')],
      ['ProcessApi.createSession', (c) => c.sandbox.process.createSession('cov')],
      ['ProcessApi.sessionExecuteCommand', async (c) => (c.cmdId = (await c.sandbox.process.executeSessionCommand('cov', { command: 'read line; echo "got $line"', runAsync: true })).cmdId)],
      ['ProcessApi.sendInput', (c) => c.sandbox.process.sendSessionCommandInput('cov', c.cmdId, 'x\n')],
      ['WS ProcessApi.getSessionCommandLogs', (c) => c.sandbox.process.getSessionCommandLogs('cov', c.cmdId, (out) => (c.followed = (c.followed ?? '') + out), () => {})],
      ['ProcessApi.getSessionCommand', (c) => c.sandbox.process.getSessionCommand('cov', c.cmdId)],
      ['ProcessApi.getSessionCommandLogs', (c) => c.sandbox.process.getSessionCommandLogs('cov', c.cmdId)],
      ['ProcessApi.deleteSession', (c) => c.sandbox.process.deleteSession('cov')],
      ['FileSystemApi.uploadFiles', (c) => c.sandbox.fs.uploadFile(Buffer.from('covered\n'), 'cov/a.txt')],
      ['FileSystemApi.downloadFiles', (c) => c.sandbox.fs.downloadFile('cov/a.txt')],
      ['FileSystemApi.listFiles', (c) => c.sandbox.fs.listFiles('cov')],
      ['FileSystemApi.getFileInfo', (c) => c.sandbox.fs.getFileDetails('cov/a.txt')],
      ['FileSystemApi.createFolder', (c) => c.sandbox.fs.createFolder('cov/d', '755')],
      ['FileSystemApi.moveFile', (c) => c.sandbox.fs.moveFiles('cov/a.txt', 'cov/d/a.txt')],
      ['SandboxApi.getPortPreviewUrl', (c) => c.sandbox.getPreviewLink(3000)],
      ['SandboxApi.getSignedPortPreviewUrl', (c) => c.sandbox.getSignedPreviewUrl(3000, 60)],
      ['SandboxApi.createSandboxSnapshot', (c) => c.sandbox.createSnapshot('cov-snap')],
      ['SnapshotsApi.getSnapshot', async (c) => (c.snapshot = await lab.daytona.snapshot.get('cov-snap'))],
      // `daytona.create` already ran: it made the suite's sandbox (helpers/lab.ts), and its request is in the log checked below.
      ['SandboxApi.createSandbox', async () => {}],
      ['SandboxApi.forkSandbox', async (c) => (c.forked = await c.sandbox.fork())],
      ['SandboxApi.deleteSandbox', (c) => c.forked.delete()],
      ['SnapshotsApi.removeSnapshot', (c) => lab.daytona.snapshot.delete(c.snapshot)],
      ['FileSystemApi.deleteFile', (c) => c.sandbox.fs.deleteFile('cov', true)],
      [
        'SandboxApi.listSandboxes',
        async () => {
          for await (const listed of lab.daytona.list()) void listed
        },
      ],
      ['SandboxApi.getSandbox', (c) => lab.daytona.get(c.sandbox.id)],
      ['SandboxApi.stopSandbox', (c) => c.sandbox.stop()],
      ['SandboxApi.archiveSandbox', (c) => c.sandbox.archive()],
      ['SandboxApi.startSandbox', (c) => c.sandbox.start()],
    ]
    expect(calls.map(([name]) => name).sort(), 'one call for each needed operation').toEqual([...needed.keys()].sort())

    for (const [name, call] of calls) await expect(call(ctx).then(() => 'ok'), name).resolves.toBe('ok')
    expect(ctx.followed).toBe('got x\n')

    const answered = lab.standin.requests()
    const missing: string[] = []
    for (const [name, route] of needed) {
      const pattern = new RegExp(`^${route.path.replace(/\{\}/g, '[^/]+')}$`)
      const statuses = answered.filter((r) => r.method === route.method && pattern.test(r.path)).map((r) => r.status)
      if (statuses.length === 0 || statuses.some((s) => s === 404 || s === 501)) missing.push(`${name} (${route.method} ${route.path}): ${statuses.join(', ') || 'never reached'}`)
    }
    expect(missing).toEqual([])
  })
})
