/**
 * The model proxy over real HTTP in front of real aimock, on all three wires,
 * streamed and not: the answer comes through unchanged, the upstream gets the
 * real key and never the run token, usage is what the answer reported, a
 * missing, wrong or revoked token gets 401 with nothing forwarded, upstream
 * errors and an unreachable upstream are reported, and close() cuts answers in
 * flight and frees the port.
 */
import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import { createSecrets } from '../../src/index.js'
import { createModelProxy, type ModelProxy, type ModelWire } from '../../src/internal.js'
import { FIXTURE_USAGE, REAL_KEY, startAimock, useAimockProxies } from './aimock.js'
import { callModel, keyHeader, MODEL, WIRES, withoutRandomIds } from './wire-calls.js'

const env = useAimockProxies()

const proxyFor = (wire: ModelWire, baseUrl?: string): Promise<ModelProxy> => env.proxy(baseUrl === undefined ? { wire } : { wire, baseUrl })

/** Everything the agent can see of a response: status, headers and body. */
async function seen(response: Response): Promise<string> {
  const headers: string[] = []
  response.headers.forEach((value, name) => headers.push(`${name}: ${value}`))
  return `${response.status}\n${headers.join('\n')}\n${await response.text()}`
}

describe.each(WIRES)('%s', (wire) => {
  it.each([false, true])('passes the answer through unchanged (stream: %s), with the real key upstream and the usage it reported', async (stream) => {
    const proxy = await proxyFor(wire)
    const before = env.aimock.requests().length
    const direct = await callModel(env.aimock.url, wire, { stream, headers: keyHeader(wire, REAL_KEY) })
    const proxied = await callModel(proxy.url, wire, { stream, headers: keyHeader(wire, proxy.token) })

    expect(proxied.status).toBe(200)
    expect(proxied.status).toBe(direct.status)
    expect(proxied.headers.get('content-type')).toBe(direct.headers.get('content-type'))
    const [directText, proxiedText] = [await direct.text(), await proxied.text()]
    expect(proxiedText).toContain('Hello from')
    expect(withoutRandomIds(proxiedText)).toBe(withoutRandomIds(directText))

    // aimock answers 200 only to the real key; its journal shows the key in the wire's one header and no trace of the token.
    const [, upstream] = env.aimock.requests().slice(before)
    expect(upstream?.headers[wire === 'anthropic-messages' ? 'x-api-key' : 'authorization']).toBe('[REDACTED]')
    expect(upstream?.headers[wire === 'anthropic-messages' ? 'authorization' : 'x-api-key']).toBeUndefined()
    expect(JSON.stringify(upstream)).not.toContain(proxy.token)

    expect(proxy.usage()).toEqual({
      ...FIXTURE_USAGE,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      totalTokens: 18,
      requests: 1,
      byModel: { [MODEL[wire]]: { ...FIXTURE_USAGE, cacheReadTokens: 0, cacheWriteTokens: 0, requests: 1 } },
    })
  })

  it('answers 401 in the wire error format and forwards nothing, for a missing, wrong or misplaced token', async () => {
    const proxy = await proxyFor(wire)
    const before = env.aimock.requests().length
    const attempts: Record<string, string>[] = [{}, keyHeader(wire, 'not-the-token'), keyHeader(wire, REAL_KEY), { authorization: `Basic ${proxy.token}` }, { authorization: `Bearer ${proxy.token}x` }]
    for (const headers of attempts) {
      const response = await callModel(proxy.url, wire, { headers })
      expect(response.status).toBe(401)
      const body = (await response.json()) as Record<string, unknown>
      if (wire === 'anthropic-messages') expect(body).toMatchObject({ type: 'error', error: { type: 'authentication_error', message: expect.stringContaining('run token') } })
      else expect(body).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key', message: expect.stringContaining('run token') } })
    }
    expect(env.aimock.requests().length).toBe(before)
    expect(proxy.usage().requests).toBe(0)
  })

  it('refuses the token after revoke(), forwarding nothing more', async () => {
    const proxy = await proxyFor(wire)
    expect((await callModel(proxy.url, wire, { headers: keyHeader(wire, proxy.token) })).status).toBe(200)
    const before = env.aimock.requests().length
    proxy.revoke()
    proxy.revoke()
    expect((await callModel(proxy.url, wire, { headers: keyHeader(wire, proxy.token) })).status).toBe(401)
    expect((await callModel(proxy.url, wire, { stream: true, headers: keyHeader(wire, proxy.token) })).status).toBe(401)
    expect(env.aimock.requests().length).toBe(before)
  })

  it("passes the upstream's own error status and body through, without the real key", async () => {
    const proxy = await proxyFor(wire)
    // No fixture answers this message: aimock says 404 in its error format.
    const direct = await callModel(env.aimock.url, wire, { text: 'nothing matches this', headers: keyHeader(wire, REAL_KEY) })
    const proxied = await callModel(proxy.url, wire, { text: 'nothing matches this', headers: keyHeader(wire, proxy.token) })
    expect(proxied.status).toBe(404)
    expect(proxied.status).toBe(direct.status)
    expect(await proxied.text()).toBe(await direct.text())
    expect(proxy.usage().requests).toBe(0)
  })

  it('answers 502 in the wire error format when the upstream cannot be reached', async () => {
    const port = await freePort()
    const proxy = await proxyFor(wire, `http://127.0.0.1:${port}`)
    const response = await callModel(proxy.url, wire, { headers: keyHeader(wire, proxy.token) })
    expect(response.status).toBe(502)
    const text = await response.text()
    expect(text).toContain(`could not reach the model API at http://127.0.0.1:${port} (ECONNREFUSED)`)
    expect(text).toContain(wire === 'anthropic-messages' ? '"type":"api_error"' : '"code":"upstream_unreachable"')
    expect(text).not.toContain(REAL_KEY)
  })
})

