/**
 * Grok Build offers no structured-output option (its ACP `session/prompt`
 * carries content blocks, no schema), so `chat({ outputSchema })` with it fails with the typed
 * `GrokBuildUnsupportedError`, through chat() and withSandbox on the
 * local-process provider, before the CLI starts: no process is spawned and no
 * agent turn runs. afterAll checks that no sandbox directory is left.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { chat } from '@tanstack/ai'
import { grokBuildText, GrokBuildUnsupportedError } from '@tanstack/ai-grok-build'
import { defineSandbox, SandboxError, withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { recording } from './helpers/run-grok.js'

const root = mkdtempSync(join(tmpdir(), 'grok-structured-e2e-'))
const started: { sandbox: SandboxDefinition; threadId: string }[] = []
const outputSchema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }

afterEach(async () => {
  for (const { sandbox, threadId } of started.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
})

afterAll(() => {
  const leftDirs = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(leftDirs, 'every sandbox directory is removed').toEqual([])
})

function setup(threadId: string): { sandbox: SandboxDefinition; spawned: string[] } {
  const spy = recording(localProcessSandbox({ root }), true)
  const sandbox = defineSandbox({ id: 'grok-structured', provider: spy.provider })
  started.push({ sandbox, threadId })
  return { sandbox, spawned: spy.spawned }
}

function expectUnsupported(error: unknown): void {
  expect(error).toBeInstanceOf(GrokBuildUnsupportedError)
  expect(SandboxError.isInstance(error) && error.reason).toBe('structured-output-unsupported')
  expect((error as Error).message).toMatch(/^grok-build: structured output is not supported/)
}

describe('chat({ outputSchema }) with Grok Build', () => {
  it('rejects with GrokBuildUnsupportedError before the CLI starts', async () => {
    const { sandbox, spawned } = setup('t-grok-structured')
    const adapter = grokBuildText('grok-4.5')
    const error = await chat({ adapter, threadId: 't-grok-structured', messages: [{ role: 'user', content: 'Describe Lisbon' }], outputSchema, middleware: [withSandbox(sandbox)], debug: false }).catch((e: unknown) => e)

    expectUnsupported(error)
    expect(spawned, 'no process was started').toEqual([])
  })

  it('the streamed form fails with the same error', async () => {
    const { sandbox, spawned } = setup('t-grok-structured-stream')
    const adapter = grokBuildText('grok-4.5')
    const stream = chat({ adapter, threadId: 't-grok-structured-stream', messages: [{ role: 'user', content: 'Describe Lisbon' }], outputSchema, stream: true, middleware: [withSandbox(sandbox)], debug: false })
    const seen: string[] = []
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk.type)
    })().catch((e: unknown) => e)

    expectUnsupported(error)
    expect(seen, 'no run chunk before the error').not.toContain('TEXT_MESSAGE_CONTENT')
    expect(spawned).toEqual([])
  })
})
