/**
 * A fake Grok Build CLI: `grok agent --model <m> [--auto-approve] stdio`
 * speaking the Agent Client Protocol over stdio with the SDK's agent side.
 * It authenticates from `XAI_API_KEY` (or `authenticate`), keeps sessions in
 * `$HOME/.grok/sessions` so `session/load` works across processes (replaying
 * the history first, as ACP asks), asks permission for tools unless started
 * with the approve flag, and plays the scripted turns of `scenarios.ts`.
 * It prints one non-JSON banner line on stdout, as noisy CLIs do, and exits
 * when its stdin closes (with `FAKE_GROK_IGNORE_EOF=1` it never exits by
 * itself, like a CLI that lingers after its turn). Bundled into one file by
 * `src/build-fake.ts`.
 */
import { randomUUID } from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import { agent, methods, ndJsonStream, PROTOCOL_VERSION, RequestError, type AgentContext, type ContentBlock, type SessionUpdate } from '@agentclientprotocol/sdk'
import { playTurn } from './scenarios.js'
import { readSession, writeSession, type StoredSession } from './sessions.js'
import { FAKE_GROK_VERSION } from './version.js'


const argv = process.argv.slice(2)
if (argv[0] === '--version') {
  process.stdout.write(`grok ${FAKE_GROK_VERSION}\n`)
  process.exit(0)
}
if (argv[0] !== 'agent' || argv.at(-1) !== 'stdio') {
  process.stderr.write('usage: grok agent [--model <id>] [--auto-approve] stdio\n')
  process.exit(2)
}
const model = argv[argv.indexOf('--model') + 1] ?? 'grok-default'
const autoApprove = argv.includes('--auto-approve')
let authenticated = Boolean(process.env.XAI_API_KEY)
const turns = new Map<string, AbortController>()
const mcpBySession = new Map<string, Record<string, unknown>[]>()

process.stdout.write(`fake grok ${FAKE_GROK_VERSION} (model ${model}) ready\n`)
process.stderr.write(`fake-grok: started pid ${process.pid}\n`)

const textOf = (blocks: readonly ContentBlock[]) => blocks.map((b) => (b.type === 'text' ? b.text : '')).join('')
const requireAuth = () => {
  if (!authenticated) throw RequestError.authRequired(undefined, 'set XAI_API_KEY or call authenticate')
}

function loaded(id: string): StoredSession {
  const session = readSession(id)
  if (!session) throw RequestError.sessionNotFound(id)
  return session
}

const app = agent({ name: 'fake-grok' })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: true, mcpCapabilities: { http: true, sse: false }, promptCapabilities: { image: false, audio: false, embeddedContext: false } },
    agentInfo: { name: 'fake-grok', title: 'Fake Grok Build', version: FAKE_GROK_VERSION },
    authMethods: [
      { id: 'xai-api-key', name: 'xAI API key', description: 'Reads XAI_API_KEY' },
      { id: 'fake-login', name: 'Fake login', description: 'Always succeeds' },
    ],
  }))
  .onRequest(methods.agent.authenticate, ({ params }) => {
    if (params.methodId === 'fake-login' || (params.methodId === 'xai-api-key' && process.env.XAI_API_KEY)) authenticated = true
    else throw RequestError.authRequired(undefined, `cannot authenticate with ${params.methodId}`)
    return {}
  })
  .onRequest(methods.agent.session.new, ({ params }) => {
    requireAuth()
    const session: StoredSession = { id: `ses_${randomUUID()}`, cwd: params.cwd, model, history: [] }
    writeSession(session)
    mcpBySession.set(session.id, params.mcpServers as unknown as Record<string, unknown>[])
    return { sessionId: session.id }
  })
  .onRequest(methods.agent.session.load, async ({ params, client }) => {
    requireAuth()
    const session = loaded(params.sessionId)
    mcpBySession.set(session.id, params.mcpServers as unknown as Record<string, unknown>[])
    // Replay the conversation before answering, as ACP's session/load asks.
    for (const turn of session.history) {
      const update: SessionUpdate = { sessionUpdate: turn.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk', content: { type: 'text', text: turn.text } }
      await client.notify(methods.client.session.update, { sessionId: session.id, update })
    }
    return {}
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    requireAuth()
    const session = loaded(params.sessionId)
    const controller = new AbortController()
    turns.set(session.id, controller)
    const text = textOf(params.prompt)
    try {
      const result = await playTurn({
        text,
        session,
        autoApprove,
        signal: controller.signal,
        mcpServers: mcpBySession.get(session.id) ?? [],
        send: (update) => client.notify(methods.client.session.update, { sessionId: session.id, update: update as SessionUpdate }),
        ask: (toolCall) => ask(client, session.id, toolCall),
      })
      session.history.push({ role: 'user', text }, { role: 'agent', text: result.reply })
      writeSession(session)
      const cost = { amount: Number((result.usage.totalTokens * 0.00001).toFixed(6)), currency: 'USD' }
      await client.notify(methods.client.session.update, { sessionId: session.id, update: { sessionUpdate: 'usage_update', used: result.usage.totalTokens, size: 256_000, cost } })
      return { stopReason: result.stopReason, usage: result.usage } as never
    } finally {
      turns.delete(session.id)
    }
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    turns.get(params.sessionId)?.abort()
  })

/** Ask the client for permission, or approve at once under the approve flag. */
async function ask(client: AgentContext, sessionId: string, toolCall: Record<string, unknown>): Promise<boolean> {
  if (autoApprove) return true
  const answer = await client.request(methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: String(toolCall.toolCallId), title: toolCall.title as string, kind: toolCall.kind as never, rawInput: toolCall.rawInput },
    options: [
      { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
      { optionId: 'allow-always', name: 'Always allow', kind: 'allow_always' },
      { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
    ],
  })
  return answer.outcome.outcome === 'selected' && answer.outcome.optionId.startsWith('allow')
}

const stream = ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>)
const connection = app.connect(stream)
void connection.closed.then(() => {
  for (const turn of turns.values()) turn.abort()
  // A lingering CLI: stdin is closed, but only a signal ends it.
  if (process.env.FAKE_GROK_IGNORE_EOF === '1') return void setInterval(() => undefined, 60_000)
  process.exit(0)
})
