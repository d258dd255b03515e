/**
 * The MCP entries of the Claude Code projection: headers Claude Code would
 * expand (`${…}`) move to a `headersHelper` file, every header value is
 * written as its UTF-8 bytes one character per byte, and stdio fields Claude
 * Code will expand are reported. The real CLI sending these bytes is checked
 * in testing/claude-code-e2e (header-bytes.e2e.test.ts).
 */
import { describe, expect, it } from 'vitest'
import { bearer, createSecrets, mcpSkill, resolveSecret, type SecretRef } from '@tanstack/ai-sandbox'
import { claudeHeaderValue, claudeMcpEntry } from '../src/projection.js'

const resolve = (value: string | SecretRef) => (typeof value === 'string' ? value : resolveSecret(value))
const FILE = '/w/.claude/tanstack-mcp-headers/hdr.json'

describe('claudeMcpEntry', () => {
  it('keeps plain headers in .mcp.json, without a helper', () => {
    const secrets = createSecrets({ TOKEN: 'tok-123' })
    const server = mcpSkill('hdr', { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: bearer(secrets.TOKEN), 'X-Dollar': '$HOME', 'X-Env': '{env:HOME}', 'X-Q': 'a\\b"c' } })
    expect(claudeMcpEntry(server, resolve, FILE)).toEqual({
      entry: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer tok-123', 'X-Dollar': '$HOME', 'X-Env': '{env:HOME}', 'X-Q': 'a\\b"c' } },
      expanded: [],
    })
  })

  it('moves every value holding ${ to the headersHelper file, secrets included', () => {
    const secrets = createSecrets({ ODD: 'x-${HOME}-y' })
    const server = mcpSkill('hdr', { url: 'http://127.0.0.1:9/mcp', headers: { 'X-Plain': 'p', 'X-Var': '${HOME}', 'X-Default': '${NOPE:-d}', 'X-Half': '${HOME', 'X-Secret': secrets.ODD } })
    expect(claudeMcpEntry(server, resolve, FILE)).toEqual({
      entry: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'X-Plain': 'p' }, headersHelper: `cat ${FILE}` },
      helperHeaders: { 'X-Var': '${HOME}', 'X-Default': '${NOPE:-d}', 'X-Half': '${HOME', 'X-Secret': 'x-${HOME}-y' },
      expanded: [],
    })
  })

  it('quotes the helper file for the shell', () => {
    const server = mcpSkill('hdr', { url: 'http://127.0.0.1:9/mcp', headers: { 'X-Var': '${HOME}' } })
    expect(claudeMcpEntry(server, resolve, "/w w/it's.json").entry.headersHelper).toBe(`cat '/w w/it'\\''s.json'`)
  })

  it('writes unicode header values as their UTF-8 bytes, in headers and in the helper file', () => {
    const server = mcpSkill('hdr', { url: 'http://127.0.0.1:9/mcp', headers: { 'X-U': 'é ✓', 'X-UV': '${HOME} 🚀' } })
    const { entry, helperHeaders } = claudeMcpEntry(server, resolve, FILE)
    expect(entry.headers).toEqual({ 'X-U': '\u00c3\u00a9 \u00e2\u009c\u0093' })
    expect(helperHeaders).toEqual({ 'X-UV': '${HOME} \u00f0\u009f\u009a\u0080' })
  })

  it('reports stdio fields Claude Code will expand, naming them and never their values', () => {
    const secrets = createSecrets({ S: 'sec-${X}' })
    const server = mcpSkill('fs', { command: 'run-${TOOL}', args: ['--a', '${B}'], env: { PLAIN: 'p', SECRET: secrets.S } })
    expect(claudeMcpEntry(server, resolve, FILE)).toEqual({
      entry: { type: 'stdio', command: 'run-${TOOL}', args: ['--a', '${B}'], env: { PLAIN: 'p', SECRET: 'sec-${X}' } },
      expanded: ['command', 'args[1]', 'env SECRET'],
    })
  })
})

describe('claudeHeaderValue', () => {
  it('is the identity on ASCII and one character per UTF-8 byte otherwise', () => {
    expect(claudeHeaderValue('Bearer abc-123 ${X} "q" \\')).toBe('Bearer abc-123 ${X} "q" \\')
    const sent = claudeHeaderValue('héllo ✓ 🚀')
    expect([...sent].every((ch) => ch.charCodeAt(0) <= 0xff)).toBe(true)
    expect(Buffer.from(sent, 'latin1').toString('utf8')).toBe('héllo ✓ 🚀')
  })
})
