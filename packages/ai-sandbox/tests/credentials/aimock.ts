/**
 * aimock, the fake model server of every suite, for the model proxy tests:
 * in-process on a free port, with its inbound key check on, so a request
 * without the real key is answered 401 and never journaled. The core package
 * cannot depend on @testing/support (which depends on the core), so aimock is
 * loaded from testing/support's own dependencies, where the end-to-end suites
 * get it; only the members used here are typed.
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { createModelProxy, type ModelProxy, type ModelProxyOptions } from '../../src/internal.js'

/** One request aimock answered, as its journal keeps it (credential headers read `[REDACTED]`). */
export interface JournaledRequest {
  method: string
  path: string
  headers: Record<string, string>
  body: unknown
}

interface LLMockServer {
  addFixturesFromJSON: (fixtures: unknown[]) => void
  start: () => Promise<string>
  stop: () => Promise<void>
  getRequests: () => JournaledRequest[]
}

const { LLMock } = createRequire(new URL('../../../../testing/support/package.json', import.meta.url))('@copilotkit/aimock') as {
  LLMock: new (options: { port: number; host: string; logLevel: 'silent'; latency?: number; chunkSize?: number; auth: { apiKeys: string[] } }) => LLMockServer
}

/** The real key aimock accepts: distinctive, so a leak is easy to search for. */
export const REAL_KEY = `sk-real-${randomBytes(16).toString('hex')}`

/** Usage every fixture answer reports: 11 in, 7 out (18 in all). */
export const FIXTURE_USAGE = { inputTokens: 11, outputTokens: 7 }

/**
 * The answer to the user message `hello`, on every wire. `id` and `created`
 * are fixed so two answers compare byte for byte (aimock draws the rest of
 * its ids at random: see `sameAnswer`). The usage fields are each wire's own
 * names; a wire ignores the others.
 */
const FIXTURES = [
  {
    match: { userMessage: 'hello' },
    response: { content: 'Hello from the fake model, streamed in a few pieces.', id: 'fixed-id', created: 1700000000, usage: { input_tokens: 11, output_tokens: 7, prompt_tokens: 11, completion_tokens: 7 } },
  },
]

/** A running aimock. */
export interface Aimock {
  readonly url: string
  /** Every request it answered (a 401 is not journaled), oldest first. */
  requests: () => JournaledRequest[]
  stop: () => Promise<void>
}

/**
 * Start aimock on 127.0.0.1 with a free port, accepting only {@link REAL_KEY}.
 * @param latency - Milliseconds between streamed chunks (default 0), for a test that needs an answer still streaming.
 */
export async function startAimock(latency = 0): Promise<Aimock> {
  const mock = new LLMock({ port: 0, host: '127.0.0.1', logLevel: 'silent', auth: { apiKeys: [REAL_KEY] }, ...(latency > 0 ? { latency, chunkSize: 4 } : {}) })
  mock.addFixturesFromJSON(FIXTURES)
  const url = await mock.start()
  return { url, requests: () => mock.getRequests(), stop: () => mock.stop() }
}

/** What {@link useAimockProxies} gives a test file. */
export interface AimockProxies {
  /** The file's aimock (started before its first test). */
  readonly aimock: Aimock
  /** A proxy with the real key in front of `upstream.baseUrl` (default the file's aimock), closed after the test. */
  proxy: (upstream: Partial<ModelProxyOptions['upstream']> & Pick<ModelProxyOptions['upstream'], 'wire'>, budget?: ModelProxyOptions['budget']) => Promise<ModelProxy>
}

/** One aimock for the calling file, and proxies in front of it that each test closes: the hooks are registered here. */
export function useAimockProxies(): AimockProxies {
  let aimock: Aimock | undefined
  const open: ModelProxy[] = []
  beforeAll(async () => {
    aimock = await startAimock()
  })
  afterAll(() => aimock?.stop())
  afterEach(async () => {
    for (const proxy of open.splice(0)) await proxy.close()
  })
  return {
    get aimock() {
      if (!aimock) throw new Error('useAimockProxies: aimock starts in beforeAll; use it inside a test')
      return aimock
    },
    async proxy(upstream, budget) {
      const proxy = await createModelProxy({ upstream: { baseUrl: this.aimock.url, apiKey: REAL_KEY, ...upstream }, ...(budget === undefined ? {} : { budget }) })
      open.push(proxy)
      return proxy
    },
  }
}
