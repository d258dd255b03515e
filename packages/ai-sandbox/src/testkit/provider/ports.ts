/**
 * `ports.connect` conformance: the returned connection is self-consistent
 * and names the port, bad ports are refused, and (when the sandbox has
 * `node`, `exec` and `backgroundProcesses`) the host really reaches a server
 * listening inside the sandbox. The server answers once and exits, so a
 * failed check leaves nothing running past the sandbox's own destroy.
 */
import { describe, expect } from 'vitest'
import type { SandboxHandle } from '../../contracts/handle.js'
import { describeError, expectSandboxError, violation } from './assert.js'
import { conformanceCase, skippedCase, useSharedSandbox } from './context.js'
import type { ProviderConformanceContext } from './context.js'
import { q, readStream } from './io.js'

/**
 * `connect(port)` returns `{ url, hostname, port }`: an absolute URL whose
 * hostname matches, and `port` naming the requested sandbox port (the URL may
 * use a mapped host port).
 * @param handle - A sandbox with capability `ports`.
 * @param port - The sandbox port to ask for. Default 3000; a provider that reserves it (Cloudflare's control server listens there) names another.
 */
export async function checkPortsConnect(handle: SandboxHandle, port = 3000): Promise<void> {
  const connection = await handle.ports.connect(port)
  let url: URL
  try {
    url = new URL(connection.url)
  } catch (error) {
    return violation('ports.connect(port).url is an absolute URL', `got ${JSON.stringify(connection.url)} (${describeError(error)})`)
  }
  const bare = (host: string) => host.replace(/^\[(.*)\]$/, '$1')
  expect(bare(url.hostname), 'ports.connect: hostname equals the hostname of url').toBe(bare(connection.hostname))
  expect(connection.port, `ports.connect(${port}) returns a connection for port ${port}`).toBe(port)
}

/** `connect` refuses ports outside 1-65535 with a SandboxError. */
export async function checkPortsRejectInvalid(handle: SandboxHandle): Promise<void> {
  for (const port of [0, 65536]) {
    await expectSandboxError(() => handle.ports.connect(port), `ports.connect(${port}) is refused with a SandboxError (ports are integers 1-65535)`)
  }
}

/**
 * With node, exec and backgroundProcesses: the host fetches from a server inside the sandbox through the returned URL.
 * @param handle - A sandbox with capability `ports`, `exec`, `backgroundProcesses` and `node` on PATH.
 * @param port - The port the server listens on. Default 0 (the OS picks a free one); a provider that exposes only declared ports names one.
 */
export async function checkPortsReachServer(handle: SandboxHandle, port = 0): Promise<void> {
  const script =
    "const s=require('http').createServer((q,r)=>r.end('conformance-ok',()=>process.exit(0)));" +
    `s.listen(${port},()=>console.log('listening '+s.address().port));setTimeout(()=>process.exit(3),120000)`
  const server = await handle.process.spawn(`node -e ${q(script)}`)
  const stdout = readStream(server.stdout, 'stdout')
  const stderr = readStream(server.stderr, 'stderr')
  const found = await stdout.until(/listening (\d+)/, 'a node http server starts inside the sandbox (conformance setup)')
  const connection = await handle.ports.connect(Number((found as RegExpMatchArray)[1]))
  let body: string
  try {
    const response = await fetch(connection.url)
    body = await response.text()
  } catch (error) {
    return violation(
      'ports.connect(port).url reaches a server listening on that port inside the sandbox',
      `fetch(${connection.url}) failed: ${describeError(error)}; server stderr: ${stderr.text()}`,
    )
  }
  expect(body, 'the host gets the response of the server inside the sandbox').toBe('conformance-ok')
  expect((await server.wait()).exitCode, 'the one-shot server exits 0 after answering').toBe(0)
}

/** Register the ports group. */
export function registerPortsConformance(getContext: () => ProviderConformanceContext): void {
  const ctx = getContext()
  const { capabilities: caps, tools } = ctx
  describe('ports', () => {
    const sandbox = useSharedSandbox(getContext)
    conformanceCase(ctx, 'connect returns a URL with that port', () => checkPortsConnect(sandbox(), ctx.connectPort))
    conformanceCase(ctx, 'connect refuses invalid ports', () => checkPortsRejectInvalid(sandbox()))
    if (!caps.exec || !caps.backgroundProcesses) skippedCase('ports', 'the live server check needs exec and backgroundProcesses')
    else if (!tools.node) skippedCase('ports', tools.missing.node ?? 'node not found in the sandbox')
    // On the run's own port when one was named (a provider may expose only declared ports), else on one the OS picks.
    else conformanceCase(ctx, 'the host reaches a server inside the sandbox', () => checkPortsReachServer(sandbox(), ctx.connectPort))
  })
}
