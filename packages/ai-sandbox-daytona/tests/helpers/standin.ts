/**
 * The Daytona stand-in for this package's suites: one stand-in per suite
 * file, started when the file loads (the conformance kits read a provider's
 * capabilities while they register their cases), closed after the suite,
 * with the engine gate and the check that no container or committed image
 * is left. The provider talks to it with the real `@daytona/sdk`.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect } from 'vitest'
import { dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { DAYTONA_IMAGE, startDaytonaStandin, type DaytonaStandin } from '@testing/daytona-standin'
import type { SandboxProvider } from '@tanstack/ai-sandbox'
import { daytonaSandbox, type DaytonaSandboxConfig } from '../../src/index.js'

/** One suite file's stand-in. */
export interface DaytonaLab {
  /** Why the suite skips (no engine or image); `null` when it runs. */
  readonly reason: string | null
  /** The stand-in (only when `reason` is null). */
  readonly standin: DaytonaStandin
  /** A provider on the stand-in, `config` over the suite's defaults (kill grace 500 ms). */
  provider: (config?: DaytonaSandboxConfig) => SandboxProvider
  /** The containers behind the sandboxes that exist now. */
  containers: () => string[]
  /** Register the after-suite hook: stand-in closed, nothing left. Call inside the describe. */
  cleanupAfter: () => void
}

/**
 * Start the stand-in for one suite file (when the engine and image are there).
 * @param name - Names the suite's containers (label `tanstack-test.run=daytona-<name>-<random>`).
 */
export async function daytonaLab(name: string): Promise<DaytonaLab> {
  const labels = { 'tanstack-test.run': `daytona-${name}-${randomUUID().slice(0, 8)}` }
  const label = `tanstack-test.run=${labels['tanstack-test.run']}`
  const reason = await dockerMissing([DAYTONA_IMAGE], { needsBridge: false })
  const standin = reason === null ? await startDaytonaStandin({ image: DAYTONA_IMAGE, labels }) : (undefined as unknown as DaytonaStandin)
  return {
    reason,
    standin,
    provider: (config = {}) => daytonaSandbox({ apiKey: 'test', apiUrl: standin?.apiUrl ?? 'http://127.0.0.1:9', killGraceMs: 500, ...config }),
    containers: () => standin?.containerIds() ?? [],
    cleanupAfter: () =>
      afterAll(async () => {
        await standin?.close()
        expect(await dockerLeftovers(label), 'every container and committed image was removed').toEqual({ containers: [], images: [], volumes: [] })
      }),
  }
}
