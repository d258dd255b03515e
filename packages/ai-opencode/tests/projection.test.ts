/**
 * The OpenCode projection on a real local-process sandbox: the config file it
 * writes (owner-only, MCP servers in OpenCode's shape, workspace secrets as
 * `{env:NAME}` where OpenCode can substitute them safely), the skill folders,
 * and the warnings for what OpenCode has no place for.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { agentSkill, bearer, createSecrets, defineWorkspace, fileSkill, gitSkill, mcpSkill, projectWorkspace, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { hasProjectedConfig, OPENCODE_PROJECTED_CONFIG, OPENCODE_SKILLS_DIR, opencodeProjection } from '../src/index.js'
import { OPENCODE_VALUES_DIR } from '../src/projection.js'

const root = mkdtempSync(join(tmpdir(), 'opencode-projection-test-'))
const provider = localProcessSandbox({ root })
const handles: SandboxHandle[] = []

afterAll(async () => {
  for (const handle of handles) await handle.destroy()
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
})

async function sandbox(): Promise<SandboxHandle> {
  const handle = await provider.create()
  handles.push(handle)
  return handle
}

describe('opencodeProjection', () => {
  it('writes MCP servers and skill paths into an owner-only opencode.json, secrets as {env:NAME} when safe', async () => {
    const handle = await sandbox()
    const secrets = createSecrets({ GH: 'ghp_projection_secret_1', ODD: 'has "quotes" \\ inside' })
    const renamed = createSecrets({ RAW_NAME: 'renamed-secret-value' })
    const skillsRepo = gitSkill({ repo: 'acme/agent-skills', into: `${handle.workspaceRoot}/vendor/agent-skills` })
    await handle.fs.write('vendor/agent-skills/skills/deploy/SKILL.md', '---\nname: deploy\ndescription: Deploying\n---\nRun the deploy.\n')
    const workspace = defineWorkspace({
      secrets: { ...secrets, RENAMED: renamed.RAW_NAME },
      skills: [
        mcpSkill('issues', { url: 'https://mcp.example.com/mcp', headers: { Authorization: bearer(secrets.GH), 'X-Odd': secrets.ODD, 'X-Renamed': renamed.RAW_NAME, 'X-Plain': 'v1' } }),
        mcpSkill('fs', { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'], env: { TOKEN: secrets.GH } }),
        agentSkill('release-notes', { description: 'Writing release notes', content: 'Group changes by package.' }),
        skillsRepo,
        fileSkill({ path: '.hints.md', content: 'Prefer pnpm.' }),
      ],
      plugins: ['plugins/claude-only'],
    })
    expect(hasProjectedConfig(workspace)).toBe(true)
    const warnings: string[] = []
    expect(await projectWorkspace(handle, workspace, opencodeProjection, (m) => warnings.push(m))).toEqual({ args: [] })

    const text = await handle.fs.read(OPENCODE_PROJECTED_CONFIG)
    expect(JSON.parse(text)).toEqual({
      $schema: 'https://opencode.ai/config.json',
      mcp: {
        issues: { type: 'remote', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer {env:GH}', 'X-Odd': 'has "quotes" \\ inside', 'X-Renamed': '{env:RENAMED}', 'X-Plain': 'v1' }, enabled: true },
        fs: { type: 'local', command: ['npx', '-y', '@modelcontextprotocol/server-filesystem', '.'], environment: { TOKEN: '{env:GH}' }, enabled: true },
      },
      skills: { paths: [`${handle.workspaceRoot}/${OPENCODE_SKILLS_DIR}`, `${handle.workspaceRoot}/vendor/agent-skills`] },
    })
    expect(text, 'a workspace secret OpenCode can substitute never reaches the file').not.toContain('ghp_projection_secret_1')
    expect(statSync(join(handle.workspaceRoot, OPENCODE_PROJECTED_CONFIG)).mode & 0o777, 'owner-only, since some values are resolved').toBe(0o600)
    expect(await handle.fs.read(`${OPENCODE_SKILLS_DIR}/release-notes/SKILL.md`)).toBe('---\nname: release-notes\ndescription: "Writing release notes"\n---\n\nGroup changes by package.\n')
    expect(warnings).toEqual(['[opencode] plugin "plugins/claude-only" skipped: OpenCode plugins are JavaScript modules named in its own config ("plugin"), not plugin directories.'])
  })

  it('warns about a git skill without any SKILL.md, and writes nothing for a workspace without skills', async () => {
    const handle = await sandbox()
    const warnings: string[] = []
    const empty = gitSkill({ repo: 'acme/empty', into: `${handle.workspaceRoot}/vendor/empty` })
    await handle.fs.write('vendor/empty/README.md', 'no skills here\n')
    await projectWorkspace(handle, defineWorkspace({ skills: [empty] }), opencodeProjection, (m) => warnings.push(m))
    expect(warnings).toEqual([`[opencode] git skill "empty" has no SKILL.md under ${handle.workspaceRoot}/vendor/empty; OpenCode will find no skill there.`])
    expect(JSON.parse(await handle.fs.read(OPENCODE_PROJECTED_CONFIG))).toEqual({ $schema: 'https://opencode.ai/config.json', skills: { paths: [`${handle.workspaceRoot}/vendor/empty`] } })

    const bare = await sandbox()
    const onlyFiles = defineWorkspace({ skills: [fileSkill({ path: 'a.md', content: 'x' })] })
    expect(hasProjectedConfig(onlyFiles)).toBe(false)
    await projectWorkspace(bare, onlyFiles, opencodeProjection, (m) => warnings.push(m))
    expect(await bare.fs.exists(OPENCODE_PROJECTED_CONFIG)).toBe(false)
  })

  it('sends values with {env:…} or {file:…} through owner-only files, secrets that {env:NAME} cannot carry included, and warns about wide characters', async () => {
    const handle = await sandbox()
    const secrets = createSecrets({ PLAIN: 'plain-secret-1', TRICKY: 'tricky-{file:/etc/hostname}-{env:HOME}' })
    const workspace = defineWorkspace({
      secrets,
      skills: [
        mcpSkill('hdr', { url: 'https://mcp.example.com/mcp', headers: { 'X-Env': '{env:HOME}', 'X-Keep': '${HOME} $HOME', 'X-Plain': secrets.PLAIN, Authorization: bearer(secrets.TRICKY), 'X-Wide': 'ok ✓' } }),
        mcpSkill('fs', { command: 'node', args: ['{file:./server.js}'], env: { HOME_REF: ' {env:HOME} ' } }),
      ],
    })
    const warnings: string[] = []
    await projectWorkspace(handle, workspace, opencodeProjection, (m) => warnings.push(m))
    const root = handle.workspaceRoot
    const file = (n: string) => `${root}/${OPENCODE_VALUES_DIR}/${n}`
    const text = await handle.fs.read(OPENCODE_PROJECTED_CONFIG)
    expect(JSON.parse(text).mcp).toEqual({
      hdr: { type: 'remote', url: 'https://mcp.example.com/mcp', headers: { 'X-Env': `{file:${file('hdr.0')}}`, 'X-Keep': '${HOME} $HOME', 'X-Plain': '{env:PLAIN}', Authorization: `{file:${file('hdr.1')}}`, 'X-Wide': 'ok ✓' }, enabled: true },
      fs: { type: 'local', command: ['node', `{file:${file('fs.2')}}`], environment: { HOME_REF: ` {file:${file('fs.3')}} ` }, enabled: true },
    })
    expect(text, 'no secret value in the config').not.toMatch(/plain-secret-1|tricky-/)
    expect(await handle.fs.read(`${OPENCODE_VALUES_DIR}/hdr.0`)).toBe('{env:HOME}')
    expect(await handle.fs.read(`${OPENCODE_VALUES_DIR}/hdr.1`)).toBe('Bearer tricky-{file:/etc/hostname}-{env:HOME}')
    expect(await handle.fs.read(`${OPENCODE_VALUES_DIR}/fs.2`)).toBe('{file:./server.js}')
    expect(await handle.fs.read(`${OPENCODE_VALUES_DIR}/fs.3`)).toBe('{env:HOME}')
    expect(statSync(join(root, OPENCODE_VALUES_DIR)).mode & 0o777, 'the folder is owner-only').toBe(0o700)
    for (const n of ['hdr.0', 'hdr.1', 'fs.2', 'fs.3']) expect(statSync(join(root, OPENCODE_VALUES_DIR, n)).mode & 0o777, n).toBe(0o600)
    expect(warnings).toEqual(['[opencode] MCP server "hdr": header "X-Wide" has non-ASCII characters that OpenCode\'s HTTP client refuses to send (it sends them only in values of up to 12 characters, none above U+00FF), so the server will not connect. Send such a value percent-encoded or base64-encoded.'])

    // A rotated secret is projected again, and no file of the earlier projection is left behind.
    const next = createSecrets({ TRICKY: 'now-plain' })
    await projectWorkspace(handle, defineWorkspace({ secrets: next, skills: [mcpSkill('hdr', { url: 'https://mcp.example.com/mcp', headers: { Authorization: bearer(next.TRICKY) } })] }), opencodeProjection)
    expect(JSON.parse(await handle.fs.read(OPENCODE_PROJECTED_CONFIG)).mcp.hdr.headers).toEqual({ Authorization: 'Bearer {env:TRICKY}' })
    expect(readdirSync(join(root, OPENCODE_VALUES_DIR, '..')), 'no values folder when no value needs one').not.toContain('values')
  })
})

