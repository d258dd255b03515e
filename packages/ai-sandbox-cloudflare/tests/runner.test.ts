/**
 * `runInContainerHarness` (the `/runner` entry) at its boundaries, in Node:
 * a bad option is a SandboxConfigError naming it; a run request it cannot
 * read ends as one RUN_ERROR line naming the field (the Coordinator records
 * that reason, not an exit code); an adapter that throws ends as a RUN_ERROR
 * line too. The whole mode, with the real CLI, runs in
 * testing/claude-code-e2e/tests/cloudflare-agent.colocated.e2e.test.ts.
 */
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describe, expect, it } from 'vitest'
import { CONTAINER_RUN_REQUEST_VERSION, runInContainerHarness, type RunInContainerHarnessOptions } from '../src/runner.js'

/** An output that keeps the lines written to it. */
function collect(): { output: NonNullable<RunInContainerHarnessOptions['output']>; lines: () => Record<string, unknown>[] } {
  let text = ''
  return {
    output: {
      write: (piece, done) => {
        text += piece
        done()
        return true
      },
    },
    lines: () =>
      text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  }
}

async function* input(text: string): AsyncIterable<string> {
  yield text
}

const request = {
  version: CONTAINER_RUN_REQUEST_VERSION,
  runId: 'run-r1',
  threadId: 't1',
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  toolsUrl: 'http://127.0.0.1:9/runs/run-r1/tools',
  toolsToken: 'a'.repeat(64),
}

describe('runInContainerHarness', () => {
  it('refuses a bad option naming it and the fix', async () => {
    const error = await runInContainerHarness({ adapter: () => ({}) as never } as never).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect(error).toMatchObject({ field: 'runInContainerHarness.provider', message: expect.stringMatching(/localProcessSandbox\(\)/) })
  })

  it('ends a request it cannot read with one RUN_ERROR line naming the field', async () => {
    const cases: [string, RegExp, string][] = [
      ['not json', /not JSON/, 'unknown'],
      [JSON.stringify({ ...request, version: 2 }), /version: expected version 1/, 'run-r1'],
      [JSON.stringify({ ...request, toolsToken: 'short' }), /toolsToken: expected the per-run bearer/, 'run-r1'],
      [JSON.stringify({ ...request, messages: [] }), /messages: expected at least one message/, 'run-r1'],
    ]
    for (const [text, message, runId] of cases) {
      const { output, lines } = collect()
      const result = await runInContainerHarness({ adapter: () => ({}) as never, provider: localProcessSandbox(), input: input(text), output, signal: new AbortController().signal })
      expect(result).toEqual({ runId, status: 'failed' })
      expect(lines()).toEqual([expect.objectContaining({ type: 'RUN_ERROR', runId, code: 'invalid_run_request', message: expect.stringMatching(message) })])
    }
  })

  it('ends a run whose adapter throws with a RUN_ERROR line', async () => {
    const { output, lines } = collect()
    const result = await runInContainerHarness({
      adapter: () => {
        throw new Error('no model configured')
      },
      provider: localProcessSandbox(),
      input: input(JSON.stringify(request)),
      output,
      signal: new AbortController().signal,
    })
    expect(result).toEqual({ runId: 'run-r1', status: 'failed' })
    expect(lines().at(-1)).toMatchObject({ type: 'RUN_ERROR', runId: 'run-r1', threadId: 't1', message: expect.stringMatching(/no model configured/) })
  })
})
