/**
 * The MCP tables of the Codex projection: TOML Codex reads (checked against
 * the real CLI in testing/codex-e2e), secrets resolved, odd names quoted.
 */
import { describe, expect, it } from 'vitest'
import { bearer, createSecrets, mcpSkill, resolveSecret, type SecretRef } from '@tanstack/ai-sandbox'
import { codexMcpToml } from '../src/index.js'

const resolve = (value: string | SecretRef) => (typeof value === 'string' ? value : resolveSecret(value))

describe('codexMcpToml', () => {
  it('writes http servers with resolved headers and stdio servers with args and env', () => {
    const secrets = createSecrets({ ISSUES: 'tok-123' })
    const toml = codexMcpToml(
      [
        mcpSkill('issues', { url: 'https://mcp.example.com/mcp', headers: { Authorization: bearer(secrets.ISSUES), 'X-Team': 'core' } }),
        mcpSkill('fs', { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'], env: { TOKEN: secrets.ISSUES } }),
        mcpSkill('plain', { url: 'http://127.0.0.1:9/mcp' }),
      ],
      resolve,
    )
    expect(toml).toBe(
      [
        '[mcp_servers.issues]',
        'url = "https://mcp.example.com/mcp"',
        'http_headers = { "Authorization" = "Bearer tok-123", "X-Team" = "core" }',
        '',
        '[mcp_servers.fs]',
        'command = "npx"',
        'args = ["-y", "@modelcontextprotocol/server-filesystem", "."]',
        'env = { "TOKEN" = "tok-123" }',
        '',
        '[mcp_servers.plain]',
        'url = "http://127.0.0.1:9/mcp"',
        '',
      ].join('\n'),
    )
  })

  it('escapes values that would break TOML', () => {
    const toml = codexMcpToml([mcpSkill('odd', { command: 'C:\\tools\\mcp "x"', args: ['a\nb'], env: {} })], resolve)
    expect(toml).toBe('[mcp_servers.odd]\ncommand = "C:\\\\tools\\\\mcp \\"x\\""\nargs = ["a\\nb"]\n')
  })
})
