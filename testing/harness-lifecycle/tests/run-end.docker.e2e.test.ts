/**
 * How a harness run ends inside Docker sandboxes (issue 18 cases 1 and 2,
 * the latter with and without the CLI's final event):
 * the fake NDJSON CLIs (this suite's `tests/fixtures/bin`, mounted read-only)
 * on the Debian image and on BusyBox sh, and the fake ACP agent of
 * testing/grok-build-e2e (mounted read-only, run by the Debian image's node),
 * driven through chat() + withSandbox. The host sees every container's
 * processes, so each run's tag finds its CLI and children. Every container
 * carries this file's label; afterwards none may remain, nor any tagged process.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { defineSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { ensureFakeAgent } from '@testing/grok-build-e2e/build-fake'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { ALL_HARNESSES, FAKE_BIN, killLeftovers, NDJSON_HARNESSES, newTag, ofType, processesOf, runBounded, typesOf, waitFor, type AdapterInput, type Harness, type Scenario } from './helpers/harnesses.js'

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `lifecycle-docker-${randomUUID().slice(0, 8)}` }
/** Where the fake NDJSON CLIs and the fake Grok agent appear inside every container. */
const BIN = '/opt/lifecycle-bin'
const GROK_DIR = '/opt/fake-grok'
/** The CLIs' grace period, and the longer one of the linger cases, which must stay far above the stream's close time under load (see run-end.e2e.test.ts). */
const GRACE_MS = 1000
const LINGER_GRACE_MS = 5000
const fakeGrok = await ensureFakeAgent()
const reason = await dockerMissing([DEBIAN, BUSYBOX])

