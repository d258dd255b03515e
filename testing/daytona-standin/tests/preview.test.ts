/**
 * Preview links under the real `@daytona/sdk`, fetched through the
 * stand-in's proxy to a node HTTP server in the sandbox: a standard link
 * needs its token (unless the sandbox is public) and forwards method, path,
 * query, headers and body and streams the answer; signed links need no
 * header, keep to their port and stop at expiry or expire; a sandbox with
 * networkBlockAll has no network and no preview (and, public, needs no
 * token to be told so); the token changes at restart. Skips naming the engine when it is missing; fails under REQUIRE_DOCKER=1.
 */
import { beforeAll, expect, it } from 'vitest'
import type { Sandbox } from '@daytona/sdk'
import { DaytonaServiceUnavailableError, DaytonaValidationError } from '@daytona/sdk'
import { describeWithDocker } from '@testing/support/docker-engine'
import { DAYTONA_IMAGE, PREVIEW_TOKEN_HEADER } from '../src/index.js'
import { standinLab } from './helpers/lab.js'

const { reason, use } = await standinLab('preview')

/** A server on port 3000: `/stream` answers `one` and holds the answer open until `/release`; anything else echoes the request as JSON. */
const SERVER = `
const http = require('http')
let release = () => {}
http.createServer((req, res) => {
  const body = []
  req.on('data', (chunk) => body.push(chunk))
  req.on('end', () => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('one\\n')
      release = () => res.end('two\\n')
    } else if (req.url === '/release') {
      release()
      res.end('released')
    } else {
      res.writeHead(201, { 'content-type': 'application/json', 'x-echo': 'yes' })
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(body).toString() }))
    }
  })
}).listen(3000, () => console.log('listening'))
`

/** Start the server in a sandbox and wait until it listens. */
async function serve(sandbox: Sandbox): Promise<void> {
  await sandbox.fs.uploadFile(Buffer.from(SERVER), 'server.js')
  await sandbox.process.createSession('web')
  const { cmdId } = await sandbox.process.executeSessionCommand('web', { command: 'node server.js', runAsync: true })
  for (let i = 0; i < 100 && !(await sandbox.process.getSessionCommandLogs('web', cmdId)).stdout?.includes('listening'); i++) await new Promise((r) => setTimeout(r, 50))
}

