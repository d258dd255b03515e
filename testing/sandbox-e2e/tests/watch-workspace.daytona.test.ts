/**
 * File events on the Daytona provider (no native watcher: the portable
 * find + stat poll), on the Daytona stand-in with the real @daytona/sdk:
 * watchWorkspace, a chat() run's sandbox.file chunks and file.changed diffs
 * in a git workspace, and a later run of a thread. Afterwards no container
 * of the stand-in may remain. Skips naming the engine when it is missing;
 * fails under REQUIRE_DOCKER=1.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect } from 'vitest'
import { DEFAULT_WORKDIR, daytonaSandbox } from '@tanstack/ai-sandbox-daytona'
import { DAYTONA_IMAGE, startDaytonaStandin } from '@testing/daytona-standin'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { pollFileEventCases } from '@testing/support/file-event-cases'

const RUN = { 'tanstack-test.run': `watch-daytona-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([DAYTONA_IMAGE], { needsBridge: false })
const standin = reason === null ? await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: RUN }) : undefined

describeWithDocker('file events on Daytona (poll, stand-in)', reason, () => {
  afterAll(async () => {
    await standin?.close()
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  pollFileEventCases('daytona', daytonaSandbox({ apiKey: 'test', apiUrl: standin?.apiUrl ?? 'http://127.0.0.1:9', killGraceMs: 500 }), true, DEFAULT_WORKDIR)
})
