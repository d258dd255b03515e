/**
 * A provider whose handle names a relative `journalDir` (a review of issue 31
 * found the refactor let it throw between `ensure` and the run's registration,
 * leaking the sandbox and blaming an option the user never set). The run's
 * journal names cannot be derived, which is logged; the run goes on, the
 * sandbox's lifecycle still applies, and nothing is left behind.
 */
import { afterEach, expect, it, vi } from 'vitest'
import { InMemoryRunStore, memoryStream } from '@tanstack/ai'
import { withSandbox, type SandboxHandle } from '../../src/index.js'
import { agentAdapter, drive, sandboxLab } from './durability-helpers.js'

vi.setConfig({ testTimeout: 15_000 })

const destroyed: string[] = []
const lab = sandboxLab('relative-journal-dir', (provider) => ({
  ...provider,
  create: async (input) => {
    const handle = await provider.create(input)
    return new Proxy(handle, { get: (target, key) => (key === 'journalDir' ? 'runs' : Reflect.get(target, key)) }) as SandboxHandle
  },
  destroy: async (input) => {
    destroyed.push(input.id)
    return provider.destroy(input)
  },
}))
afterEach(async () => {
  expect(await lab.cleanup(), 'no sandbox directory is left').toEqual([])
})

it('a handle with a relative journalDir: the durable run is not thrown at setup, and its generated-thread sandbox is destroyed after it', async () => {
  const runs = new InMemoryRunStore()
  const runId = 'run-relative-journal-dir'
  const errors: string[] = []
  const noop = () => undefined
  const agent = agentAdapter({ turns: ['text'] })
  const { thrown } = await drive({
    adapter: agent.adapter,
    // No threadId of the caller's own: chat() makes one up, so withSandbox destroys the sandbox after the run.
    middleware: [withSandbox(lab.sandbox('relative-journal-dir'), { runs, durability: { adapter: memoryStream({ runId }) } })],
    runId,
    threadId: `thread-${Date.now()}-relative`,
    logger: { debug: noop, info: noop, warn: noop, error: (message: string) => void errors.push(message) },
  })
  expect(thrown, 'setup does not throw').toBeUndefined()
  expect(destroyed, 'the sandbox is destroyed, not leaked').toHaveLength(1)
  expect(errors.join('\n'), 'the journal names that could not be derived are logged').toMatch(/journal/)
})
