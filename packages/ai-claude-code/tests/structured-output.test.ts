/**
 * Structured output on real CLI output: `withClaudeStructuredOutput` over the
 * translator replays runs recorded with `--json-schema` (the model's accepted
 * `StructuredOutput` call, a model that never calls it, a model that fails the
 * schema until the CLI gives up), and the adapter puts the schema on the
 * command line and declares the event-sourced combined mode chat() needs.
 */
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { StreamChunk } from '@tanstack/ai'
import { SandboxError } from '@tanstack/ai-sandbox'
import { chunkTypes as types, linesOf, translateWith } from '@testing/support/harness-recordings'
import { drainChatStream, standInSandbox } from '@testing/support/stand-in-sandbox'
import { buildClaudeArgs, CLAUDE_STRUCTURED_OUTPUT_TOOL, claudeCodeText, ClaudeCodeUnsupportedError, createClaudeCodeTranslator, STRUCTURED_OUTPUT_INVALID, withClaudeStructuredOutput } from '../src/index.js'
import { recording, translate, versionsWith } from './helpers/recordings.js'

const versions = versionsWith('structured-output') // not in versions recorded before structured output was supported
const CITY = { city: 'Lisbon', population: 545000, landmarks: ['Belém Tower', 'Alfama'] }

/** Replay parsed lines through the wrapped translator, as the adapter does for a run with `outputSchema`. */
function replayStructured(lines: readonly unknown[], exit = { exitCode: 0, stderrTail: '' }): StreamChunk[] {
  return translateWith((run) => withClaudeStructuredOutput(createClaudeCodeTranslator({ ...run, model: 'sonnet' })), lines, { exit })
}

describe.each(versions)('claude %s with --json-schema', (version) => {
  it('puts structured-output.complete with the accepted StructuredOutput input right before RUN_FINISHED', () => {
    const lines = linesOf(recording(version, 'structured-output'))
    const plain = translate(lines)
    const chunks = replayStructured(lines)

    expect(types(chunks).slice(-3)).toEqual(['CUSTOM:structured-output.start', 'CUSTOM:structured-output.complete', 'RUN_FINISHED'])
    expect(chunks.at(-3)).toMatchObject({ value: { messageId: expect.stringMatching(/-structured-output$/) } })
    expect(chunks.at(-2)).toEqual({ type: 'CUSTOM', name: 'structured-output.complete', value: { object: CITY, raw: JSON.stringify(CITY) } })
    // The CLI's result line says so too: the object on `structured_output`, its JSON as `result`.
    const result = lines.find((line) => (line as { type?: string }).type === 'result') as { structured_output?: unknown; result?: string }
    expect(result.structured_output).toEqual(CITY)
    expect(JSON.parse(result.result!)).toEqual(CITY)
    // Every other chunk is the translator's, the StructuredOutput tool call included; the run ends as a plain stop.
    expect(chunks.slice(0, -3)).toEqual(plain.slice(0, -1))
    expect(chunks.at(-1)).toEqual(plain.at(-1))
    expect(chunks.at(-1)).toMatchObject({ type: 'RUN_FINISHED', finishReason: 'stop' })
    expect(chunks.filter((c) => c.type === 'TOOL_CALL_START').map((c) => (c as { toolCallName: string }).toolCallName)).toEqual([CLAUDE_STRUCTURED_OUTPUT_TOOL])
  })

  it('ends with RUN_ERROR structured_output_invalid when the agent never calls StructuredOutput', () => {
    const lines = linesOf(recording(version, 'structured-output-no-call'))
    expect(translate(lines).at(-1)).toMatchObject({ type: 'RUN_FINISHED' }) // the CLI calls that a success
    const chunks = replayStructured(lines)

    expect(types(chunks)).not.toContain('RUN_FINISHED')
    expect(types(chunks)).not.toContain('CUSTOM:structured-output.complete')
    const error = chunks.at(-1) as { type: string; code: string; message: string; error: { code: string; message: string }; runId: string; threadId: string }
    expect(error).toMatchObject({ type: 'RUN_ERROR', code: STRUCTURED_OUTPUT_INVALID, runId: 'run-1', threadId: 'thread-1' })
    expect(error.error).toEqual({ message: error.message, code: STRUCTURED_OUTPUT_INVALID })
    expect(error.message).toContain('without calling the StructuredOutput tool')
    expect(error.message).toContain('Still a myth, so there is nothing to fill in.')
  })

  it('reports the CLI giving up after 5 schema failures as structured_output_invalid, keeping its message', () => {
    const lines = linesOf(recording(version, 'structured-output-retries'))
    expect(translate(lines).at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'error_max_structured_output_retries' })
    const error = replayStructured(lines, { exitCode: 1, stderrTail: '' }).at(-1) as { type: string; code: string; message: string }

    expect(error).toMatchObject({ type: 'RUN_ERROR', code: STRUCTURED_OUTPUT_INVALID })
    expect(error.message).toMatch(/^claude-code: the agent gave no output matching outputSchema: Failed to provide valid structured output after 5 attempts/)
    expect(error.message).toContain('/moons: must be integer')
  })

  it('is deterministic: the same bytes give the same chunks twice', () => {
    const lines = linesOf(recording(version, 'structured-output'))
    expect(replayStructured(lines)).toEqual(replayStructured(lines))
  })
})