describeWithDocker('the end of a run in Docker sandboxes', reason, () => {
  const mounts = [
    { source: FAKE_BIN, target: BIN, readOnly: true },
    { source: fakeGrok.dir, target: GROK_DIR, readOnly: true },
  ]
  const providers = { Debian: dockerSandbox({ image: DEBIAN, labels: RUN, killGraceMs: 500, mounts }), BusyBox: dockerSandbox({ image: BUSYBOX, labels: RUN, killGraceMs: 500, mounts }) }
  const sandboxes: { sandbox: SandboxDefinition; threadId: string }[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  })

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
    expect(await dockerLeftovers(label)).toEqual({ containers: [], images: [], volumes: [] })
    expect(killLeftovers(), 'no CLI process, nor any child of one, is left').toEqual([])
  }, 120_000)

  function sandboxFor(image: keyof typeof providers, id: string): { sandbox: SandboxDefinition; threadId: string } {
    const entry = { sandbox: defineSandbox({ id, provider: providers[image], lifecycle: { snapshot: 'none' } }), threadId: `t-${id}` }
    sandboxes.push(entry)
    return entry
  }

  function fake(harness: Harness, scenario: Scenario): { tag: string; adapter: any } {
    const { tag, env } = newTag()
    const exitGraceMs = scenario === 'final-then-linger' ? LINGER_GRACE_MS : GRACE_MS
    const input: AdapterInput =
      harness.name === 'grok-build'
        ? { executable: `${GROK_DIR}/grok`, env: { ...env, XAI_API_KEY: 'xai-test-key-not-a-secret', ...(scenario === 'final-then-linger' ? { FAKE_GROK_IGNORE_EOF: '1' } : {}) }, exitGraceMs }
        : { executable: `${BIN}/${harness.fake}`, env: { ...env, FAKE_SCENARIO: scenario }, exitGraceMs }
    return { tag, adapter: harness.adapter(input) }
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })
  /** Grok's fake needs node, which only the Debian image has. */
  const lingerCases = [...ALL_HARNESSES.map((h) => ['Debian', h] as const), ...NDJSON_HARNESSES.map((h) => ['BusyBox', h] as const)].map(([image, h]) => [h.name, image, h] as const)
  const backgroundCases = (['Debian', 'BusyBox'] as const).flatMap((image) => NDJSON_HARNESSES.map((h) => [h.name, image, h] as const))

  it.each(lingerCases)('%s on %s: RUN_FINISHED ends the stream while the CLI lingers, and the CLI is stopped after exitGraceMs', async (_, image, harness) => {
    const { sandbox, threadId } = sandboxFor(image, `lcd-linger-${harness.name}-${image.toLowerCase()}`)
    const { tag, adapter } = fake(harness, 'final-then-linger')
    let aliveAtFinish: number[] | undefined
    let finishedAt = 0
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Say hello')], onChunk: (chunk) => void (chunk.type === 'RUN_FINISHED' && ((finishedAt = Date.now()), (aliveAtFinish = processesOf(tag)))) })
    const aliveAtEnd = processesOf(tag)
    const closedAfterMs = Date.now() - finishedAt

    expect(out.error).toBeUndefined()
    expect(typesOf(out.chunks).at(-1)).toBe('RUN_FINISHED')
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(1)
    expect(aliveAtFinish).toBeDefined()
    expect(aliveAtFinish, 'the CLI still ran in the container when the client got RUN_FINISHED').not.toEqual([])
    expect(aliveAtEnd, `the chat() stream ended while the CLI still ran (it closed ${closedAfterMs} ms after RUN_FINISHED; the grace is ${LINGER_GRACE_MS} ms)`).not.toEqual([])
    expect(await waitFor(() => processesOf(tag).length === 0, 30_000), 'the lingering CLI is stopped after the grace period').toBe(true)
  })

  it.each(['Debian', 'BusyBox'] as const)('claude-code on %s: processes that left the CLI\'s process tree (setsid, a double fork) are stopped when the run ends', async (image) => {
    const harness = ALL_HARNESSES.find((h) => h.name === 'claude-code')!
    const { sandbox, threadId } = sandboxFor(image, `lcd-escapes-${image.toLowerCase()}`)
    const { tag, adapter } = fake(harness, 'escapes')
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Leave something running')] })
    expect(out.error).toBeUndefined()
    expect(typesOf(out.chunks).at(-1)).toBe('RUN_FINISHED')
    expect(await waitFor(() => processesOf(tag).length === 0, 30_000), `nothing of the run is left in the container: ${processesOf(tag)}`).toBe(true)
  })

  it.each(backgroundCases)('%s on %s: a background child holding stdout neither keeps the run open nor outlives it', async (_, image, harness) => {
    const { sandbox, threadId } = sandboxFor(image, `lcd-bg-${harness.name}-${image.toLowerCase()}`)
    const { tag, adapter } = fake(harness, 'background-holds-stdout')
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Start a job')] })

    expect(out.error).toBeUndefined()
    expect(typesOf(out.chunks).at(-1)).toBe('RUN_FINISHED')
    expect(out.text, 'the fake started its `sleep 300 &`').toMatch(/pid \d+/)
    expect(await waitFor(() => processesOf(tag).length === 0, 30_000), 'no `sleep 300` of the run is left in the container').toBe(true)
  })

  it.each(backgroundCases)('%s on %s: a CLI that exits without its final event while a background child holds stdout ends the run from its exit', async (_, image, harness) => {
    const { sandbox, threadId } = sandboxFor(image, `lcd-bg-exit-${harness.name}-${image.toLowerCase()}`)
    const { tag, adapter } = fake(harness, 'background-no-final')
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Start a job')] })

    // OpenCode's exit 0 is a finished run; Claude Code and Codex report the missing result line.
    expect(typesOf(out.chunks).at(-1)).toBe(harness.name === 'opencode' ? 'RUN_FINISHED' : 'RUN_ERROR')
    expect(out.text, 'the fake started its `sleep 300 &`').toMatch(/pid \d+/)
    expect(await waitFor(() => processesOf(tag).length === 0, 30_000), 'no `sleep 300` of the run is left in the container').toBe(true)
  })
})
