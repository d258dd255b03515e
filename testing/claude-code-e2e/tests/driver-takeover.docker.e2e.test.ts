/**
 * The driver-takeover trials of `driver-takeover.e2e.test.ts` with each run
 * in a Docker sandbox (the Debian image, the Claude Code binary mounted
 * read-only, aimock reached over the bridge): a SIGKILLed server's run is
 * taken over by another process through the journal inside the container;
 * the client's transcript equals the control, one CLI ran, and no container
 * is left. Counts as there (`TAKEOVER_TRIALS` CI 2 / full 10,
 * `TAKEOVER_REFRESHES` CI 1 / full 3, `TAKEOVER_CANCELS` CI 3 / full 25;
 * concurrent attaches run on local-process only); `TAKEOVER_SEED` replays.
 * Without an engine or the image it skips naming why; under REQUIRE_DOCKER=1
 * it fails instead.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect } from 'vitest'
import { pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { claudeBinary } from '../src/aimock.js'
import { CANCELS, REFRESHES, takeoverSuite } from './helpers/takeover-suite.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const CONTAINER_CLI = '/opt/claude/claude'
const dockerReason = await dockerMissing([IMAGE])

const LABELS = { 'tanstack-test.run': `driver-takeover-${randomUUID().slice(0, 8)}` }
describeWithDocker('takeover across processes with the real claude CLI in Docker sandboxes', dockerReason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)
    await pruneDockerSandboxes({ labels: LABELS }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  takeoverSuite({
    name: 'docker',
    provider: { kind: 'docker', image: IMAGE, labels: LABELS, mounts: [{ source: claudeBinary(), target: CONTAINER_CLI, readOnly: true }] },
    modelHost: async () => (await bridgeHostAddress())!,
    claude: (model) => {
      const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
      const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
      return { options: { executable: CONTAINER_CLI, env }, home }
    },
    sandboxesLeft: async () => (await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)).containers,
    seedOffset: 100_000,
    concurrentTrials: 0,
    cancels: CANCELS,
    refreshTrials: REFRESHES,
  })
})
