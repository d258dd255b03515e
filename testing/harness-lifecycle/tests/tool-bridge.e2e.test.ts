/**
 * A tool bridge the agent cannot use is not silent (issue 18 case 9), through
 * chat({ tools }) + withSandbox on the local-process provider with the fake
 * claude CLI: a run that finishes without ever contacting the bridge, and one
 * whose init line lists the bridge's MCP server `tanstack` as failed, each
 * carry one CUSTOM `tool-bridge.unavailable` chunk before RUN_FINISHED and
 * warn the logger. The host tool never runs: no agent called it.
 */
import { describe, expect, it } from 'vitest'
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { TOOL_BRIDGE_UNAVAILABLE_EVENT } from '@tanstack/ai-sandbox'
import { CLAUDE, custom, runBounded, typesOf } from './helpers/harnesses.js'
import { localSuite } from './helpers/local-sandboxes.js'

const suite = localSuite('lifecycle-bridge')
const user = (content: string): ModelMessage => ({ role: 'user', content })

/** One host tool; `calls` is written only by its execute. */
function weatherTool() {
  const calls: unknown[] = []
  const tool = toolDefinition({ name: 'get_weather', description: 'The weather in a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }).server(async (args) => {
    calls.push(args)
    return 'Sunny.'
  })
  return { calls, tool }
}

/** A logger that keeps its warnings apart. */
function recordingLogger() {
  const warnings: string[] = []
  const logger = { debug: () => undefined, info: () => undefined, warn: (message: string) => void warnings.push(message), error: () => undefined }
  return { warnings, logger }
}

describe('claude-code: a tool bridge the agent cannot use', () => {
  it('a run that never contacted the bridge reports tool-bridge.unavailable (not-contacted) before RUN_FINISHED and warns', async () => {
    const { sandbox, threadId } = suite.sandbox('lc-bridge-silent')
    const { adapter } = suite.fake(CLAUDE, 'plain')
    const { calls, tool } = weatherTool()
    const { warnings, logger } = recordingLogger()
    const out = await runBounded(CLAUDE, { adapter, sandbox, threadId, messages: [user('What is the weather in Paris?')], tools: [tool], debug: { logger } })

    expect(out.error).toBeUndefined()
    const unavailable = custom(out.chunks, TOOL_BRIDGE_UNAVAILABLE_EVENT)
    expect(unavailable).toHaveLength(1)
    expect(unavailable[0]!.value).toMatchObject({ server: 'tanstack', status: 'not-contacted', reason: expect.any(String) })
    const types = typesOf(out.chunks)
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(out.chunks.indexOf(unavailable[0] as never)).toBeLessThan(types.lastIndexOf('RUN_FINISHED'))
    expect(warnings.join('\n')).toContain('never contacted the host tool bridge')
    expect(calls).toEqual([])
  })

  it('an init line listing the bridge server as failed reports tool-bridge.unavailable (failed) once and warns', async () => {
    const { sandbox, threadId } = suite.sandbox('lc-bridge-failed')
    const { adapter } = suite.fake(CLAUDE, 'bridge-failed')
    const { calls, tool } = weatherTool()
    const { warnings, logger } = recordingLogger()
    const out = await runBounded(CLAUDE, { adapter, sandbox, threadId, messages: [user('What is the weather in Paris?')], tools: [tool], debug: { logger } })

    expect(out.error).toBeUndefined()
    const unavailable = custom(out.chunks, TOOL_BRIDGE_UNAVAILABLE_EVENT)
    expect(unavailable, 'one report, not a second "not contacted" one').toHaveLength(1)
    expect(unavailable[0]!.value).toMatchObject({ server: 'tanstack', status: 'failed', reason: expect.any(String) })
    const types = typesOf(out.chunks)
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(out.chunks.indexOf(unavailable[0] as never)).toBeLessThan(types.lastIndexOf('RUN_FINISHED'))
    expect(warnings.join('\n')).toContain('tanstack')
    expect(warnings.length).toBeGreaterThan(0)
    expect(calls).toEqual([])
  })
})
