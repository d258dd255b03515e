/**
 * Structured output on real CLI output: `withCodexStructuredOutput` over the
 * translator replays runs recorded with `--output-schema` (a JSON answer, a
 * prose answer), and the adapter writes the schema to a run file, passes
 * `--output-schema <file>` and removes the file when the run ends.
 */
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { convertSchemaToJsonSchema, type StreamChunk } from '@tanstack/ai'
import { SandboxError, sandboxRunFilePath } from '@tanstack/ai-sandbox'
import { chunkTypes as types, linesOf, translateWith } from '@testing/support/harness-recordings'
import { drainChatStream, standInSandbox } from '@testing/support/stand-in-sandbox'
import { buildCodexArgs, codexText, CodexUnsupportedError, createCodexTranslator, STRUCTURED_OUTPUT_INVALID, withCodexStructuredOutput } from '../src/index.js'
import { recording, translate, versionsWith } from './helpers/recordings.js'

const versions = versionsWith('structured-output') // not in versions recorded before structured output was supported
const CITY = { city: 'Lisbon', population: 545000, landmarks: ['Belém Tower', 'Alfama'] }

/** Replay parsed lines through the wrapped translator, as the adapter does for a run with `outputSchema`. */
function replayStructured(lines: readonly unknown[], exit = { exitCode: 0, stderrTail: '' }): StreamChunk[] {
  return translateWith((run) => withCodexStructuredOutput(createCodexTranslator({ ...run, model: 'gpt-5.5' })), lines, { exit })
}

const agentMessage = (text: string) => ({ type: 'item.completed', item: { id: 'item_0', type: 'agent_message', text } })
const turn = [{ type: 'thread.started', thread_id: '01a2' }, { type: 'turn.started' }]
const completed = { type: 'turn.completed', usage: { input_tokens: 3, output_tokens: 2 } }

