/**
 * The ACP client side against an in-process SDK agent: initialize before
 * anything else, a new or a loaded session, MCP servers offered only as the
 * agent can take them, permission answers, and the wire tap seeing both
 * directions in order.
 */
import { describe, expect, it } from 'vitest'
import { agent, methods, PROTOCOL_VERSION, type AgentCapabilities } from '@agentclientprotocol/sdk'
import { acpStreamOverProcess, driveAcpTurn, GrokBuildSessionError, type GrokAcpTranscriptEntry } from '../src/index.js'
import { inMemoryAgentProcess } from './helpers/in-memory-agent.js'

function fakeAgent(capabilities: AgentCapabilities, seen: { method: string; params: any }[]) {
  const note = (method: string) => ({ params }: { params: unknown }) => void seen.push({ method, params })
  return agent({ name: 'test-agent' })
    .onRequest(methods.agent.initialize, ({ params }) => (note('initialize')({ params }), { protocolVersion: PROTOCOL_VERSION, agentCapabilities: capabilities }))
    .onRequest(methods.agent.authenticate, ({ params }) => (note('authenticate')({ params }), {}))
    .onRequest(methods.agent.session.new, ({ params }) => (note('session/new')({ params }), { sessionId: 'new-1' }))
    .onRequest(methods.agent.session.load, ({ params }) => (note('session/load')({ params }), {}))
    .onRequest(methods.agent.session.resume, ({ params }) => (note('session/resume')({ params }), {}))
    .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
      note('session/prompt')({ params })
      await client.notify(methods.client.session.update, { sessionId: params.sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'ok' } } })
      const answer = await client.request(methods.client.session.requestPermission, { sessionId: params.sessionId, toolCall: { toolCallId: 't1', kind: 'edit' }, options: [{ optionId: 'yes', name: 'Yes', kind: 'allow_once' }] })
      note('permission-answer')({ params: answer })
      return { stopReason: 'end_turn' }
    })
}

async function turn(capabilities: AgentCapabilities, input: { sessionId?: string; authMethod?: string } = {}) {
  const seen: { method: string; params: any }[] = []
  const wire: GrokAcpTranscriptEntry[] = []
  const child = inMemoryAgentProcess(fakeAgent(capabilities, seen))
  const offered: { http: boolean }[] = []
  const stream = acpStreamOverProcess(child, { onMessage: (entry) => wire.push(entry) })
  const run = driveAcpTurn(stream, {
    cwd: '/workspace',
    prompt: 'hello',
    ...input,
    mcpServers: (agentCaps) => {
      offered.push(agentCaps)
      return [{ name: 'local', command: 'mcp-x', args: [], env: [] }, ...(agentCaps.http ? [{ type: 'http' as const, name: 'tanstack', url: 'http://h/mcp', headers: [] }] : [])]
    },
    decide: () => ({ outcome: { outcome: 'selected', optionId: 'yes' } }),
  })
  return { run, seen, wire, offered, child }
}

describe('driveAcpTurn', () => {
  it('initializes, starts a new session with the MCP servers, prompts, and answers permission requests', async () => {
    const { run, seen, wire, offered } = await turn({ mcpCapabilities: { http: true } })
    await run
    expect(seen.map((s) => s.method)).toEqual(['initialize', 'session/new', 'session/prompt', 'permission-answer'])
    expect(seen[0]!.params).toMatchObject({ protocolVersion: PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } })
    expect(offered).toEqual([{ http: true }])
    expect(seen[1]!.params).toEqual({ cwd: '/workspace', mcpServers: [{ name: 'local', command: 'mcp-x', args: [], env: [] }, { type: 'http', name: 'tanstack', url: 'http://h/mcp', headers: [] }] })
    expect(seen[2]!.params).toEqual({ sessionId: 'new-1', prompt: [{ type: 'text', text: 'hello' }] })
    expect(seen[3]!.params).toEqual({ outcome: { outcome: 'selected', optionId: 'yes' } })
    // The tap saw both directions in wire order.
    expect(wire.map((e) => `${e.from}:${e.message.method ?? (e.message.result !== undefined ? 'result' : 'error')}`)).toEqual([
      'client:initialize',
      'agent:result',
      'client:session/new',
      'agent:result',
      'client:session/prompt',
      'agent:session/update',
      'agent:session/request_permission',
      'client:result',
      'agent:result',
    ])
  })

  it('authenticates with the configured method before the session', async () => {
    const { run, seen } = await turn({}, { authMethod: 'xai-api-key' })
    await run
    expect(seen.slice(0, 2)).toEqual([expect.objectContaining({ method: 'initialize' }), { method: 'authenticate', params: { methodId: 'xai-api-key' } }])
  })

  it('loads a session when the agent can, else resumes it, else refuses', async () => {
    const loaded = await turn({ loadSession: true }, { sessionId: 'old-1' })
    await loaded.run
    expect(loaded.seen.map((s) => s.method)).toEqual(['initialize', 'session/load', 'session/prompt', 'permission-answer'])
    expect(loaded.seen[1]!.params).toEqual({ sessionId: 'old-1', cwd: '/workspace', mcpServers: [{ name: 'local', command: 'mcp-x', args: [], env: [] }] })
    expect(loaded.seen[2]!.params.sessionId).toBe('old-1')

    const resumed = await turn({ sessionCapabilities: { resume: {} } }, { sessionId: 'old-2' })
    await resumed.run
    expect(resumed.seen.map((s) => s.method)).toEqual(['initialize', 'session/resume', 'session/prompt', 'permission-answer'])

    const refused = await turn({}, { sessionId: 'old-3' })
    await expect(refused.run).rejects.toBeInstanceOf(GrokBuildSessionError)
    expect(refused.seen.map((s) => s.method)).toEqual(['initialize'])
  })
})
