/**
 * One ACP turn as the client: `initialize` (awaited: the agent refuses other
 * requests before it), an optional `authenticate`, then a new session or a
 * loaded one, then `session/prompt`. Permission requests are answered by the
 * injected `decide`. It reads nothing it sends back as output: every update
 * reaches the translator through the transport's wire tap, so this function
 * only drives the conversation and resolves when the prompt is answered.
 */
import { client, methods, PROTOCOL_VERSION, type InitializeRequest, type McpServer, type RequestPermissionRequest, type RequestPermissionResponse, type Stream } from '@agentclientprotocol/sdk'
import { SandboxError } from '@tanstack/ai-sandbox'
import type { AcpPermissionRequest } from './cli-events.js'
import type { GrokMcpServer } from './projection.js'

/** What one turn needs. */
export interface AcpTurnInput {
  /** Absolute working directory inside the sandbox. */
  cwd: string
  prompt: string
  /** Load this session instead of creating one. */
  sessionId?: string
  /** An `authMethods` id to `authenticate` with after `initialize`. */
  authMethod?: string
  /** The MCP servers for the session, given what the agent announced. */
  mcpServers: (agent: { http: boolean }) => GrokMcpServer[]
  /** Answer one permission request. */
  decide: (request: AcpPermissionRequest) => RequestPermissionResponse
}

/** Thrown when a session id was passed but the agent can neither load nor resume sessions. */
export class GrokBuildSessionError extends SandboxError<'resume-unsupported'> {
  static override readonly brand: string = '@tanstack/ai-grok-build/error/GrokBuildSessionError'
  constructor(sessionId: string) {
    super('resume-unsupported', `grok-build: cannot resume session ${sessionId}: the agent announced neither loadSession nor sessionCapabilities.resume in its initialize answer. Start a new session (omit modelOptions.sessionId) or upgrade the CLI.`)
  }
}

/** The client name sent in `initialize`. */
export const GROK_CLIENT_INFO = { name: 'tanstack-ai-grok-build', version: '0.0.0' } as const

/**
 * Drive one turn over `stream`.
 * @throws GrokBuildSessionError `resume-unsupported`; the SDK's `RequestError` when the agent answers a request with an error, or the connection's error when the CLI goes away.
 * @example
 * ```ts
 * await driveAcpTurn(stream, { cwd: '/workspace', prompt: 'hi', mcpServers: () => [], decide: () => ({ outcome: { outcome: 'cancelled' } }) })
 * ```
 */
export async function driveAcpTurn(stream: Stream, input: AcpTurnInput): Promise<void> {
  const app = client({ name: GROK_CLIENT_INFO.name })
    .onRequest(methods.client.session.requestPermission, ({ params }) => input.decide(params as RequestPermissionRequest as AcpPermissionRequest))
    // Updates are translated from the wire tap; this only keeps the SDK from reporting them unhandled.
    .onNotification(methods.client.session.update, () => undefined)
  await app.connectWith(stream, async (ctx) => {
    const initialize: InitializeRequest = {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { ...GROK_CLIENT_INFO },
    }
    const init = await ctx.request(methods.agent.initialize, initialize)
    if (input.authMethod) await ctx.request(methods.agent.authenticate, { methodId: input.authMethod })
    const caps = init.agentCapabilities ?? {}
    const mcpServers = input.mcpServers({ http: caps.mcpCapabilities?.http === true }) as McpServer[]
    const prompt = [{ type: 'text' as const, text: input.prompt }]
    if (input.sessionId === undefined) {
      const session = await ctx.buildSession({ cwd: input.cwd, mcpServers }).start()
      session.dispose() // stop queueing updates nobody reads; prompt() still resolves
      await session.prompt(prompt)
      return
    }
    const sessionId = input.sessionId
    if (caps.loadSession) await ctx.request(methods.agent.session.load, { sessionId, cwd: input.cwd, mcpServers })
    else if (caps.sessionCapabilities?.resume) await ctx.request(methods.agent.session.resume, { sessionId, cwd: input.cwd, mcpServers })
    else throw new GrokBuildSessionError(sessionId)
    await ctx.request(methods.agent.session.prompt, { sessionId, prompt })
  })
}