describe.each(versions)('codex %s with --output-schema', (version) => {
  it('parses the final agent_message into structured-output.complete right before RUN_FINISHED', () => {
    const lines = linesOf(recording(version, 'structured-output'))
    const plain = translate(lines)
    const chunks = replayStructured(lines)

    expect(types(chunks).slice(-3)).toEqual(['CUSTOM:structured-output.start', 'CUSTOM:structured-output.complete', 'RUN_FINISHED'])
    expect(chunks.at(-3)).toMatchObject({ value: { messageId: expect.stringMatching(/-structured-output$/) } })
    expect(chunks.at(-2)).toEqual({ type: 'CUSTOM', name: 'structured-output.complete', value: { object: CITY, raw: '{"city":"Lisbon","population":545000,"landmarks":["Belém Tower","Alfama"]}' } })
    // Every other chunk is the translator's: the answer is also an ordinary text message.
    expect(chunks.slice(0, -3)).toEqual(plain.slice(0, -1))
    expect(chunks.at(-1)).toEqual(plain.at(-1))
  })

  it('ends with RUN_ERROR structured_output_invalid when the final message is prose (the CLI checks nothing)', () => {
    const lines = linesOf(recording(version, 'structured-output-prose'))
    expect(translate(lines).at(-1)).toMatchObject({ type: 'RUN_FINISHED' })
    const chunks = replayStructured(lines)

    expect(types(chunks)).not.toContain('RUN_FINISHED')
    expect(types(chunks)).not.toContain('CUSTOM:structured-output.complete')
    const error = chunks.at(-1) as { code: string; message: string; error: unknown }
    expect(error).toMatchObject({ type: 'RUN_ERROR', code: STRUCTURED_OUTPUT_INVALID, runId: 'run-1', threadId: 'thread-1' })
    expect(error.error).toEqual({ message: error.message, code: STRUCTURED_OUTPUT_INVALID })
    expect(error.message).toMatch(/^codex: the agent's final message is not JSON \(/)
    expect(error.message).toContain('"Atlantis is a myth; I cannot describe it."')
  })

  it('is deterministic: the same bytes give the same chunks twice', () => {
    const lines = linesOf(recording(version, 'structured-output'))
    expect(replayStructured(lines)).toEqual(replayStructured(lines))
  })
})

describe('withCodexStructuredOutput', () => {
  it('takes the last agent_message of the turn', () => {
    const chunks = replayStructured([...turn, agentMessage('Looking it up.'), agentMessage('{"n":1}'), completed])
    expect(chunks.at(-2)).toEqual({ type: 'CUSTOM', name: 'structured-output.complete', value: { object: { n: 1 }, raw: '{"n":1}' } })
  })

  it('refuses a turn with no agent_message, and leaves failed turns and exits to the translator', () => {
    expect(replayStructured([...turn, completed]).at(-1)).toMatchObject({ type: 'RUN_ERROR', code: STRUCTURED_OUTPUT_INVALID, message: expect.stringContaining('without a final message') })
    const failed = [...turn, agentMessage('{"n":1}'), { type: 'turn.failed', error: { message: 'boom' } }]
    expect(replayStructured(failed)).toEqual(translate(failed))
    const cut = [...turn, agentMessage('{"n":1}')]
    expect(replayStructured(cut, { exitCode: 1, stderrTail: 'x' })).toEqual(translate(cut, { exit: { exitCode: 1, stderrTail: 'x' } }))
  })
})

describe('--output-schema', () => {
  it('buildCodexArgs passes the file before the positional arguments, also when resuming', () => {
    expect(buildCodexArgs({ model: 'gpt-5.5', outputSchemaFile: '/tmp/s.json' }).slice(-3)).toEqual(['--output-schema', '/tmp/s.json', '-'])
    expect(buildCodexArgs({ model: 'gpt-5.5', sessionId: 'abc', outputSchemaFile: '/tmp/s.json' }).slice(-4)).toEqual(['--output-schema', '/tmp/s.json', 'abc', '-'])
    expect(buildCodexArgs({ model: 'gpt-5.5' })).not.toContain('--output-schema')
  })

  it('the adapter writes the strict schema to a run file, runs the CLI with it and removes the file', async () => {
    const { capabilities, spawned, execs } = standInSandbox({ exec: true })
    const adapter = codexText('gpt-5.5')
    const outputSchema = z.object({ city: z.string(), population: z.number().optional() })
    await drainChatStream(adapter, { model: 'gpt-5.5', runId: 'run/1', threadId: 'thread-1', messages: [{ role: 'user', content: 'Describe Lisbon' }], outputSchema, capabilities })

    // `run/1` is not a safe file name as it is: the run file's name carries a hash of the id (sandboxRunFilePath).
    const file = sandboxRunFilePath('/tmp/tanstack-codex', 'run/1', 'schema.json')
    expect(file).toMatch(/^\/tmp\/tanstack-codex\/run_1-[0-9a-f]{16}\.schema\.json$/)
    expect(spawned).toHaveLength(1)
    expect(spawned[0]).toContain(` --output-schema ${file} -`)
    const write = execs.find((command) => command.includes(file) && command.includes('base64 -d'))!
    const content = Buffer.from(/printf '%s' '?([A-Za-z0-9+/=]+)'?/.exec(write)![1]!, 'base64').toString('utf8')
    // Strict mode: every property required, the optional one nullable, nothing else allowed.
    expect(JSON.parse(content)).toEqual({ type: 'object', properties: { city: { type: 'string' }, population: { type: ['number', 'null'] } }, required: ['city', 'population'], additionalProperties: false })
    expect(execs.at(-1), 'removed when the run ends').toBe(`rm -f ${file}`)
    expect(adapter.supportsCombinedToolsAndSchema?.()).toBe(true)
    expect(adapter.combinedStructuredOutputSource?.()).toBe('event')
  })

  it('converting the schema chat() already converted changes nothing', () => {
    const once = convertSchemaToJsonSchema(z.object({ a: z.string(), b: z.array(z.object({ c: z.number().optional() })).optional() }), { forStructuredOutput: true })!
    expect(convertSchemaToJsonSchema(once, { forStructuredOutput: true })).toEqual(once)
  })

  it('structuredOutput() on its own refuses with the typed error that points at chat({ outputSchema })', async () => {
    const error = await codexText('gpt-5.5').structuredOutput({ chatOptions: {} as never, outputSchema: {} }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(CodexUnsupportedError)
    expect(SandboxError.isInstance(error) && error.reason).toBe('structured-output-unsupported')
  })
})
