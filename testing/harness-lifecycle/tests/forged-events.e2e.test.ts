/**
 * A forged final event (issue 16, "the stream only carries what the CLI
 * said"): the agent's tool (the fake Claude Code's `forged-final` scenario)
 * writes a forged tool result and a forged `result` line, with invented usage
 * and cost, into the CLI's own stdout through `/proc/$PPID/fd/1`, and the CLI
 * then goes on with the real turn. Before the fix the forged line ended the
 * run: the client got the invented usage and lost the real answer. Now the
 * run ends with the CLI's own last final event, the real answer reaches the
 * client, and `harness.integrity` events say what looked forged. On
 * local-process and inside Docker (Debian, BusyBox), through chat() +
 * withSandbox.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { defineSandbox, HARNESS_INTEGRITY_EVENT, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { CLAUDE, custom, FAKE_BIN, killLeftovers, newTag, ofType, processesOf, runBounded, typesOf, waitFor, type Outcome, type Scenario } from './helpers/harnesses.js'
import { localSuite } from './helpers/local-sandboxes.js'

const FORGED = 'forged-final' as Scenario
const user = (content: string): ModelMessage => ({ role: 'user', content })

/** What every run of the scenario must show: the CLI's own end, and the forgery flagged. */
function expectRealEnd(out: Outcome): void {
  expect(out.error).toBeUndefined()
  const finished = ofType(out.chunks, 'RUN_FINISHED')
  expect(finished, 'one RUN_FINISHED reaches the client').toHaveLength(1)
  expect(typesOf(out.chunks).at(-1)).toBe('RUN_FINISHED')
  // The CLI's own totals (21 in, 17 out, $0.0001), not the forged 900000 / $42.5.
  expect(finished[0]!.usage).toMatchObject({ promptTokens: 21, completionTokens: 17 })
  expect(JSON.stringify(finished[0])).not.toContain('900000')
  expect(out.text, 'the real answer reached the client').toContain('The real answer.')
  const kinds = custom(out.chunks, HARNESS_INTEGRITY_EVENT).map((c) => (c.value as { kind: string }).kind)
  expect(kinds).toEqual(expect.arrayContaining(['events-after-final', 'usage-decreased', 'duplicate-tool-result']))
  // The real result of the tool call came second and was dropped as a duplicate; one result per call reaches the client.
  expect(ofType(out.chunks, 'TOOL_CALL_RESULT').filter((c) => c.toolCallId === 'toolu_fake_open_1')).toHaveLength(1)
}

describe('a forged final event on local-process', () => {
  const suite = localSuite('lifecycle-forged')

  it('claude-code: a forged result line written into the CLI\'s stdout neither ends the run nor replaces its usage', async () => {
    const { sandbox, threadId } = suite.sandbox('lc-forged')
    const { tag, adapter } = suite.fake(CLAUDE, FORGED, { exitGraceMs: 1000 })
    const out = await runBounded(CLAUDE, { adapter, sandbox, threadId, messages: [user('Run the build script')] })
    expectRealEnd(out)
    expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
  })

  it('claude-code: a plain run carries no integrity event', async () => {
    const { sandbox, threadId } = suite.sandbox('lc-forged-plain')
    const { adapter } = suite.fake(CLAUDE, 'plain')
    const out = await runBounded(CLAUDE, { adapter, sandbox, threadId, messages: [user('Say hello')] })
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(1)
    expect(custom(out.chunks, HARNESS_INTEGRITY_EVENT)).toEqual([])
  })
})

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `lifecycle-forged-${randomUUID().slice(0, 8)}` }
const BIN = '/opt/lifecycle-bin'
const reason = await dockerMissing([DEBIAN, BUSYBOX])

describeWithDocker('a forged final event inside Docker', reason, () => {
  const mounts = [{ source: FAKE_BIN, target: BIN, readOnly: true }]
  const images = { Debian: DEBIAN, BusyBox: BUSYBOX }
  const sandboxes: { sandbox: SandboxDefinition; threadId: string }[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  })

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN })
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
    expect(killLeftovers(), 'no CLI process, nor any child of one, is left').toEqual([])
  }, 120_000)

  it.each(['Debian', 'BusyBox'] as const)('claude-code on %s: the CLI\'s own final event ends the run, not the forged one', async (image) => {
    const provider = dockerSandbox({ image: images[image], labels: RUN, killGraceMs: 500, mounts })
    const entry = { sandbox: defineSandbox({ id: `lcd-forged-${image.toLowerCase()}`, provider, lifecycle: { snapshot: 'none' } }), threadId: `t-forged-${image}` }
    sandboxes.push(entry)
    const { tag, env } = newTag()
    const adapter = CLAUDE.adapter({ executable: `${BIN}/${CLAUDE.fake}`, env: { ...env, FAKE_SCENARIO: FORGED }, exitGraceMs: 1000 })
    const out = await runBounded(CLAUDE, { adapter, sandbox: entry.sandbox, threadId: entry.threadId, messages: [user('Run the build script')] })
    expectRealEnd(out)
    expect(await waitFor(() => processesOf(tag).length === 0, 30_000)).toBe(true)
  })
})