describeWithDocker('preview links on the stand-in under the real @daytona/sdk', reason, () => {
  const lab = use()
  beforeAll(async () => serve(lab.sandbox))

  it('needs the token of a standard link, then forwards method, path, query, headers and body, and streams the answer', async () => {
    const link = await lab.sandbox.getPreviewLink(3000)
    expect(link).toEqual({ sandboxId: lab.sandbox.id, url: `${lab.standin.apiUrl}/preview/3000-${lab.sandbox.id}`, token: expect.stringMatching(/^[a-z0-9]{32}$/) })
    expect((await fetch(`${link.url}/echo`)).status).toBe(401)
    expect((await fetch(`${link.url}/echo`, { headers: { [PREVIEW_TOKEN_HEADER]: 'wrong' } })).status).toBe(401)

    const answer = await fetch(`${link.url}/echo/x?a=1&b=two`, { method: 'POST', headers: { [PREVIEW_TOKEN_HEADER]: link.token, 'x-custom': 'kept' }, body: 'hello' })
    expect(answer.status).toBe(201)
    expect(answer.headers.get('x-echo')).toBe('yes')
    const echoed = (await answer.json()) as { method: string; url: string; headers: Record<string, string>; body: string }
    expect(echoed).toMatchObject({ method: 'POST', url: '/echo/x?a=1&b=two', body: 'hello', headers: { 'x-custom': 'kept', 'x-forwarded-prefix': `/preview/3000-${lab.sandbox.id}` } })
    expect(echoed.headers[PREVIEW_TOKEN_HEADER]).toBeUndefined()
    expect(((await (await fetch(link.url, { headers: { [PREVIEW_TOKEN_HEADER]: link.token } })).json()) as { url: string }).url).toBe('/')

    // The first chunk arrives while the server still holds the answer open.
    const stream = await fetch(`${link.url}/stream`, { headers: { [PREVIEW_TOKEN_HEADER]: link.token } })
    const reader = stream.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('one\n')
    await fetch(`${link.url}/release`, { headers: { [PREVIEW_TOKEN_HEADER]: link.token } })
    let rest = ''
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value)
    expect(rest).toBe('two\n')

    const closed = await fetch(`${lab.standin.apiUrl}/preview/3001-${lab.sandbox.id}/`, { headers: { [PREVIEW_TOKEN_HEADER]: link.token } })
    expect(closed.status).toBe(502)
    expect(await closed.text()).toMatch(/nothing answers on port 3001/)
    await expect(lab.sandbox.getPreviewLink(0)).rejects.toBeInstanceOf(DaytonaValidationError)
    lab.standin.failNext({ route: 'GET /sandbox/{id}/ports/{port}/preview-url', status: 503 })
    await expect(lab.sandbox.getPreviewLink(3000)).rejects.toBeInstanceOf(DaytonaServiceUnavailableError)
  })

  it('opens a signed link without a header, for its port only, until it expires or is expired', async () => {
    const signed = await lab.sandbox.getSignedPreviewUrl(3000, 60)
    expect(signed).toEqual({ sandboxId: lab.sandbox.id, port: 3000, token: expect.stringMatching(/^[a-z0-9]{16}$/), url: `${lab.standin.apiUrl}/preview/3000-${signed.token}` })
    expect(((await (await fetch(`${signed.url}/signed?q=1`)).json()) as { url: string }).url).toBe('/signed?q=1')
    expect((await fetch(`${lab.standin.apiUrl}/preview/3001-${signed.token}/`)).status).toBe(404)
    await lab.sandbox.expireSignedPreviewUrl(3000, signed.token)
    expect((await fetch(signed.url)).status).toBe(401)

    const short = await lab.sandbox.getSignedPreviewUrl(3000, 1)
    expect((await fetch(short.url)).status).toBe(201)
    await new Promise((r) => setTimeout(r, 1000))
    const late = await fetch(short.url)
    expect(late.status).toBe(401)
    expect(await late.text()).toMatch(/has expired/)
    await expect(lab.sandbox.getSignedPreviewUrl(3000, 0)).rejects.toBeInstanceOf(DaytonaValidationError)
  })

  it('gives a networkBlockAll sandbox no network and no preview; a public one needs no token to get that far', async () => {
    const blocked = await lab.daytona.create({ image: DAYTONA_IMAGE, networkBlockAll: true, public: true })
    try {
      expect(blocked.networkBlockAll).toBe(true)
      expect((await lab.daytona.get(blocked.id)).networkBlockAll).toBe(true)
      expect((await blocked.process.executeCommand('ls /sys/class/net')).result).toBe('lo\n')
      // Public: no token, yet not a 401; the refusal is the network's.
      const refused = await fetch((await blocked.getPreviewLink(3000)).url)
      expect(refused.status).toBe(409)
      expect(await refused.text()).toMatch(/networkBlockAll/)
    } finally {
      await blocked.delete()
    }
  })

  it('refuses a stopped sandbox and changes the token when it starts again', async () => {
    const before = await lab.sandbox.getPreviewLink(3000)
    await lab.sandbox.stop()
    const stopped = await fetch(before.url, { headers: { [PREVIEW_TOKEN_HEADER]: before.token } })
    expect(stopped.status).toBe(409)
    expect(await stopped.text()).toMatch(/is stopped/)
    await lab.sandbox.start()
    const after = await lab.sandbox.getPreviewLink(3000)
    expect(after.token).not.toBe(before.token)
    expect((await fetch(after.url, { headers: { [PREVIEW_TOKEN_HEADER]: before.token } })).status).toBe(401)
  })
})
