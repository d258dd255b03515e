/**
 * The MCP tables of the Codex projection: TOML Codex reads (checked against
 * the real CLI in testing/codex-e2e), secrets resolved, values verbatim.
 */
import { parse } from 'smol-toml'
import { describe, expect, it } from 'vitest'
import { bearer, createSecrets, mcpSkill, resolveSecret, type SecretRef } from '@tanstack/ai-sandbox'
import { codexMcpToml } from '../src/index.js'

const resolve = (value: string | SecretRef) => (typeof value === 'string' ? value : resolveSecret(value))

describe('codexMcpToml', () => {
  it('approves the servers\' tools up front when asked (a policy that allows everything: nobody can approve a headless call)', () => {
    const servers = [mcpSkill('issues', { url: 'https://mcp.example.com/mcp' }), mcpSkill('fs', { command: 'npx', args: ['x'] })]
    const approved = parse(codexMcpToml(servers, resolve, { approve: true })) as { mcp_servers: Record<string, Record<string, unknown>> }
    expect(approved.mcp_servers.issues).toEqual({ url: 'https://mcp.example.com/mcp', default_tools_approval_mode: 'approve' })
    expect(approved.mcp_servers.fs).toMatchObject({ default_tools_approval_mode: 'approve' })
    expect(codexMcpToml(servers, resolve)).not.toContain('default_tools_approval_mode')
  })

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
        '',
        '[mcp_servers.issues.http_headers]',
        'Authorization = "Bearer tok-123"',
        'X-Team = "core"',
        '',
        '[mcp_servers.fs]',
        'command = "npx"',
        'args = [ "-y", "@modelcontextprotocol/server-filesystem", "." ]',
        '',
        '[mcp_servers.fs.env]',
        'TOKEN = "tok-123"',
        '',
        '[mcp_servers.plain]',
        'url = "http://127.0.0.1:9/mcp"',
        '',
      ].join('\n'),
    )
  })

  it('keeps every value byte for byte: quotes, backslashes, control characters, ${VAR}, {env:…} and unicode', () => {
    const odd = 'C:\\tools\\mcp "x"\t${HOME} $HOME {env:HOME} {file:/etc/hostname} héllo ✓ \u007f'
    const toml = codexMcpToml([mcpSkill('odd', { command: odd, args: ['a\nb'], env: {} }), mcpSkill('h', { url: 'http://127.0.0.1:9/mcp', headers: { 'X-Odd': odd } })], resolve)
    expect(parse(toml)).toEqual({ mcp_servers: { odd: { command: odd, args: ['a\nb'] }, h: { url: 'http://127.0.0.1:9/mcp', http_headers: { 'X-Odd': odd } } } })
  })

  it('quotes a server name that is not a bare TOML key', () => {
    // Names from mcpSkill are letters, digits, - and _; anything else would still be written as a quoted key.
    const toml = codexMcpToml([{ ...mcpSkill('plain', { url: 'http://127.0.0.1:9/mcp' }), name: 'a.b' }], resolve)
    expect(toml).toBe('[mcp_servers."a.b"]\nurl = "http://127.0.0.1:9/mcp"\n')
  })
})
