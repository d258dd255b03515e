/**
 * The HTTP surface's answers to bad input, over fetch against the server
 * process (offline): a body past the limit is refused before it is read
 * whole (413), an unknown API path is a JSON 404 (never the page), and ids
 * outside the accepted pattern are a 400 on every route, and so is a path
 * that is not valid percent-encoding (without a stack trace in the log). The
 * built app's files are served, and no path (`..`, encoded or not) reads a
 * file outside dist/client. A run writes only the log its `?runId` names,
 * whatever `X-Run-Id` says.
 * Every call carries the server's access token (`server.api`); what happens
 * without it is tests/access.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EXAMPLE_DIR, rawRequest, readRunLog, startServer, type AppServer } from './helpers/app.js'

const CLIENT_DIR = join(EXAMPLE_DIR, 'dist/client')

describe('examples/sandbox-web routes: bad input', () => {
  let server: AppServer
  beforeAll(async () => {
    server = await startServer()
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
  })

  const post = (path: string, body: string) => server.api(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body })

  it('an unknown API path is a JSON 404, not the page', async () => {
    for (const path of ['/api/nonexistent', '/api/threads/']) {
      const response = await server.api(path)
      expect(response.status, path).toBe(404)
      expect(response.headers.get('content-type'), path).toMatch(/json/)
    }
  })

  it('ids outside letters, digits, _ and - are 400 on every route', async () => {
    expect((await post('/api/run/cancel', JSON.stringify({ threadId: '../../etc' }))).status).toBe(400)
    expect((await post('/api/run?runId=a%2Fb', JSON.stringify({ threadId: 't', prompt: 'p' }))).status).toBe(400)
    expect((await server.api('/api/threads/..%2F..')).status).toBe(400)
    expect((await server.api('/api/run?runId=a%20b&offset=-1')).status).toBe(400)
  })

  it('a path that is not valid percent-encoding is 400, with no stack trace in the server output', async () => {
    const before = server.output().length
    for (const path of ['/%', '/%E0%A4%A', '/assets/%zz.js']) {
      const response = await fetch(`${server.url}${path}`)
      expect(response.status, path).toBe(400)
      expect(await response.text(), path).toMatch(/percent-encoding/)
    }
    const printed = server.output().slice(before)
    expect(printed).not.toMatch(/URIError|\n\s+at /)
  })

  it("serves the built app's files, and no path reads a file outside dist/client", async () => {
    const asset = readdirSync(join(CLIENT_DIR, 'assets')).find((name) => name.endsWith('.js'))!
    const served = await rawRequest(server, `/assets/${asset}`)
    expect(served.status).toBe(200)
    expect(served.body).toBe(readFileSync(join(CLIENT_DIR, 'assets', asset), 'utf8'))
    const page = readFileSync(join(CLIENT_DIR, 'index.html'), 'utf8')
    expect(await rawRequest(server, '/some/client/route')).toEqual({ status: 200, body: page })
    // The example's package.json is two folders above dist/client. Each attempt gets the page or a 400, never the file.
    for (const path of ['/../../package.json', '/assets/../../../package.json', '/%2e%2e/%2e%2e/package.json', '/.%2e/.%2e/package.json', '/..%2f..%2fpackage.json', '/assets/..%2F..%2F..%2Fpackage.json', '/%252e%252e/%252e%252e/package.json', '/..\\..\\package.json', '/..%5c..%5cpackage.json']) {
      const response = await rawRequest(server, path)
      expect(response.body, path).not.toContain('@example/sandbox-web')
      expect(response.status === 400 || response.body === page, `${path}: ${response.status}`).toBe(true)
    }
  })

  it("a POST whose X-Run-Id header names another run writes only the run its ?runId names; a finished log stays as it was", async () => {
    const { task } = (await (await server.api('/api/sample')).json()) as { task: string }
    const start = (runId: string, threadId: string, headers: Record<string, string> = {}) =>
      server.api(`/api/run?runId=${runId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ threadId, prompt: task }) }).then((r) => r.text())
    const stamp = Date.now()
    const victim = `victim-${stamp}`
    await start(victim, `victim-thread-${stamp}`)
    const before = await readRunLog(server, victim)
    expect(before.at(-1)?.chunk.type).toBe('RUN_FINISHED')
    const attacker = `attacker-${stamp}`
    await start(attacker, `attacker-thread-${stamp}`, { 'X-Run-Id': victim })
    // Before: the attacker's whole run landed in the victim's finished log (17 chunks in the report).
    expect(await readRunLog(server, victim), "the victim's log is exactly what it was").toEqual(before)
    const own = await readRunLog(server, attacker)
    expect(own.at(-1)?.chunk.type, 'the run went to the log its ?runId names').toBe('RUN_FINISHED')
  }, 180_000)

  it('two POSTs naming one new run id at once, from two threads, start one run: the other is 409 and writes nothing into its log', async () => {
    const { task } = (await (await server.api('/api/sample')).json()) as { task: string }
    const stamp = Date.now()
    const runId = `twice-${stamp}`
    const threads = [`twice-a-${stamp}`, `twice-b-${stamp}`]
    const responses = await Promise.all(
      threads.map((threadId) => server.api(`/api/run?runId=${runId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId, prompt: task }) })),
    )
    const bodies = await Promise.all(responses.map((r) => r.text()))
    // Before: both passed the checks before either created the record, and two agents wrote one log.
    expect(responses.map((r) => r.status).sort()).toEqual([200, 409])
    const refused = responses.findIndex((r) => r.status === 409)
    expect(bodies[refused]).toMatch(/exists already/)
    const log = await readRunLog(server, runId)
    expect(log.filter((e) => e.chunk.type === 'RUN_STARTED'), 'one run in the log').toHaveLength(1)
    expect(log.at(-1)?.chunk.type).toBe('RUN_FINISHED')
    const threadsInLog = new Set(log.flatMap((e) => ('threadId' in e.chunk && typeof e.chunk.threadId === 'string' ? [e.chunk.threadId] : [])))
    expect([...threadsInLog], 'every chunk is the accepted thread\'s').toEqual([threads[1 - refused]])
  }, 180_000)

  // Last: the server answers before the body is sent whole and closes that connection, which fetch may have pooled.
  it('a request body past the limit is 413, whatever it holds', async () => {
    // Under the body limit but over the task limit: the task's own message.
    const long = await post('/api/run?runId=long', JSON.stringify({ threadId: 't', prompt: 'x'.repeat(100_001) }))
    expect(long.status).toBe(413)
    expect(((await long.json()) as { error: string }).error).toMatch(/100001 characters/)
    const huge = JSON.stringify({ threadId: 't', prompt: 'x'.repeat(2_000_000) })
    const response = await post('/api/run?runId=big', huge)
    expect(response.status).toBe(413)
    expect(((await response.json()) as { error: string }).error).toMatch(/too large/)
  })
})
