/**
 * MCP header values reach the server as the bytes declared, with the real
 * `codex` CLI against aimock in a local-process sandbox. Codex substitutes
 * nothing in `http_headers`, so the projection only has to write valid TOML
 * (smol-toml escapes), and Codex sends UTF-8. The logging MCP server (shared
 * with the Claude Code and OpenCode suites) records the raw header bytes of
 * every request; the secrets arrive resolved and appear in no command line,
 * log line or chunk, only in the owner-only `.codex/config.toml`.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it, vi } from 'vitest'
import { CODEX_CONFIG, codexText } from '@tanstack/ai-codex'
import { bearer, createSecrets, defineSandbox, defineWorkspace, mcpSkill, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
// The logging server lives with the Claude Code suite, which has the MCP test servers.
import { expectedHeaders, LITERAL_HEADERS, ODD_SECRET_VALUE, receivedHeaders, startHeaderMcpServer, NON_ASCII_HEADERS } from '@testing/support/header-mcp-server'
import { codexBinary, FAKE_MODEL, makeCodexHome, startFakeModel } from '../src/aimock.js'
import { ofType, processesWithHome, recording, runCodex } from './helpers/run-codex.js'

const fixture = fileURLToPath(new URL('../fixtures/header-bytes.json', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'codex-header-bytes-e2e-'))
const homes: string[] = []

afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
  expect(homes.filter((dir) => existsSync(dir)), 'every CLI HOME is removed').toEqual([])
  expect(homes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
})

it('sends every header exactly as declared: ${VAR}, $VAR, {env:…}, {file:…}, backslashes, quotes, unicode and secrets', async () => {
  const token = `hdr-${randomBytes(12).toString('hex')}`
  const secrets = createSecrets({ HDR_TOKEN: token, HDR_ODD: ODD_SECRET_VALUE })
  const server = await startHeaderMcpServer('hdr')
  const model = await startFakeModel(fixture)
  const home = makeCodexHome(model.url, 'codex-header-bytes-home')
  homes.push(home.dir)
  const { provider, spawned } = recording(localProcessSandbox({ root }), true)
  const handles: SandboxHandle[] = []
  const sandbox = defineSandbox({
    id: 'cx-header-bytes',
    provider,
    workspace: defineWorkspace({
      secrets,
      skills: [mcpSkill('hdr', { url: server.url, headers: { ...LITERAL_HEADERS, ...NON_ASCII_HEADERS, Authorization: bearer(secrets.HDR_TOKEN), 'X-Secret-Odd': secrets.HDR_ODD } })],
    }),
    hooks: { onReady: (handle) => void handles.push(handle) },
  })
  const key = sandbox.key({ threadId: 't-hdr', runId: '' })
  const logs: string[] = []
  const logger = { debug: (m: string, meta?: unknown) => logs.push(m, JSON.stringify(meta ?? null)), info: (m: string) => logs.push(m), warn: (m: string) => logs.push(m), error: (m: string) => logs.push(m) }
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
  try {
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, { executable: codexBinary(), env: home.env() }), sandbox, threadId: 't-hdr', messages: [{ role: 'user', content: 'Ping the header server' }], debug: { logger } })

    expect(out.error).toBeUndefined()
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['mcp__hdr__ping'])
    expect(server.pings(), 'the server connected and its tool ran').toBe(1)
    const declared = { ...LITERAL_HEADERS, ...NON_ASCII_HEADERS, Authorization: `Bearer ${token}`, 'X-Secret-Odd': ODD_SECRET_VALUE }
    expect(receivedHeaders(server, Object.keys(declared)), 'every request carried every header, byte for byte').toEqual(expectedHeaders(declared))
    expect(warn.mock.calls.flat().join('\n'), 'no warning for header values').not.toContain('[codex]')

    expect(statSync(join(handles[0]!.workspaceRoot, CODEX_CONFIG)).mode & 0o777, 'the config holds secrets: owner-only').toBe(0o600)
    for (const secret of [token, ODD_SECRET_VALUE]) {
      expect(spawned.join('\n'), 'no secret on a command line').not.toContain(secret)
      expect(logs.join('\n'), 'no secret in the debug log').not.toContain(secret)
      expect(JSON.stringify(out.chunks), 'no secret in the stream').not.toContain(secret)
    }
  } finally {
    await sandbox.destroy({ key })
    await server.stop()
    await model.stop()
    home.cleanup()
  }
}, 120_000)
