/**
 * The driver-takeover trials with each run in a Daytona sandbox on the
 * Daytona stand-in (the real @daytona/sdk in every server process; the Claude
 * Code binary mounted read-only where a Daytona snapshot would have it; aimock
 * reached over the bridge): a SIGKILLed server's run is taken over by another
 * process through the journal inside the sandbox, read by following it over
 * the session log socket; the client's transcript equals the control, one CLI
 * ran, and no sandbox is left. The CI count of seeded kills (plus the
 * first-event and after-last-event kills), one cancel, no concurrent attaches
 * or refreshes (`pnpm soak` sets TAKEOVER_CANCELS and gets its full count):
 * the protocol is the provider's, the takeover logic is proven at length by
 * the other settings.
 * Without an engine or the image it skips naming why; under REQUIRE_DOCKER=1 it fails.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect } from 'vitest'
import { DAYTONA_IMAGE, startDaytonaStandin } from '@testing/daytona-standin'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { claudeBinary } from '../src/aimock.js'
import { CANCELS, takeoverSuite } from './helpers/takeover-suite.js'

const CONTAINER_CLI = '/opt/claude/claude'
const LABELS = { 'tanstack-test.run': `driver-takeover-daytona-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([DAYTONA_IMAGE])
const standin = reason === null ? await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: LABELS, mounts: [{ source: claudeBinary(), target: CONTAINER_CLI, readOnly: true }], hostGateway: true }) : undefined

describeWithDocker('takeover across processes with the real claude CLI in Daytona sandboxes (stand-in)', reason, () => {
  afterAll(async () => {
    await standin?.close()
    expect(await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`), 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  takeoverSuite({
    name: 'daytona',
    provider: { kind: 'daytona', apiUrl: standin?.apiUrl ?? 'http://127.0.0.1:9', apiKey: 'test' },
    modelHost: async () => (await bridgeHostAddress())!,
    claude: (model) => {
      const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
      const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
      return { options: { executable: CONTAINER_CLI, env }, home }
    },
    sandboxesLeft: async () => standin?.sandboxIds() ?? [],
    seedOffset: 200_000,
    // CI: one cancel; `pnpm soak` (TAKEOVER_CANCELS set) runs its full count here too.
    concurrentTrials: 0,
    cancels: process.env.TAKEOVER_CANCELS ? CANCELS : 1,
    refreshTrials: 0,
  })
})
