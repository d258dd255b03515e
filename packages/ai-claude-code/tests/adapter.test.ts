/**
 * The adapter's checks that run before the CLI starts, on a stand-in sandbox
 * whose `spawn` only records: a flag-like `modelOptions.sessionId` ends the
 * run with `invalid_session_id` and never reaches the command line, while a
 * session UUID becomes one `--resume=<id>` argument.
 */
import { describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { drainChatStream, standInSandbox } from '@testing/support/stand-in-sandbox'
import { claudeCodeText } from '../src/index.js'

async function run(sessionId: string): Promise<{ chunks: StreamChunk[]; spawned: string[] }> {
  const { capabilities, spawned } = standInSandbox()
  const chunks = await drainChatStream(claudeCodeText('sonnet'), { model: 'sonnet', runId: 'run-1', threadId: 'thread-1', messages: [{ role: 'user', content: 'Continue' }], modelOptions: { sessionId }, capabilities })
  return { chunks, spawned }
}

describe('modelOptions.sessionId', () => {
  it.each(['--help', '-p', '--resume=x', '', 'a b', 'id;rm -rf /', 'x'.repeat(201)])('refuses %j before the CLI starts, naming the option and the expected form', async (sessionId) => {
    const { chunks, spawned } = await run(sessionId)
    expect(spawned, 'the CLI never starts').toEqual([])
    expect(chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'RUN_ERROR'])
    const error = chunks[1] as { code: string; message: string }
    expect(error.code).toBe('invalid_session_id')
    expect(error.message).toContain('modelOptions.sessionId')
    expect(error.message).toContain('expected a session UUID')
    expect(error.message).toContain(JSON.stringify(sessionId.slice(0, 80)))
  })

  it('passes a session UUID (and other id forms) as one --resume=<id> argument', async () => {
    for (const sessionId of ['0b5c3f0e-8a1d-4e0a-9f3b-2d6c1e7a4b90', 'fake-session-exit-3', 'Session_1.2:3']) {
      const { chunks, spawned } = await run(sessionId)
      expect(chunks.find((c) => c.type === 'RUN_ERROR')).toMatchObject({ code: 'adapter_error' }) // the stand-in's spawn failed
      expect(spawned).toHaveLength(1)
      expect(spawned[0]).toContain(` --resume=${sessionId} `)
    }
  })
})

describe('isolation claims', () => {
  async function envOf(flags: { isolated?: boolean }): Promise<Record<string, string>> {
    const { capabilities, envs } = standInSandbox({ flags })
    await drainChatStream(claudeCodeText('sonnet'), { model: 'sonnet', runId: 'run-1', threadId: 'thread-1', messages: [{ role: 'user', content: 'hi' }], capabilities })
    expect(envs).toHaveLength(1)
    return envs[0]!
  }

  it('never sets IS_SANDBOX on a provider that does not promise isolation (localProcessSandbox), even under bypassPermissions', async () => {
    expect(await envOf({ isolated: false })).not.toHaveProperty('IS_SANDBOX')
    expect(await envOf({})).not.toHaveProperty('IS_SANDBOX')
  })

  it('sets IS_SANDBOX=1 under bypassPermissions when the provider promises isolation (dockerSandbox)', async () => {
    expect(await envOf({ isolated: true })).toMatchObject({ IS_SANDBOX: '1' })
  })
})

describe('unknown options (issue 30)', () => {
  it('answers an apiKey option with where the credential goes instead', () => {
    let error: unknown
    try {
      claudeCodeText('sonnet', { apiKey: 'sk-x' } as never)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect((error as SandboxConfigError).field).toBe('claudeCodeText.options.apiKey')
    expect((error as SandboxConfigError).message).toMatch(/takes no credential option.*ANTHROPIC_API_KEY.*workspace secret.*env: \{ ANTHROPIC_API_KEY/)
    expect((error as SandboxConfigError).message, 'the value given is never echoed').not.toContain('sk-x')
  })

  it('suggests the option a misspelled key meant', () => {
    expect(() => claudeCodeText('sonnet', { maxTurn: 3 } as never)).toThrow(/Did you mean claudeCodeText\.options\.maxTurns\?/)
  })
})
