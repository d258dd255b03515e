/**
 * The chaos suite (`helpers/chaos-suite.ts`) with each run in a Docker
 * sandbox (the Debian image, the Claude Code binary mounted read-only, aimock
 * over the bridge) and every server over one PostgreSQL schema. CI runs the
 * cases the other suites do not reach on this setting (`result-line`,
 * `first-file-changed`, `pause`, `orphan`); `pnpm soak` runs every case
 * (`CHAOS_CASES=all`) with its repeats and seeded random kills. Without an
 * engine, the image or PostgreSQL it skips naming why; under REQUIRE_DOCKER=1
 * or REQUIRE_POSTGRES=1 it fails instead.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect, it } from 'vitest'
import { pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { claudeBinary } from '../src/aimock.js'
import { suitePostgres } from '../src/postgres-server.js'
import { chaosSuite } from './helpers/chaos-suite.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const CONTAINER_CLI = '/opt/claude/claude'
const LABELS = { 'tanstack-test.run': `chaos-${randomUUID().slice(0, 8)}` }
const dockerReason = await dockerMissing([IMAGE])
const postgres = dockerReason === null ? await suitePostgres('e2e_chaos') : { missing: 'not looked for: no Docker' }

describeWithDocker('chaos: a run survives its host at any moment (Docker + PostgreSQL)', dockerReason, () => {
  if ('missing' in postgres) {
    if (process.env.REQUIRE_POSTGRES === '1') it(`needs PostgreSQL (REQUIRE_POSTGRES=1): ${postgres.missing}`, () => expect.fail(postgres.missing))
    else it.skip(`skipped: ${postgres.missing}`, () => undefined)
    return
  }
  afterAll(async () => {
    const left = await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)
    await pruneDockerSandboxes({ labels: LABELS }) // so that a failure leaks nothing; reported below
    await postgres.release()
    expect(left, 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  chaosSuite({
    name: 'docker',
    stores: { kind: 'postgres', url: postgres.url, schema: postgres.schema },
    provider: { kind: 'docker', image: IMAGE, labels: LABELS, mounts: [{ source: claudeBinary(), target: CONTAINER_CLI, readOnly: true }] },
    modelHost: async () => (await bridgeHostAddress())!,
    claude: (model) => {
      const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
      return { options: { executable: CONTAINER_CLI, env: { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' } } }
    },
    sandboxesLeft: async () => (await dockerLeftovers(`tanstack-test.run=${LABELS['tanstack-test.run']}`)).containers,
    // Every process of a run lives in its container, which the check above sees go.
    processesLeft: () => 0,
    cases: ['result-line', 'first-file-changed', 'pause', 'orphan'],
    randomTrials: 0,
    seedOffset: 100_000,
  })
})
