/**
 * Who may use the example's API, over real HTTP against the server process
 * (offline, local-process): what a page of another site can send without a
 * preflight (a `text/plain` POST with its own `Origin`) is refused and starts
 * nothing; a `Host` that is not the server's (DNS rebinding) is refused; the
 * API answers 401 without the launch's token and works with it, while the
 * page's own files load without it; the third concurrent start of one client
 * is a 429 that names `SANDBOX_WEB_MAX_RUNS`, the server-wide cap is a 429 that
 * names `SANDBOX_WEB_MAX_RUNS_TOTAL`, and a slot comes back when a run ends.
 * And the new settings are checked: a malformed `SANDBOX_WEB_TOKEN` or cap
 * stops the server with a message naming the variable.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readConfig } from '../src/server/config.js'
import { SAMPLE_TASK } from '../src/server/model.js'
import { freePort, rawRequest, readUntil, startRunOverApi, startServer, type AppServer } from './helpers/app.js'

/** The runs the server lists for `threadId` (with the token). */
async function runsOf(server: AppServer, threadId: string): Promise<{ runId: string; status: string }[]> {
  const response = await server.api(`/api/threads/${threadId}`)
  expect(response.status).toBe(200)
  return ((await response.json()) as { runs: { runId: string; status: string }[] }).runs
}

const cancel = (server: AppServer, threadId: string) =>
  server.api('/api/run/cancel', { method: 'POST', headers: { origin: server.url, 'content-type': 'application/json' }, body: JSON.stringify({ threadId }) })

