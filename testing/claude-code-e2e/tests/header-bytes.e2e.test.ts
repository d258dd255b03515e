/**
 * MCP header values reach the server as the bytes declared, with the real
 * `claude` CLI against aimock in a local-process sandbox. Claude Code expands
 * `${VAR}` (and `${VAR:-default}`) in `.mcp.json` and has no escape, so the
 * projection moves such values to a file its `headersHelper` prints, and it
 * writes every value as its UTF-8 bytes (the CLI sends one byte per
 * character). The logging MCP server records the raw header bytes of every
 * request; the secrets (a bearer token and a value full of substitution
 * syntax) arrive resolved, and appear in no command line, log line or
 * chunk, only in the owner-only projected files.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it, vi } from 'vitest'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { bearer, createSecrets, defineSandbox, defineWorkspace, mcpSkill, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, makeClaudeHome, startFakeModel } from '../src/aimock.js'
import { expectedHeaders, LITERAL_HEADERS, ODD_SECRET_VALUE, receivedHeaders, startHeaderMcpServer, NON_ASCII_HEADERS } from '@testing/support/header-mcp-server'
import { ofType, processesWithHome, recording, runClaude } from './helpers/run-claude.js'

const fixture = fileURLToPath(new URL('../fixtures/header-bytes.json', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'claude-header-bytes-e2e-'))
const homes: string[] = []

afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
  expect(homes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
})

it('sends every header exactly as declared: ${VAR}, $VAR, {env:…}, {file:…}, backslashes, quotes, unicode and secrets', async () => {
  const token = `hdr-${randomBytes(12).toString('hex')}`
  const secrets = createSecrets({ HDR_TOKEN: token, HDR_ODD: ODD_SECRET_VALUE })
  const server = await startHeaderMcpServer('hdr')
  const model = await startFakeModel(fixture)
  const home = makeClaudeHome('claude-header-bytes-home')
  homes.push(home.dir)
  const { provider, spawned } = recording(localProcessSandbox({ root }), true)
  const handles: SandboxHandle[] = []
  const sandbox = defineSandbox({
    id: 'cc-header-bytes',
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
    const out = await runClaude({ adapter: claudeCodeText('sonnet', { executable: claudeBinary(), env: home.env(model.url) }), sandbox, threadId: 't-hdr', messages: [{ role: 'user', content: 'Ping the header server' }], debug: { logger } })

    expect(out.error).toBeUndefined()
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['mcp__hdr__ping'])
    expect(server.pings(), 'the server connected and its tool ran').toBe(1)
    const declared = { ...LITERAL_HEADERS, ...NON_ASCII_HEADERS, Authorization: `Bearer ${token}`, 'X-Secret-Odd': ODD_SECRET_VALUE }
    expect(receivedHeaders(server, Object.keys(declared)), 'every request carried every header, byte for byte').toEqual(expectedHeaders(declared))
    expect(warn.mock.calls.flat().join('\n'), 'no warning for header values').not.toContain('[claude-code]')

    const workspace = handles[0]!.workspaceRoot
    for (const file of ['.mcp.json', '.claude/tanstack-mcp-headers/hdr.json']) expect(statSync(join(workspace, file)).mode & 0o777, `${file} holds secrets: owner-only`).toBe(0o600)
    const helper = JSON.parse(readFileSync(join(workspace, '.claude/tanstack-mcp-headers/hdr.json'), 'utf8')) as Record<string, string>
    expect(Object.keys(helper).sort(), 'the values Claude Code would expand are printed by the headersHelper').toEqual(['X-Both', 'X-Brace-Default', 'X-Brace-Var', 'X-Backslash', 'X-Secret-Odd'].sort())
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
