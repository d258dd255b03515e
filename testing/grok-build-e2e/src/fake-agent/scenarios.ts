/**
 * The fake agent's scripted turns, picked by the prompt's text like aimock
 * picks fixtures: text, reasoning, file and shell tools behind permission
 * requests, a host tool over MCP, a slow shell job (for abort), session
 * memory (for resume), an API error, and reports of what the session was
 * given (MCP servers, skills, instructions). Tools really run: the file is
 * written and the command executed in the session's cwd.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RequestError } from '@agentclientprotocol/sdk'
import { callMcpTool, type HttpMcpServer } from './mcp-client.js'
import type { StoredSession } from './sessions.js'

/** What a scenario can do. */
export interface TurnContext {
  text: string
  session: StoredSession
  autoApprove: boolean
  signal: AbortSignal
  mcpServers: readonly Record<string, unknown>[]
  /** Send one `session/update`. */
  send: (update: Record<string, unknown>) => Promise<void>
  /** Ask the client for permission (skipped under auto-approve); true when allowed. */
  ask: (toolCall: Record<string, unknown>) => Promise<boolean>
}

/** A turn's outcome. */
export interface TurnResult {
  stopReason: 'end_turn' | 'cancelled'
  usage: { inputTokens: number; outputTokens: number; totalTokens: number; thoughtTokens?: number; cachedReadTokens?: number }
  reply: string
}

const usage = (input: number, output: number, extra: { thoughtTokens?: number; cachedReadTokens?: number } = {}) => ({ inputTokens: input, outputTokens: output, totalTokens: input + output, ...extra })

/** Stream `parts` as one agent message. */
async function say(ctx: TurnContext, parts: string[], messageId: string): Promise<string> {
  for (const text of parts) await ctx.send({ sessionUpdate: 'agent_message_chunk', messageId, content: { type: 'text', text } })
  return parts.join('')
}

/** Run a shell command in the session's cwd; killed with the agent's process group or on cancel. */
function run(command: string, cwd: string, signal: AbortSignal): Promise<{ exitCode: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (b: Buffer) => (output += b.toString()))
    child.stderr.on('data', (b: Buffer) => (output += b.toString()))
    const stop = () => child.kill('SIGTERM')
    signal.addEventListener('abort', stop, { once: true })
    child.on('close', (code) => {
      signal.removeEventListener('abort', stop)
      resolve({ exitCode: code ?? 1, output })
    })
  })
}

async function tools(ctx: TurnContext): Promise<TurnResult> {
  const cwd = ctx.session.cwd
  const content = 'first draft\nsecond line "quoted" $HOME\n'
  await ctx.send({ sessionUpdate: 'plan', entries: [{ content: 'Write notes.txt', priority: 'high', status: 'in_progress' }, { content: 'Show notes.txt', priority: 'medium', status: 'pending' }] })
  let reply = await say(ctx, ["I'll write notes.txt ", 'first.'], 'msg_1')
  const write = { toolCallId: 'call_write_1', title: 'Write notes.txt', kind: 'edit', status: 'pending', rawInput: { path: 'notes.txt', content }, locations: [{ path: join(cwd, 'notes.txt') }] }
  await ctx.send({ sessionUpdate: 'tool_call', ...write })
  const wrote = await ctx.ask(write)
  if (wrote) {
    await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_write_1', status: 'in_progress' })
    writeFileSync(join(cwd, 'notes.txt'), content)
    await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_write_1', status: 'completed', content: [{ type: 'diff', path: join(cwd, 'notes.txt'), oldText: null, newText: content }], rawOutput: { bytes: Buffer.byteLength(content) } })
  } else {
    await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_write_1', status: 'failed', content: [{ type: 'content', content: { type: 'text', text: 'The client refused permission to write notes.txt.' } }] })
  }
  const exec = { toolCallId: 'call_exec_2', title: 'cat notes.txt', kind: 'execute', status: 'pending', rawInput: { command: 'cat notes.txt' } }
  await ctx.send({ sessionUpdate: 'tool_call', ...exec })
  if (await ctx.ask(exec)) {
    await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_exec_2', status: 'in_progress' })
    const result = await run('cat notes.txt', cwd, ctx.signal)
    await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_exec_2', status: result.exitCode === 0 ? 'completed' : 'failed', content: [{ type: 'content', content: { type: 'text', text: result.output } }], rawOutput: { exitCode: result.exitCode } })
  } else {
    await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_exec_2', status: 'failed', content: [{ type: 'content', content: { type: 'text', text: 'The client refused permission to run cat notes.txt.' } }] })
  }
  reply += await say(ctx, [wrote ? 'Done: notes.txt is written.' : 'I could not write notes.txt.'], 'msg_2')
  return { stopReason: 'end_turn', usage: usage(30, 24, { cachedReadTokens: 8 }), reply }
}