describe('examples/sandbox-web: who may use the API', () => {
  let server: AppServer
  let modelPort: number
  beforeAll(async () => {
    // A data folder that exists already, readable by every user of the machine.
    const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-web-access-'))
    chmodSync(dataDir, 0o755)
    modelPort = await freePort()
    server = await startServer({ dataDir, env: { SANDBOX_WEB_MODEL_PORT: String(modelPort) } })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
  })

  it('another user of the machine reads nothing: the data folder (runs, prompts, sandboxes) is set to 0700 though it existed at 0755', () => {
    expect(statSync(server.dataDir).mode & 0o777).toBe(0o700)
    expect(statSync(join(server.dataDir, 'runs.db')).isFile()).toBe(true)
  })

  it("a page cannot reach the offline model: aimock's control API answers 404 to anyone, the Messages API to anyone without the agent's key", async () => {
    const model = `http://127.0.0.1:${modelPort}`
    const foreign = { origin: 'http://evil.example', 'content-type': 'text/plain' }
    // What a page sent to rewrite the script (a reset, then its own fixture) and to read every model request.
    expect((await fetch(`${model}/__aimock/reset`, { method: 'POST', headers: foreign, body: '{}' })).status).toBe(404)
    expect((await fetch(`${model}/__aimock/fixtures`, { method: 'POST', headers: foreign, body: JSON.stringify({ fixtures: [] }) })).status).toBe(404)
    const journal = await fetch(`${model}/__aimock/journal`, { headers: { origin: 'http://evil.example' } })
    expect(journal.status).toBe(404)
    expect(journal.headers.get('access-control-allow-origin')).toBeNull()
    const ask = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: SAMPLE_TASK }] })
    expect((await fetch(`${model}/v1/messages`, { method: 'POST', headers: foreign, body: ask })).status).toBe(404)
    expect((await fetch(`${model}/v1/messages`, { method: 'POST', headers: { ...foreign, 'x-api-key': 'a-guess' }, body: ask })).status).toBe(404)
    // The agent's key lives in the 0700 data folder, 0600; with it the request reaches the scripted model.
    const keyFile = join(server.dataDir, 'offline-model.key')
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    const answer = await fetch(`${model}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': readFileSync(keyFile, 'utf8').trim() }, body: ask })
    expect(answer.status).toBe(200)
  })

  it('a cross-site text/plain POST (the kind a page sends without a preflight) is refused and starts no run; so is a cancel', async () => {
    const stamp = Date.now()
    const threadId = `xsite-${stamp}`
    const runId = `xsite-run-${stamp}`
    const body = JSON.stringify({ threadId, prompt: SAMPLE_TASK })
    const foreign = { origin: 'http://evil.example', 'content-type': 'text/plain' }
    // What a foreign page can send: it has no token, its own Origin, a JSON body labelled text/plain.
    const bare = await fetch(`${server.url}/api/run?runId=${runId}`, { method: 'POST', headers: foreign, body })
    expect(bare.status).toBe(403)
    expect(((await bare.json()) as { error: string }).error).toMatch(/own page/)
    // Refused for its Origin and its type on their own, even with the token.
    expect((await server.api(`/api/run?runId=${runId}`, { method: 'POST', headers: foreign, body })).status).toBe(403)
    expect((await server.api(`/api/run?runId=${runId}`, { method: 'POST', headers: { origin: 'http://evil.example', 'content-type': 'application/json' }, body })).status).toBe(403)
    expect((await server.api(`/api/run?runId=${runId}`, { method: 'POST', headers: { origin: `http://127.0.0.1:${Number(new URL(server.url).port) + 1}`, 'content-type': 'application/json' }, body })).status).toBe(403)
    const plain = await server.api(`/api/run?runId=${runId}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body })
    expect(plain.status).toBe(415)
    expect(((await plain.json()) as { error: string }).error).toMatch(/application\/json/)
    expect((await fetch(`${server.url}/api/run/cancel`, { method: 'POST', headers: foreign, body: JSON.stringify({ threadId }) })).status).toBe(403)
    expect((await fetch(`${server.url}/api/status/sweep`, { method: 'POST', headers: { origin: 'http://evil.example' } })).status).toBe(403)

    // Nothing was started: no record on the thread, no prompt saved.
    expect(await runsOf(server, threadId)).toEqual([])
    expect(existsSync(join(server.dataDir, 'prompts', `${runId}.json`))).toBe(false)
  })

  it('a request whose Host is not 127.0.0.1:<port> or localhost:<port> (DNS rebinding) is refused, page and API', async () => {
    const { port } = new URL(server.url)
    const auth = { authorization: `Bearer ${server.token}` }
    const rebound = await rawRequest(server, '/api/status', { headers: { host: `evil.example:${port}`, ...auth } })
    expect(rebound.status).toBe(403)
    expect(JSON.parse(rebound.body)).toEqual({ error: expect.stringMatching(/Host 127\.0\.0\.1/) })
    expect((await rawRequest(server, '/', { headers: { host: `evil.example:${port}` } })).status).toBe(403)
    expect((await rawRequest(server, '/api/status', { headers: { host: `127.0.0.1:${Number(port) + 1}`, ...auth } })).status).toBe(403)
    // A start with everything right but the Host starts nothing.
    const threadId = `rebound-${Date.now()}`
    const start = await rawRequest(server, `/api/run?runId=run-${threadId}`, { method: 'POST', headers: { host: `evil.example:${port}`, 'content-type': 'application/json', ...auth }, body: JSON.stringify({ threadId, prompt: SAMPLE_TASK }) })
    expect(start.status).toBe(403)
    expect(await runsOf(server, threadId)).toEqual([])
    // The server's own names are served.
    expect((await rawRequest(server, '/api/status', { headers: { host: `localhost:${port}`, ...auth } })).status).toBe(200)
    expect((await rawRequest(server, '/api/status', { headers: { host: `127.0.0.1:${port}`, ...auth } })).status).toBe(200)
  })

  it('without the token the API answers 401 and starts nothing; with it, it works; the page itself loads without it', async () => {
    const threadId = `nobody-${Date.now()}`
    const wrong = randomBytes(32).toString('base64url')
    const attempts: Record<string, string>[] = [{}, { authorization: `Bearer ${wrong}` }, { authorization: `Bearer ${server.token}x` }, { authorization: `Basic ${server.token}` }]
    for (const headers of attempts) {
      for (const path of ['/api/status', '/api/sample', `/api/threads/${threadId}`, `/api/run?runId=run-${threadId}&offset=-1`]) {
        const response = await fetch(`${server.url}${path}`, { headers })
        expect(response.status, `${path} ${JSON.stringify(headers)}`).toBe(401)
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/)
        const text = await response.text()
        expect(text).toMatch(/\?token=/)
        expect(text).not.toContain(server.token)
      }
    }
    // The token in the API's query string is not a credential: only the header is.
    expect((await fetch(`${server.url}/api/status?token=${server.token}`)).status).toBe(401)
    const start = await fetch(`${server.url}/api/run?runId=run-${threadId}`, { method: 'POST', headers: { origin: server.url, 'content-type': 'application/json' }, body: JSON.stringify({ threadId, prompt: SAMPLE_TASK }) })
    expect(start.status).toBe(401)
    expect((await fetch(`${server.url}/api/run/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId }) })).status).toBe(401)

    expect(await runsOf(server, threadId)).toEqual([]) // with the token: works, and shows nothing was started
    expect((await server.api('/api/status')).status).toBe(200)
    const page = await fetch(`${server.url}/?token=${server.token}`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/text\/html/)
    expect(page.headers.get('x-frame-options')).toBe('DENY')
    expect(page.headers.get('referrer-policy')).toBe('no-referrer')
  })

  it('the third concurrent start of one client gets 429 naming SANDBOX_WEB_MAX_RUNS and starts nothing; a slot comes back when a run ends', async () => {
    const stamp = Date.now()
    const threads = [`cap-a-${stamp}`, `cap-b-${stamp}`]
    const started = await Promise.all(threads.map((threadId) => startRunOverApi(server, `run-${threadId}`, threadId, SAMPLE_TASK)))
    expect(started.map((response) => response.status)).toEqual([200, 200])

    const third = `cap-c-${stamp}`
    const refused = await startRunOverApi(server, `run-${third}`, third, SAMPLE_TASK)
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { error: string }).error).toMatch(/SANDBOX_WEB_MAX_RUNS=2\): wait for one to finish or stop it/)
    expect(await runsOf(server, third)).toEqual([])

    // Stop both once they are working; each still counts until its record leaves `running`.
    const reading = await Promise.all(started.map((response) => readUntil(response, 'toolu_web_1_look')))
    for (const threadId of threads) expect(((await (await cancel(server, threadId)).json()) as { cancelled: string | null }).cancelled).toBe(`run-${threadId}`)
    await Promise.all(reading.map((read) => read.rest()))
    for (const threadId of threads) await expect.poll(async () => (await runsOf(server, threadId))[0]?.status, { timeout: 30_000, interval: 250 }).toBe('aborted')

    // Slots free: a start goes in again (a task the offline model answers in one short reply).
    const again = await startRunOverApi(server, `run-${third}`, third, 'Say hello.')
    expect(again.status).toBe(200)
    expect(await again.text()).toContain('RUN_FINISHED')
  }, 180_000)

  it('the server-wide cap answers 429 naming SANDBOX_WEB_MAX_RUNS_TOTAL; SANDBOX_WEB_TOKEN is the token it prints', async () => {
    const token = randomBytes(32).toString('hex')
    const capped = await startServer({ env: { SANDBOX_WEB_TOKEN: token, SANDBOX_WEB_MAX_RUNS: '3', SANDBOX_WEB_MAX_RUNS_TOTAL: '1' } })
    try {
      expect(capped.token).toBe(token)
      const stamp = Date.now()
      const first = await startRunOverApi(capped, `run-total-a-${stamp}`, `total-a-${stamp}`, SAMPLE_TASK)
      expect(first.status).toBe(200)
      const second = await startRunOverApi(capped, `run-total-b-${stamp}`, `total-b-${stamp}`, SAMPLE_TASK)
      expect(second.status).toBe(429)
      expect(((await second.json()) as { error: string }).error).toMatch(/SANDBOX_WEB_MAX_RUNS_TOTAL=1/)
      const reading = await readUntil(first, 'toolu_web_1_look')
      expect((await cancel(capped, `total-a-${stamp}`)).status).toBe(200)
      await reading.rest()
    } finally {
      await capped.stop()
    }
  }, 180_000)
})

