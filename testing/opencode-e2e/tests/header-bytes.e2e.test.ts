/**
 * MCP header values reach the server as the bytes declared, with the real
 * `opencode` CLI against aimock in a local-process sandbox. OpenCode
 * substitutes `{env:…}` and then `{file:…}` in its config's text and has no
 * escape, so the projection writes a value holding either form to an
 * owner-only file and the config reads it back with `{file:…}` (escaped, not
 * substituted again); a workspace secret is `{env:NAME}` when that carries it
 * unchanged, else the same file. The logging MCP server (shared with the
 * Claude Code and Codex suites) records the raw header bytes of every
 * request. OpenCode's HTTP client cannot send a character above U+00FF, nor
 * a non-ASCII value over 12 characters: such a header gets a warning, and its
 * server does not connect.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it, vi } from 'vitest'
import { OPENCODE_PROJECTED_CONFIG, OPENCODE_PROJECTION_DIR, opencodeText } from '@tanstack/ai-opencode'
import { bearer, createSecrets, defineSandbox, defineWorkspace, mcpSkill, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
// The logging server lives with the Claude Code suite, which has the MCP test servers.
import { expectedHeaders, LITERAL_HEADERS, ODD_SECRET_VALUE, receivedHeaders, startHeaderMcpServer, NON_ASCII_HEADERS } from '@testing/support/header-mcp-server'
import { FAKE_MODEL, makeOpencodeHome, opencodeBinary, providerConfig, startFakeModel } from '../src/aimock.js'
import { ofType, processesWithHome, recording, runOpencode } from './helpers/run-opencode.js'

const fixture = fileURLToPath(new URL('../fixtures/header-bytes.json', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'opencode-header-bytes-e2e-'))
const homes: string[] = []

afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
  expect(homes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
})

it('sends every header exactly as declared: ${VAR}, $VAR, {env:…}, {file:…}, backslashes, quotes, latin-1 and secrets', async () => {
  const token = `hdr-${randomBytes(12).toString('hex')}`
  const secrets = createSecrets({ HDR_TOKEN: token, HDR_ODD: ODD_SECRET_VALUE })
  const server = await startHeaderMcpServer('hdr')
  const wide = await startHeaderMcpServer('wide')
  const model = await startFakeModel(fixture)
  const home = makeOpencodeHome('opencode-header-bytes-home')
  homes.push(home.dir)
  const { provider, spawned } = recording(localProcessSandbox({ root }), true)
  const handles: SandboxHandle[] = []
  const sandbox = defineSandbox({
    id: 'oc-header-bytes',
    provider,
    workspace: defineWorkspace({
      secrets,
      skills: [
        mcpSkill('hdr', { url: server.url, headers: { ...LITERAL_HEADERS, Authorization: bearer(secrets.HDR_TOKEN), 'X-Secret-Odd': secrets.HDR_ODD } }),
        mcpSkill('wide', { url: wide.url, headers: NON_ASCII_HEADERS }),
      ],
    }),
    hooks: { onReady: (handle) => void handles.push(handle) },
  })
  const key = sandbox.key({ threadId: 't-hdr', runId: '' })
  const logs: string[] = []
  const logger = { debug: (m: string, meta?: unknown) => logs.push(m, JSON.stringify(meta ?? null)), info: (m: string) => logs.push(m), warn: (m: string) => logs.push(m), error: (m: string) => logs.push(m) }
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
  try {
    const adapter = opencodeText(FAKE_MODEL, { executable: opencodeBinary(), env: home.env(), config: providerConfig(model.url), timeoutMs: 90_000 })
    const out = await runOpencode({ adapter, sandbox, threadId: 't-hdr', messages: [{ role: 'user', content: 'Ping the header server' }], debug: { logger } })

    expect(out.error).toBeUndefined()
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['hdr_ping'])
    expect(server.pings(), 'the server connected and its tool ran').toBe(1)
    const declared = { ...LITERAL_HEADERS, Authorization: `Bearer ${token}`, 'X-Secret-Odd': ODD_SECRET_VALUE }
    expect(receivedHeaders(server, Object.keys(declared)), 'every request carried every header, byte for byte').toEqual(expectedHeaders(declared))
    const cannot = (header: string) => `[opencode] MCP server "wide": header "${header}" has non-ASCII characters that OpenCode's HTTP client refuses to send (it sends them only in values of up to 12 characters, none above U+00FF), so the server will not connect. Send such a value percent-encoded or base64-encoded.`
    expect(warn.mock.calls.flat().filter((m) => String(m).startsWith('[opencode]')), 'a warning for each header OpenCode cannot send, and no other').toEqual([cannot('X-Latin1-Long'), cannot('X-Unicode')])
    expect(wide.requests, 'OpenCode cannot send those headers, so that server gets no request').toEqual([])

    const workspace = handles[0]!.workspaceRoot
    const config = readFileSync(join(workspace, OPENCODE_PROJECTED_CONFIG), 'utf8')
    expect(config, 'the bearer secret is {env:NAME}').toContain('"Authorization": "Bearer {env:HDR_TOKEN}"')
    const values = join(workspace, OPENCODE_PROJECTION_DIR, 'values')
    for (const file of readdirSync(values)) expect(statSync(join(values, file)).mode & 0o777, `${file} may hold a secret: owner-only`).toBe(0o600)
    for (const secret of [token, ODD_SECRET_VALUE]) {
      expect(config, 'no secret value in the config itself').not.toContain(secret)
      expect(spawned.join('\n'), 'no secret on a command line').not.toContain(secret)
      expect(logs.join('\n'), 'no secret in the debug log').not.toContain(secret)
      expect(JSON.stringify(out.chunks), 'no secret in the stream').not.toContain(secret)
    }
  } finally {
    await sandbox.destroy({ key })
    await server.stop()
    await wide.stop()
    await model.stop()
    home.cleanup()
  }
}, 180_000)
