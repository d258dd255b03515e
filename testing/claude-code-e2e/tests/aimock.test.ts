/**
 * The shared fake-model helpers: aimock bound to loopback on a free port,
 * fixtures from a file or objects with `{{var}}` placeholders, a journal that
 * can be reset, an idempotent stop, and a CLI HOME that removes itself.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { claudeBinary, claudeVersion, makeClaudeHome, startFakeModel, userTexts } from '../src/aimock.js'

const dir = mkdtempSync(join(tmpdir(), 'aimock-helper-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** One non-streaming Anthropic Messages call, as the CLI would make it (minus streaming). */
async function ask(url: string, text: string): Promise<{ status: number; body: { content?: { type: string; text?: string; input?: unknown }[]; error?: { message: string } } }> {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'test', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: [{ type: 'text', text: '<system-reminder>\nx\n</system-reminder>\n' }, { type: 'text', text }] }] }),
  })
  return { status: response.status, body: (await response.json()) as never }
}

describe('startFakeModel', () => {
  it('serves fixture objects on 127.0.0.1 with placeholders filled, and journals requests', async () => {
    const model = await startFakeModel([{ match: { userMessage: 'where' }, response: { content: 'In {{place}}.' } }], { vars: { place: '/tmp/x y' } })
    try {
      expect(new URL(model.url).hostname).toBe('127.0.0.1')
      expect(Number(new URL(model.url).port)).toBeGreaterThan(0)
      const { status, body } = await ask(model.url, 'where are you?')
      expect(status).toBe(200)
      expect(body.content?.[0]?.text).toBe('In /tmp/x y.')
      expect(model.requests()).toHaveLength(1)
      expect(userTexts(model.requests()[0]!), 'system reminders are stripped, the prompt is kept whole').toEqual(['where are you?'])
      model.reset()
      expect(model.requests()).toEqual([])
    } finally {
      await model.stop()
      await model.stop()
    }
  })

  it('listens on another local address when asked, and reports its port', async () => {
    const model = await startFakeModel([{ match: { userMessage: 'ping' }, response: { content: 'pong' } }], { host: '127.0.0.2' })
    try {
      expect(new URL(model.url).hostname).toBe('127.0.0.2')
      expect(String(model.port)).toBe(new URL(model.url).port)
      expect((await ask(`http://127.0.0.2:${model.port}`, 'ping')).body.content?.[0]?.text).toBe('pong')
    } finally {
      await model.stop()
    }
  })

  it('reads a fixture file and answers an error fixture with its status', async () => {
    const file = join(dir, 'errors.json')
    writeFileSync(file, JSON.stringify({ fixtures: [{ match: { userMessage: 'fail' }, response: { error: { message: 'nope', type: 'invalid_request_error' }, status: 400 } }] }))
    const model = await startFakeModel(file)
    try {
      const { status, body } = await ask(model.url, 'please fail')
      expect(status).toBe(400)
      expect(body.error?.message).toBe('nope')
    } finally {
      await model.stop()
    }
  })

  it('refuses a file without a fixtures array', async () => {
    const file = join(dir, 'bad.json')
    writeFileSync(file, '{"match":{}}')
    await expect(startFakeModel(file)).rejects.toThrow(/expected a JSON object with a "fixtures" array/)
  })
})

describe('CLI helpers', () => {
  it('finds the installed claude binary and its version', () => {
    expect(existsSync(claudeBinary())).toBe(true)
    expect(claudeVersion()).toMatch(/^\d+\.\d+\.\d+$/)
  })

  it('makes a HOME with its own TMPDIR and removes it', () => {
    const home = makeClaudeHome('aimock-helper-home')
    const env = home.env('http://127.0.0.1:1')
    expect(env).toMatchObject({ HOME: home.dir, TMPDIR: join(home.dir, 'tmp'), ANTHROPIC_BASE_URL: 'http://127.0.0.1:1', CLAUDE_CODE_MAX_RETRIES: '0' })
    expect(existsSync(env.TMPDIR!)).toBe(true)
    home.cleanup()
    expect(existsSync(home.dir)).toBe(false)
  })
})
