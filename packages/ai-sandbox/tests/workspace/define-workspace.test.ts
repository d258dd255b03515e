/**
 * `defineWorkspace` refusing what would fail or be silently lost later:
 * colliding skills, the tool bridge's MCP server name, file skills that
 * `instructions` would overwrite, plugin paths with `..`, git refs git would
 * refuse or read as options, and a setup recorder used after the callback.
 */
import { describe, expect, it } from 'vitest'
import { agentSkill, defineWorkspace, fileSkill, gitSkill, gitSource, githubRepo, mcpSkill, SandboxConfigError, TOOL_BRIDGE_SERVER_NAME, type SetupRecorder } from '../../src/index.js'

/** The SandboxConfigError `fn` throws (fails the test when it throws nothing or something else). */
function configError(fn: () => unknown): SandboxConfigError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(SandboxConfigError)
    return error as SandboxConfigError
  }
  throw new Error('expected a SandboxConfigError, nothing was thrown')
}

describe('defineWorkspace: colliding skills', () => {
  it('reserves the tool bridge MCP server name', () => {
    expect(TOOL_BRIDGE_SERVER_NAME).toBe('tanstack')
    const error = configError(() => defineWorkspace({ skills: [agentSkill('a'), mcpSkill('tanstack', { url: 'https://mcp.example.com/mcp' })] }))
    expect(error.field).toBe('workspace.skills.1')
    expect(error.message).toMatch(/workspace\.skills\.1: the MCP server name "tanstack" is reserved for the tool bridge that serves chat\(\{ tools \}\)/)
    expect(() => defineWorkspace({ skills: [mcpSkill('tanstack-issues', { command: 'srv' }), agentSkill('tanstack')] }), 'only the MCP server name is reserved').not.toThrow()
  })

  it('refuses two MCP servers or two agent skills with one name, naming both entries', () => {
    const mcp = configError(() => defineWorkspace({ skills: [mcpSkill('dup', { url: 'https://a.example.com/mcp' }), agentSkill('x'), mcpSkill('dup', { command: 'srv' })] }))
    expect(mcp.field).toBe('workspace.skills.2')
    expect(mcp.message).toContain('mcpSkill "dup" collides with workspace.skills.0')
    const agent = configError(() => defineWorkspace({ skills: [agentSkill('s', { content: 'one' }), agentSkill('s', { content: 'two' })] }))
    expect(agent.field).toBe('workspace.skills.1')
    expect(agent.message).toContain('agentSkill "s" collides with workspace.skills.0')
    expect(() => defineWorkspace({ skills: [agentSkill('same'), mcpSkill('same', { command: 'srv' })] }), 'different kinds may share a name').not.toThrow()
  })

  it('refuses two git skills cloned into one folder', () => {
    const byName = configError(() => defineWorkspace({ skills: [gitSkill({ repo: 'acme/skills' }), gitSkill({ repo: 'other/skills' })] }))
    expect(byName.field).toBe('workspace.skills.1')
    expect(byName.message).toMatch(/gitSkill https:\/\/github\.com\/other\/skills\.git collides with workspace\.skills\.0: both would be cloned into <workspace>\/\.tanstack-skills\/skills/)
    const byInto = configError(() => defineWorkspace({ skills: [gitSkill({ repo: 'acme/a', into: '/opt/skills' }), gitSkill({ repo: 'acme/b', into: '/opt/skills/' })] }))
    expect(byInto.field).toBe('workspace.skills.1')
    expect(byInto.message).toContain('into /opt/skills')
    expect(() => defineWorkspace({ skills: [gitSkill({ repo: 'acme/skills' }), gitSkill({ repo: 'other/skills', into: '/opt/other' })] })).not.toThrow()
  })

  it('refuses two file skills at one path, or one inside the other', () => {
    const same = configError(() => defineWorkspace({ skills: [fileSkill({ path: 'docs/hints.md', content: 'a' }), fileSkill({ path: './docs//hints.md', content: 'b' })] }))
    expect(same.field).toBe('workspace.skills.1')
    expect(same.message).toContain('collides with workspace.skills.0: both write the workspace file docs/hints.md')
    const nested = configError(() => defineWorkspace({ skills: [fileSkill({ path: 'docs/a/b.md', content: 'a' }), fileSkill({ path: 'docs/a', content: 'b' })] }))
    expect(nested.field).toBe('workspace.skills.1')
    expect(nested.message).toContain('docs/a cannot be both a file and the directory holding docs/a/b.md')
  })

  it('refuses a file skill that instructions would overwrite', () => {
    for (const path of ['AGENTS.md', 'CLAUDE.md', './GEMINI.md', 'AGENTS.md/inside.md']) {
      const error = configError(() => defineWorkspace({ instructions: 'Be brief.', skills: [fileSkill({ path, content: 'mine' })] }))
      expect(error.field).toBe('workspace.skills.0')
      expect(error.message).toContain(`fileSkill "${path}" collides with instructions`)
    }
    expect(() => defineWorkspace({ skills: [fileSkill({ path: 'AGENTS.md', content: 'mine' })] }), 'without instructions the file skill is the instructions').not.toThrow()
    expect(() => defineWorkspace({ instructions: 'x', skills: [fileSkill({ path: 'docs/AGENTS.md', content: 'mine' })] }), 'only the root files are written').not.toThrow()
  })
})

