/**
 * A Worker in the shape the Cloudflare README recommends: chat() runs in a
 * Durable Object (`ChatAgent`) with `claudeCodeText` and
 * `withSandbox(cloudflareSandbox(...))`, its tool runs there, and the tool
 * bridge is served by `routedToolBridge` from that same object's `fetch`
 * (no listener of its own). The Worker routes `/agent/<name>/...` to the
 * object of that name, so the bridge URL (which carries the name) reaches the
 * isolate that holds the run's routes. `POST /agent/<name>/turn` runs one turn
 * and streams NDJSON: one `{ chunk }` line per chunk, then one `{ report }`
 * line with what only the object can see, written after the run's sandbox is
 * destroyed. Bundled with the built packages.
 */
import { chat, defineChatMiddleware, toolDefinition, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, provideToolBridgeProvisioner, routedToolBridge, ToolBridgeProvisionerCapability, withSandbox, type RoutedToolBridge, type SandboxHandle } from '@tanstack/ai-sandbox'
import { cloudflareSandbox, type SandboxNamespaceBinding } from '@tanstack/ai-sandbox-cloudflare'
import { recording } from '@testing/support/recording-provider'

// The Durable Object class the lab (and wrangler) binds as `Sandbox`.
export { Sandbox } from '@tanstack/ai-sandbox-cloudflare'

interface DurableObjectNamespace {
  idFromName: (name: string) => unknown
  get: (id: never) => { fetch: (request: Request) => Promise<Response> }
}

interface Env {
  Sandbox: SandboxNamespaceBinding
  ChatAgent: DurableObjectNamespace
}

/** What `POST /agent/<name>/turn` takes. */
export interface TurnRequest {
  threadId: string
  messages: ModelMessage[]
  options: ClaudeCodeOptions
  /** This Worker's URL as the container reaches it, e.g. `http://172.17.0.1:8787/` (an app's public URL). */
  workerUrl: string
}

/** The last line of a turn's stream. */
export interface TurnReport {
  /** Arguments `lookup_order` ran with, in this isolate. */
  toolCalls: unknown[]
  /** Every command the run spawned in its sandbox. */
  spawned: string[]
  /** The run's sandbox, as the handle said. */
  sandbox: { id: string; writableStdin: boolean | undefined }
  /** What the provisioner gave the CLI. */
  bridge: { url: string; token: string }
  /** Paths of the bridge requests the object's fetch answered during the turn. */
  bridgeRequests: string[]
  /** Routes still served once the turn ended. */
  bridgeRoutesAfter: number
  /** Prompt files left in the sandbox's run folder (looked for before it is destroyed; empty when none). */
  promptFilesLeft: string
  /** An error thrown by chat() or the report itself (not a RUN_ERROR chunk). */
  thrown?: string
}

/** The runtime this code runs in (`Cloudflare-Workers` in workerd). */
const runtime = (): string => (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? 'unknown'

export default {
  /** `/agent/<name>/...` goes to the Durable Object of that name: its runs and their bridge routes live there. */
  async fetch(request: Request, env: Env): Promise<Response> {
    const [prefix, name] = new URL(request.url).pathname.split('/').slice(1)
    if (prefix !== 'agent' || !name) return new Response('not found', { status: 404 })
    return env.ChatAgent.get(env.ChatAgent.idFromName(name) as never).fetch(request)
  },
}

/** One agent: runs chat() turns and serves their tool bridge under `/agent/<name>/tool-bridge/*`. */
export class ChatAgent {
  private bridge: RoutedToolBridge | undefined
  private readonly bridgeRequests: string[] = []

  constructor(
    _ctx: unknown,
    private readonly env: Env,
  ) {}

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const [, name, route] = url.pathname.split('/').slice(1)
    if (route === 'tool-bridge') {
      this.bridgeRequests.push(url.pathname)
      return this.bridge ? this.bridge.fetch(request) : new Response('no tool bridge yet', { status: 404 })
    }
    if (route !== 'turn' || request.method !== 'POST') return new Response('not found', { status: 404 })
    const input = (await request.json()) as TurnRequest
    this.bridge ??= routedToolBridge({ publicUrl: new URL(`agent/${name}/tool-bridge`, input.workerUrl).href })
    return turn(input, this.env, this.bridge, this.bridgeRequests)
  }
}

/** One chat() turn; the chunks and the report as NDJSON. */
function turn(input: TurnRequest, env: Env, routed: RoutedToolBridge, bridgeRequests: string[]): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>()
  const writer = writable.getWriter()
  const encoder = new TextEncoder()
  const send = (line: unknown) => writer.write(encoder.encode(`${JSON.stringify(line)}\n`))

  const toolCalls: unknown[] = []
  const lookup = toolDefinition({
    name: 'lookup_order',
    description: 'Look up an order by id.',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
  }).server(async (args) => {
    toolCalls.push(args)
    return { orderId: (args as { orderId: string }).orderId, status: 'shipped', runtime: runtime() }
  })
  const recorded = recording(cloudflareSandbox({ binding: env.Sandbox, killGraceMs: 500, timeoutMs: 150_000 }))
  const handles: SandboxHandle[] = []
  const sandbox = defineSandbox({ id: 'cf-claude', provider: recorded.provider, lifecycle: { snapshot: 'none' }, hooks: { onReady: (handle) => void handles.push(handle) } })
  const provisioned: { url: string; token: string }[] = []
  const withBridge = defineChatMiddleware({
    name: 'worker-tool-bridge',
    provides: [ToolBridgeProvisionerCapability],
    setup: (ctx) =>
      provideToolBridgeProvisioner(ctx, {
        provision: async (run) => {
          const served = await routed.provisioner.provision(run)
          provisioned.push({ url: served.url, token: served.token })
          return served
        },
      }),
  })
  const requestsBefore = bridgeRequests.length

  void (async () => {
    let thrown: string | undefined
    try {
      const stream = chat({
        adapter: claudeCodeText('sonnet', input.options),
        threadId: input.threadId,
        messages: input.messages,
        tools: [lookup],
        middleware: [withSandbox(sandbox), withBridge],
      } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
      for await (const chunk of stream) await send({ chunk })
    } catch (error) {
      thrown = String((error as Error)?.stack ?? error)
    }
    const handle = handles[0]
    let promptFilesLeft = ''
    try {
      if (handle) promptFilesLeft = (await handle.process.exec('ls /tmp/tanstack-claude-code/ 2>/dev/null | grep prompt || true')).stdout.trim()
      await sandbox.destroy({ key: sandbox.key({ threadId: input.threadId, runId: '' }) })
    } catch (error) {
      thrown = `${thrown ?? ''}\nafter the turn: ${String((error as Error)?.stack ?? error)}`
    }
    const report: TurnReport = {
      toolCalls,
      spawned: recorded.spawned,
      sandbox: { id: handle?.id ?? '', writableStdin: handle?.capabilities.writableStdin },
      bridge: provisioned[0] ?? { url: '', token: '' },
      bridgeRequests: bridgeRequests.slice(requestsBefore),
      bridgeRoutesAfter: routed.size,
      promptFilesLeft,
      ...(thrown !== undefined ? { thrown } : {}),
    }
    await send({ report })
    await writer.close()
  })()
  return new Response(readable, { headers: { 'content-type': 'application/x-ndjson' } })
}
