/**
 * OpenCode's CLI has no structured-output option (`opencode run --help` of
 * 1.18.33 has no schema flag), so `chat({ outputSchema })` with it fails with
 * the typed `OpencodeUnsupportedError`, through chat() and withSandbox on the
 * local-process provider, before the CLI starts: no process is spawned and no
 * agent turn runs. afterAll checks that no sandbox directory is left.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { chat } from '@tanstack/ai'
import { opencodeText, OpencodeUnsupportedError } from '@tanstack/ai-opencode'
import { defineSandbox, SandboxError, withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { FAKE_MODEL, opencodeBinary } from '../src/aimock.js'
import { recording } from './helpers/run-opencode.js'

const root = mkdtempSync(join(tmpdir(), 'opencode-structured-e2e-'))
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
  const sandbox = defineSandbox({ id: 'oc-structured', provider: spy.provider })
  started.push({ sandbox, threadId })
  return { sandbox, spawned: spy.spawned }
}

function expectUnsupported(error: unknown): void {
  expect(error).toBeInstanceOf(OpencodeUnsupportedError)
  expect(SandboxError.isInstance(error) && error.reason).toBe('structured-output-unsupported')
  expect((error as Error).message).toMatch(/^opencode: structured output is not supported/)
}

describe('chat({ outputSchema }) with OpenCode', () => {
  it('rejects with OpencodeUnsupportedError before the CLI starts', async () => {
    const { sandbox, spawned } = setup('t-oc-structured')
    const adapter = opencodeText(FAKE_MODEL, { executable: opencodeBinary() })
    const error = await chat({ adapter, threadId: 't-oc-structured', messages: [{ role: 'user', content: 'Describe Lisbon' }], outputSchema, middleware: [withSandbox(sandbox)], debug: false }).catch((e: unknown) => e)

    expectUnsupported(error)
    expect(spawned, 'no process was started').toEqual([])
  })

  it('the streamed form fails with the same error', async () => {
    const { sandbox, spawned } = setup('t-oc-structured-stream')
    const adapter = opencodeText(FAKE_MODEL, { executable: opencodeBinary() })
    const stream = chat({ adapter, threadId: 't-oc-structured-stream', messages: [{ role: 'user', content: 'Describe Lisbon' }], outputSchema, stream: true, middleware: [withSandbox(sandbox)], debug: false })
    const seen: string[] = []
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk.type)
    })().catch((e: unknown) => e)

    expectUnsupported(error)
    expect(seen, 'no run chunk before the error').not.toContain('TEXT_MESSAGE_CONTENT')
    expect(spawned).toEqual([])
  })
})