describe('examples/sandbox-web: the access settings', () => {
  it('SANDBOX_WEB_TOKEN must be 32 to 512 URL-safe characters; unset, each start makes a new random one', () => {
    expect(() => readConfig([], { SANDBOX_WEB_TOKEN: 'too-short' })).toThrow(/^SANDBOX_WEB_TOKEN is 9 characters long: set it to 32 to 512/)
    expect(() => readConfig([], { SANDBOX_WEB_TOKEN: `${'a'.repeat(40)} b` })).toThrow(/SANDBOX_WEB_TOKEN has a character outside/)
    try {
      readConfig([], { SANDBOX_WEB_TOKEN: 'secret-but-short' })
    } catch (error) {
      expect(String(error)).not.toContain('secret-but-short') // a malformed token is never echoed
    }
    const fixed = 'x'.repeat(32)
    expect(readConfig([], { SANDBOX_WEB_TOKEN: fixed }).accessToken).toBe(fixed)
    const [one, two] = [readConfig([], {}).accessToken, readConfig([], {}).accessToken]
    expect(one).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(one).not.toBe(two)
  })

  it('the caps default to 2 per client and 4 in all, and take whole numbers of 1 or more', () => {
    expect(readConfig([], {})).toMatchObject({ maxRunsPerClient: 2, maxRunsTotal: 4 })
    expect(readConfig([], { SANDBOX_WEB_MAX_RUNS: '5', SANDBOX_WEB_MAX_RUNS_TOTAL: '9' })).toMatchObject({ maxRunsPerClient: 5, maxRunsTotal: 9 })
    expect(() => readConfig([], { SANDBOX_WEB_MAX_RUNS: '0' })).toThrow(/^SANDBOX_WEB_MAX_RUNS=0: expected a whole number/)
    expect(() => readConfig([], { SANDBOX_WEB_MAX_RUNS_TOTAL: 'two' })).toThrow(/^SANDBOX_WEB_MAX_RUNS_TOTAL=two: expected a whole number/)
    expect(() => readConfig([], { SANDBOX_WEB_MAX_RUNS: '1.5' })).toThrow(/SANDBOX_WEB_MAX_RUNS=1.5/)
  })

  it('a server given a malformed SANDBOX_WEB_TOKEN exits with the message instead of serving', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-web-badtoken-'))
    try {
      await expect(startServer({ dataDir, env: { SANDBOX_WEB_TOKEN: 'too-short' } })).rejects.toThrow(/exited with 1[\s\S]*SANDBOX_WEB_TOKEN is 9 characters long/)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})
