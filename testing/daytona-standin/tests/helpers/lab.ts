/**
 * One stand-in, one SDK client and one sandbox shared by the cases of a suite,
 * with the engine gate and the leftover check every suite of this package
 * runs: `standinLab(name)` before the suite, `lab.use()` inside it.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, expect } from 'vitest'
import { Daytona, type CreateSandboxFromImageParams, type Sandbox } from '@daytona/sdk'
import { dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { DAYTONA_IMAGE, startDaytonaStandin, type DaytonaStandin } from '../../src/index.js'

/** What a suite's cases use; filled in by the suite's `beforeAll`. */
export interface StandinLab {
  standin: DaytonaStandin
  daytona: Daytona
  sandbox: Sandbox
}

/**
 * The gate and hooks of one suite.
 * @param name - Names the suite's containers (label `tanstack-test.run=daytona-standin-<name>-<random>`).
 * @returns `reason` for `describeWithDocker` (why the suite skips; it fails under REQUIRE_DOCKER=1), the containers'
 *   `label` (for `dockerLeftovers`), and `use()`,
 *   which registers the hooks inside the suite: a stand-in, a client and one sandbox (from the daytona image, plus
 *   `create`'s other parameters) before it; after it the sandbox deleted unless `{ keepSandbox: true }` (a case deleted
 *   it itself), the client and stand-in closed, and no container or image left.
 */
export async function standinLab(name: string): Promise<{ reason: string | null; label: string; use: (options?: { keepSandbox?: boolean; create?: Omit<CreateSandboxFromImageParams, 'image'> }) => StandinLab }> {
  const labels = { 'tanstack-test.run': `daytona-standin-${name}-${randomUUID().slice(0, 8)}` }
  const label = `tanstack-test.run=${labels['tanstack-test.run']}`
  const reason = await dockerMissing([DAYTONA_IMAGE], { needsBridge: false })
  const use = (options: { keepSandbox?: boolean; create?: Omit<CreateSandboxFromImageParams, 'image'> } = {}): StandinLab => {
    const lab = {} as StandinLab
    beforeAll(async () => {
      lab.standin = await startDaytonaStandin({ image: DAYTONA_IMAGE, labels })
      lab.daytona = new Daytona({ apiKey: 'test', apiUrl: lab.standin.apiUrl })
      lab.sandbox = await lab.daytona.create({ ...options.create, image: DAYTONA_IMAGE })
    })
    afterAll(async () => {
      if (!options.keepSandbox) await lab.sandbox?.delete()
      await lab.daytona?.[Symbol.asyncDispose]()
      await lab.standin?.close()
      expect(await dockerLeftovers(label), 'every container and committed image was removed').toEqual({ containers: [], images: [], volumes: [] })
    })
    return lab
  }
  return { reason, label, use }
}