it('takes the token in the other wire style too: Bearer for Anthropic, x-api-key for OpenAI', async () => {
  const anthropic = await proxyFor('anthropic-messages')
  expect((await callModel(anthropic.url, 'anthropic-messages', { headers: { authorization: `Bearer ${anthropic.token}` } })).status).toBe(200)
  const chat = await proxyFor('openai-chat')
  expect((await callModel(chat.url, 'openai-chat', { headers: { 'x-api-key': chat.token } })).status).toBe(200)
  // Whichever header carried the token, the upstream got the real key in its own header only.
  const [fromAnthropic, fromChat] = env.aimock.requests().slice(-2)
  expect(Object.keys(fromAnthropic?.headers ?? {})).not.toContain('authorization')
  expect(Object.keys(fromChat?.headers ?? {})).not.toContain('x-api-key')
})

it('resolves the key from a SecretRef and keeps it out of everything the agent sees', async () => {
  const secrets = createSecrets({ MODEL_KEY: REAL_KEY })
  const proxy = await env.proxy({ wire: 'openai-responses', baseUrl: `${env.aimock.url}/`, apiKey: secrets.MODEL_KEY })
  const answers = [await callModel(proxy.url, 'openai-responses', { stream: true, headers: keyHeader('openai-responses', proxy.token) }), await callModel(proxy.url, 'openai-responses', { headers: {} })]
  expect(answers.map((response) => response.status)).toEqual([200, 401])
  for (const response of answers) expect(await seen(response)).not.toContain(REAL_KEY)
  expect(JSON.stringify(proxy)).not.toContain(REAL_KEY)
  expect(proxy.usage().totalTokens).toBe(18)
})

it('adds up usage over requests and models', async () => {
  const proxy = await proxyFor('openai-chat')
  for (const model of ['gpt-a', 'gpt-b', 'gpt-a']) await (await callModel(proxy.url, 'openai-chat', { model, stream: model === 'gpt-a', headers: keyHeader('openai-chat', proxy.token) })).text()
  const usage = proxy.usage()
  expect(usage).toMatchObject({ inputTokens: 33, outputTokens: 21, totalTokens: 54, requests: 3 })
  expect(usage.byModel['gpt-a']).toMatchObject({ inputTokens: 22, outputTokens: 14, requests: 2 })
  expect(usage.byModel['gpt-b']).toMatchObject({ inputTokens: 11, outputTokens: 7, requests: 1 })
  expect(usage.costUsd).toBeUndefined()
})

it('close() cuts an answer in flight, refuses new connections and frees the port', async () => {
  const slow = await startAimock(20)
  try {
    const proxy = await createModelProxy({ upstream: { wire: 'anthropic-messages', baseUrl: slow.url, apiKey: REAL_KEY } })
    const response = await callModel(proxy.url, 'anthropic-messages', { stream: true, headers: keyHeader('anthropic-messages', proxy.token) })
    const reader = response.body!.getReader()
    expect((await reader.read()).done).toBe(false)
    await Promise.all([proxy.close(), proxy.close()])
    // The rest of the answer never arrives: the stream fails instead of ending as if complete.
    await expect(drain(reader)).rejects.toThrow()
    await expect(callModel(proxy.url, 'anthropic-messages', { headers: keyHeader('anthropic-messages', proxy.token) })).rejects.toThrow()
    await expect(listenOn(proxy.port)).resolves.toBe(proxy.port)
  } finally {
    await slow.stop()
  }
})

async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  for (;;) if ((await reader.read()).done) return
}

/** Listen on `port` and close again: resolves with the port when it was free. */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(port)))
  })
}

/** A port nothing listens on (taken from the OS, then released). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