describe('withClaudeStructuredOutput without a result line', () => {
  it('passes the translator\'s exit error through unchanged', () => {
    const lines = linesOf(recording(versions[0]!, 'structured-output')).filter((line) => (line as { type?: string }).type !== 'result')
    const exit = { exitCode: 1, stderrTail: 'boom' }
    expect(replayStructured(lines, exit)).toEqual(translate(lines, { exit }))
    expect(replayStructured(lines, exit).at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'cli_exit' })
  })
})

describe('--json-schema on the command line', () => {
  it('buildClaudeArgs passes the schema as one JSON argument', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
    const args = buildClaudeArgs({ model: 'sonnet', jsonSchema: schema, extraArgs: ['--x'] })
    expect(args.slice(args.indexOf('--json-schema'), args.indexOf('--json-schema') + 2)).toEqual(['--json-schema', JSON.stringify(schema)])
    expect(args.at(-1), 'before the extra flags').toBe('--x')
    expect(buildClaudeArgs({ model: 'sonnet' })).not.toContain('--json-schema')
  })

  it('the adapter converts outputSchema and runs the CLI with it; chat() gets the schema through chatStream', async () => {
    const { capabilities, spawned } = standInSandbox()
    const adapter = claudeCodeText('sonnet')
    const outputSchema = z.object({ city: z.string(), population: z.number() })
    await drainChatStream(adapter, { model: 'sonnet', runId: 'run-1', threadId: 'thread-1', messages: [{ role: 'user', content: 'Describe Lisbon' }], outputSchema, capabilities })

    expect(spawned).toHaveLength(1)
    const expected = JSON.stringify({ type: 'object', properties: { city: { type: 'string' }, population: { type: 'number' } }, required: ['city', 'population'] })
    expect(spawned[0]).toContain(` --json-schema '${expected}'`)
    expect(adapter.supportsCombinedToolsAndSchema?.()).toBe(true)
    expect(adapter.combinedStructuredOutputSource?.()).toBe('event')
  })

  it('structuredOutput() on its own refuses with the typed error that points at chat({ outputSchema })', async () => {
    const error = await claudeCodeText('sonnet').structuredOutput({ chatOptions: {} as never, outputSchema: {} }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ClaudeCodeUnsupportedError)
    expect(SandboxError.isInstance(error) && error.reason).toBe('structured-output-unsupported')
    expect((error as Error).message).toContain('chat({ adapter, outputSchema')
  })
})