describe('defineWorkspace: plugins', () => {
  it('refuses a plugin path with ".." and names its index', () => {
    for (const plugin of ['../../etc', 'plugins/../../x', '/opt/../etc']) {
      const error = configError(() => defineWorkspace({ plugins: ['plugins/ok', plugin] }))
      expect(error.field).toBe('workspace.plugins.1')
      expect(error.message).toMatch(/workspace\.plugins\.1: expected a plugin directory inside the sandbox.*without "\.\."/)
    }
    expect(defineWorkspace({ plugins: ['plugins/mine', '/opt/plugins/x', './local..name'] }).plugins).toEqual(['plugins/mine', '/opt/plugins/x', './local..name'])
  })
})

describe('git refs', () => {
  const bad: [string, RegExp][] = [
    ['--upload-pack=touch /tmp/x', /must not start with "-"/],
    ['-b', /must not start with "-"/],
    ['has space', /must not contain " "/],
    ['a~1', /must not contain "~"/],
    ['a^', /must not contain "\^"/],
    ['a:b', /must not contain ":"/],
    ['a?', /must not contain "\?"/],
    ['a*', /must not contain "\*"/],
    ['a[0]', /must not contain "\["/],
    ['a\\b', /must not contain "\\\\"/],
    ['a..b', /must not contain "\.\."/],
    ['a\tb', /control characters/],
    ['a\u007f', /control characters/],
    ['a@{1}', /"@\{"/],
    ['@', /must not be "@"/],
    ['/main', /start or end with "\/"/],
    ['main/', /start or end with "\/"/],
    ['a//b', /"\/\/"/],
    ['main.', /must not end with "\."/],
    ['.hidden', /starting with "\."/],
    ['x/.y', /starting with "\."/],
    ['x.lock', /ending with "\.lock"/],
  ]

  it.each(bad)('gitSource, githubRepo and gitSkill refuse ref %j, naming the field', (ref, problem) => {
    const source = configError(() => gitSource({ url: 'https://example.com/r.git', ref }))
    expect(source.field).toBe('source.ref')
    expect(source.message).toMatch(problem)
    expect(configError(() => githubRepo({ repo: 'acme/app', ref })).field).toBe('source.ref')
    const skill = configError(() => gitSkill({ repo: 'acme/skills', ref }))
    expect(skill.field).toBe('gitSkill.ref')
    expect(skill.message).toMatch(problem)
    expect(configError(() => defineWorkspace({ source: { type: 'git', url: 'https://example.com/r.git', ref } as never })).field).toBe('workspace.source.ref')
  })

  it('accepts ordinary branch and tag names', () => {
    for (const ref of ['main', 'v1.2.3', 'feature/login-form', 'release_2024.06', 'user@host-fix', 'é']) {
      expect(gitSource({ url: 'https://example.com/r.git', ref }).ref).toBe(ref)
      expect(gitSkill({ repo: 'acme/skills', ref }).ref).toBe(ref)
    }
  })
})

describe('defineWorkspace: the setup recorder', () => {
  it('throws SandboxConfigError when serial or parallel is called after the callback returned', () => {
    let kept: SetupRecorder | undefined
    const workspace = defineWorkspace({
      setup: (recorder) => {
        kept = recorder
        recorder.serial('echo one')
      },
    })
    const serial = configError(() => kept!.serial('echo late'))
    expect(serial.field).toBe('workspace.setup')
    expect(serial.message).toMatch(/serial\(\) was called after the setup callback returned\. Steps must be recorded synchronously inside the callback/)
    expect(configError(() => kept!.parallel(['a', 'b'])).message).toMatch(/parallel\(\) was called after the setup callback returned/)
    expect(workspace.setup, 'the recorded plan is unchanged').toEqual([{ kind: 'serial', command: 'echo one' }])
  })

  it('an async callback is refused, and its later calls do not surface as unhandled rejections', async () => {
    const rejections: unknown[] = []
    const onRejection = (reason: unknown) => void rejections.push(reason)
    process.on('unhandledRejection', onRejection)
    try {
      let resume!: () => void
      const gate = new Promise<void>((resolve) => (resume = resolve))
      const error = configError(() =>
        defineWorkspace({
          setup: (async ({ serial }: SetupRecorder) => {
            await gate
            serial('echo after await')
          }) as never,
        }),
      )
      expect(error.message).toMatch(/synchronously/)
      resume()
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
      expect(rejections).toEqual([])
    } finally {
      process.off('unhandledRejection', onRejection)
    }
  })
})
