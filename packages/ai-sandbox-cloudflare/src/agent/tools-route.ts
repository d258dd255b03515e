/**
 * The tools route of a colocated run: the one call that crosses from the
 * runner in the container back to the Coordinator (spec 000's co-located
 * host-tool seam). Its own module, free of the SDK, so it runs anywhere.
 */
import { executeHostTool, type BridgeableTool, type ToolExecRequest } from '@tanstack/ai-sandbox'
import { timingSafeBearerEqualWeb } from './bearer.js'

/**
 * The tools route of a colocated run (`POST {basePath}/:runId/tools`): the
 * runner's `httpRemoteToolExecutor` sends one `ToolExecRequest` with the
 * run's own bearer; the tool runs here with `executeHostTool`. A run that
 * ended (`ended`) takes no more calls (409).
 */
export async function serveToolCall(request: Request, tools: ReadonlyArray<unknown>, toolsToken: string | undefined, ended: boolean): Promise<Response> {
  if (request.method !== 'POST') return new Response('method not allowed', { status: 405, headers: { allow: 'POST' } })
  if (toolsToken === undefined || !(await timingSafeBearerEqualWeb(request.headers.get('authorization'), toolsToken))) {
    return Response.json({ error: "unauthorized: the run's tools take the run's own bearer" }, { status: 401, headers: { 'www-authenticate': 'Bearer' } })
  }
  if (ended) return Response.json({ error: 'the run has ended: its tools take no more calls' }, { status: 409 })
  const body = (await request.json().catch(() => undefined)) as ToolExecRequest | undefined
  if (typeof body !== 'object' || body === null || typeof body.toolName !== 'string') return Response.json({ error: 'expected a JSON ToolExecRequest: { toolName, args, toolCallId? }' }, { status: 400 })
  return Response.json(await executeHostTool(tools as BridgeableTool[], body, { signal: request.signal }))
}
