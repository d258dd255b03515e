/**
 * Merging the definition's MCP servers into a repository's
 * `.codex/config.toml`: parsed and written with smol-toml, the definition
 * winning a name clash, the repository's other servers and settings kept,
 * numbers kept as integer or float, and a later projection replacing only
 * its own tables. The real CLI loading a merged file is in testing/codex-e2e.
 */
import { parse } from 'smol-toml'
import { describe, expect, it } from 'vitest'
import { CODEX_CONFIG_BLOCK, mergeCodexConfig, type CodexConfigMerge } from '../src/codex-config.js'

const REPO = [
  '# the repository\'s own settings',
  'model_reasoning_effort = "low"',
  '',
  '[mcp_servers.repo_server]',
  'command = "repo-mcp"',
  'args = ["--stdio"]',
  'startup_timeout_sec = 20.0',
  'tool_timeout_sec = 30',
  '',
  '[mcp_servers.issues]',
  'url = "http://127.0.0.1:1/repo-issues"',
  'enabled_tools = ["a"]',
  '',
  '[profiles.fast]',
  'model = "gpt-5.5"',
  '',
].join('\n')

function written(merge: CodexConfigMerge): string {
  if (merge.kind !== 'write') throw new TypeError(`expected a write, got ${JSON.stringify(merge)}`)
  return merge.text
}

describe('mergeCodexConfig', () => {
  it('keeps the repository servers of other names and its settings; the definition wins a name clash as a whole table', () => {
    const merge = mergeCodexConfig(REPO, { issues: { url: 'http://127.0.0.1:2/mcp', http_headers: { Authorization: 'Bearer t' } }, extra: { command: 'x', args: [] } })
    expect(merge).toMatchObject({ kind: 'write', replaced: ['issues'] })
    const text = written(merge)
    expect(text.split('\n').slice(0, 2)).toEqual([CODEX_CONFIG_BLOCK, '# mcp_servers from the definition: ["issues","extra"]'])
    expect(parse(text)).toEqual({
      model_reasoning_effort: 'low',
      mcp_servers: {
        repo_server: { command: 'repo-mcp', args: ['--stdio'], startup_timeout_sec: 20, tool_timeout_sec: 30 },
        issues: { url: 'http://127.0.0.1:2/mcp', http_headers: { Authorization: 'Bearer t' } }, // no enabled_tools left from the repository's table
        extra: { command: 'x', args: [] },
      },
      profiles: { fast: { model: 'gpt-5.5' } },
    })
    expect(text, 'a float stays a float, an integer an integer').toContain('startup_timeout_sec = 20.0\ntool_timeout_sec = 30\n')
  })

  it('merges where appending would have broken the file: an inline mcp_servers table, a dotted key', () => {
    const inline = written(mergeCodexConfig('mcp_servers = { repo = { url = "http://127.0.0.1:1/mcp" } }\n', { issues: { url: 'http://127.0.0.1:2/mcp' } }))
    expect(parse(inline).mcp_servers).toEqual({ repo: { url: 'http://127.0.0.1:1/mcp' }, issues: { url: 'http://127.0.0.1:2/mcp' } })
    const dotted = written(mergeCodexConfig('mcp_servers.issues.url = "http://127.0.0.1:1/mcp"\n', { issues: { url: 'http://127.0.0.1:2/mcp' } }))
    expect(parse(dotted).mcp_servers).toEqual({ issues: { url: 'http://127.0.0.1:2/mcp' } })
  })

  it('writes a file of its own when the repository has none', () => {
    const text = written(mergeCodexConfig(undefined, { issues: { url: 'http://127.0.0.1:2/mcp' } }))
    expect(text).toBe(`${CODEX_CONFIG_BLOCK}\n# mcp_servers from the definition: ["issues"]\n[mcp_servers.issues]\nurl = "http://127.0.0.1:2/mcp"\n`)
  })

  it('replaces only its own tables on a later projection (a rotated secret) and reports no clash then', () => {
    const first = written(mergeCodexConfig(REPO, { issues: { url: 'http://127.0.0.1:2/mcp', http_headers: { Authorization: 'Bearer old' } } }))
    const second = mergeCodexConfig(first, { issues: { url: 'http://127.0.0.1:2/mcp', http_headers: { Authorization: 'Bearer new' } } })
    expect(second).toMatchObject({ kind: 'write', replaced: [] })
    const doc = parse(written(second)) as { mcp_servers: Record<string, { http_headers?: Record<string, string> }> }
    expect(Object.keys(doc.mcp_servers)).toEqual(['repo_server', 'issues'])
    expect(doc.mcp_servers.issues!.http_headers).toEqual({ Authorization: 'Bearer new' })
  })

  it('takes its tables back when the definition has no MCP server left, and leaves a repository file alone otherwise', () => {
    const merged = written(mergeCodexConfig(REPO, { extra: { command: 'x', args: [] } }))
    const back = written(mergeCodexConfig(merged, {}))
    expect(back.startsWith('#'), 'no block any more').toBe(false)
    expect(Object.keys((parse(back) as { mcp_servers: object }).mcp_servers)).toEqual(['repo_server', 'issues'])
    expect(written(mergeCodexConfig(`${CODEX_CONFIG_BLOCK}\n# mcp_servers from the definition: ["issues"]\n[mcp_servers.issues]\nurl = "http://x"\n`, {}))).toBe('')
    expect(mergeCodexConfig(REPO, {})).toEqual({ kind: 'keep' })
    expect(mergeCodexConfig(undefined, {})).toEqual({ kind: 'keep' })
    expect(mergeCodexConfig('not = [valid', {}), 'a broken file with nothing to merge is not our business').toEqual({ kind: 'keep' })
  })

  it('refuses a file it cannot merge, saying where it is broken', () => {
    const broken = mergeCodexConfig('[mcp_servers.x]\nurl = "a"\n[mcp_servers.x]\nurl = "b"\n', { issues: { url: 'http://127.0.0.1:2/mcp' } })
    expect(broken).toMatchObject({ kind: 'invalid', problem: expect.stringMatching(/^it is not valid TOML \(line 3, column \d+\): /) })
    expect(mergeCodexConfig('mcp_servers = "none"\n', { issues: { url: 'http://127.0.0.1:2/mcp' } })).toEqual({ kind: 'invalid', problem: '`mcp_servers` is not a table' })
  })

  it('keeps integers past 2^53, dates and arrays of tables as they were', () => {
    const text = written(mergeCodexConfig('big = 9007199254740993\nwhen = 1979-05-27\n[[hooks]]\nrun = "a"\n[[hooks]]\nrun = "b"\n', { issues: { url: 'http://127.0.0.1:2/mcp' } }))
    expect(text).toContain('big = 9007199254740993\n')
    expect(text).toContain('when = 1979-05-27\n')
    expect(parse(text, { integersAsBigInt: 'asNeeded' }).hooks).toEqual([{ run: 'a' }, { run: 'b' }])
  })
})