async function slowJob(ctx: TurnContext, seconds: string): Promise<TurnResult> {
  const call = { toolCallId: 'call_slow_1', title: `sleep ${seconds}`, kind: 'execute', status: 'pending', rawInput: { command: `sleep ${seconds}` } }
  await ctx.send({ sessionUpdate: 'tool_call', ...call })
  if (!(await ctx.ask(call))) return { stopReason: 'end_turn', usage: usage(5, 1), reply: '' }
  await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_slow_1', status: 'in_progress' })
  const result = await run(`sleep ${seconds}`, ctx.session.cwd, ctx.signal)
  if (ctx.signal.aborted) return { stopReason: 'cancelled', usage: usage(5, 1), reply: '' }
  await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_slow_1', status: 'completed', rawOutput: { exitCode: result.exitCode } })
  return { stopReason: 'end_turn', usage: usage(5, 1), reply: '' }
}

async function hostTool(ctx: TurnContext, tool: string): Promise<TurnResult> {
  const server = ctx.mcpServers.find((s) => s.type === 'http' && s.name === 'tanstack') as HttpMcpServer | undefined
  if (!server) return { stopReason: 'end_turn', usage: usage(4, 4), reply: await say(ctx, ['No tanstack MCP server was given to this session.'], 'msg_1') }
  const call = { toolCallId: 'call_mcp_1', title: `tanstack: ${tool}`, name: tool, kind: 'other', status: 'pending', rawInput: { city: 'Paris' } }
  await ctx.send({ sessionUpdate: 'tool_call', ...call })
  if (!(await ctx.ask(call))) return { stopReason: 'end_turn', usage: usage(4, 4), reply: '' }
  const result = await callMcpTool(server, tool, { city: 'Paris' })
  await ctx.send({ sessionUpdate: 'tool_call_update', toolCallId: 'call_mcp_1', status: result.isError ? 'failed' : 'completed', content: [{ type: 'content', content: { type: 'text', text: result.text } }] })
  return { stopReason: 'end_turn', usage: usage(12, 9), reply: await say(ctx, [`The host tool said: ${result.text}`], 'msg_2') }
}

function skillsIn(cwd: string): string[] {
  const dir = join(cwd, '.grok', 'skills')
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((name) => existsSync(join(dir, name, 'SKILL.md')))
    .sort()
}

/**
 * Play the scenario the prompt asks for.
 * @throws RequestError for the error scenario (the agent's API failed).
 */
export async function playTurn(ctx: TurnContext): Promise<TurnResult> {
  const text = ctx.text
  if (/what did i ask first/i.test(text)) {
    const first = ctx.session.history.find((turn) => turn.role === 'user')
    const answer = first ? `You first asked: "${first.text}"` : 'I have no earlier messages in this session.'
    return { stopReason: 'end_turn', usage: usage(33, 10), reply: await say(ctx, [answer], 'msg_1') }
  }
  const remember = /remember the word (\w+)/i.exec(text)
  if (remember) return { stopReason: 'end_turn', usage: usage(12, 4), reply: await say(ctx, [`Noted: ${remember[1]}.`], 'msg_1') }
  if (/create notes\.txt/i.test(text)) return tools(ctx)
  const slow = /slow job ([\d.]+)/i.exec(text)
  if (slow) return slowJob(ctx, slow[1]!)
  const host = /host tool (\w+)/i.exec(text)
  if (host) return hostTool(ctx, host[1]!)
  if (/think first/i.test(text)) {
    for (const t of ['Option A is cheaper, ', 'option B is faster. ', 'Speed matters more here.']) await ctx.send({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: t } })
    return { stopReason: 'end_turn', usage: usage(25, 19, { thoughtTokens: 12 }), reply: await say(ctx, ['Option B is better: ', 'it is faster.'], 'msg_1') }
  }
  if (/server error/i.test(text)) {
    await say(ctx, ['Let me check… '], 'msg_1')
    throw new RequestError(-32603, 'xAI API error: 400 the widget count is invalid', { status: 400 })
  }
  if (/which mcp servers/i.test(text)) {
    const list = ctx.mcpServers.map((s) => `${String(s.name)} (${typeof s.type === 'string' ? s.type : 'stdio'})`).join(', ')
    return { stopReason: 'end_turn', usage: usage(6, 6), reply: await say(ctx, [`MCP servers: ${list || 'none'}.`], 'msg_1') }
  }
  if (/which skills/i.test(text)) return { stopReason: 'end_turn', usage: usage(6, 6), reply: await say(ctx, [`Skills: ${skillsIn(ctx.session.cwd).join(', ') || 'none'}.`], 'msg_1') }
  if (/your instructions/i.test(text)) {
    const file = join(ctx.session.cwd, 'AGENTS.md')
    const first = existsSync(file) ? readFileSync(file, 'utf8').split('\n')[0] : 'none'
    return { stopReason: 'end_turn', usage: usage(6, 6), reply: await say(ctx, [`Instructions: ${first}`], 'msg_1') }
  }
  if (/say hello/i.test(text)) {
    return { stopReason: 'end_turn', usage: usage(21, 17), reply: await say(ctx, ['Hello from the fake Grok agent. ', 'This reply is long enough ', 'to arrive in several chunks — über “quoted”.'], 'msg_1') }
  }
  return { stopReason: 'end_turn', usage: usage(3, 9), reply: await say(ctx, ['The fake Grok agent has no script for this prompt.'], 'msg_1') }
}
