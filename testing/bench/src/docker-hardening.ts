/**
 * Benchmark (k): what the hardened Docker defaults cost when a sandbox is
 * made. `create()` plus `destroy()` with the defaults (uid 1000 with its
 * workspace and HOME handed over by a tar, no capabilities, limits, the
 * managed network) against the same provider loosened back to the old
 * behaviour (the image's root user, Docker's 14 capabilities, no limits, the
 * default bridge). Owns every sandbox it creates; a Docker engine that is not
 * answering is a skipped row.
 */
import { DOCKER_ENGINE_DEFAULT_CAPABILITIES, dockerSandbox, type DockerSandboxConfig } from '@tanstack/ai-sandbox-docker'
import { median, percentile } from './stats.js'

/** One row of the result. */
export interface DockerHardeningRow {
  readonly name: string
  readonly iterations: number
  /** Milliseconds of `create()` (container create, start and the provider's setup). */
  readonly createMedianMs: number
  /** Milliseconds. */
  readonly createP95Ms: number
  /** Milliseconds of `destroy()`. */
  readonly destroyMedianMs: number
  /** Why the row did not run. */
  readonly skipped?: string
}

/** The old defaults, spelled out. */
const LOOSENED: Omit<DockerSandboxConfig, 'image'> = {
  user: null,
  network: 'bridge',
  capAdd: [...DOCKER_ENGINE_DEFAULT_CAPABILITIES],
  noNewPrivileges: false,
  resources: { memory: null, cpus: null, pids: null },
}

/**
 * Time `create()` and `destroy()` with the hardened defaults and with the old behaviour.
 *
 * @param iterations - Sandboxes per row (each destroyed right after). Default 10.
 * @param image - Default `tanstack-sandbox-busybox:latest`.
 */
export async function benchDockerHardening(iterations = 10, image = 'tanstack-sandbox-busybox:latest'): Promise<DockerHardeningRow[]> {
  const rows: DockerHardeningRow[] = []
  for (const [name, config] of [
    ['hardened defaults', {}],
    ['old behaviour (root, 14 capabilities, no limits, default bridge)', LOOSENED],
  ] as const) {
    const provider = dockerSandbox({ image, labels: { 'tanstack-bench': 'docker-hardening' }, killGraceMs: 500, ...config })
    const creates: number[] = []
    const destroys: number[] = []
    try {
      // One warm-up: the first create of the defaults also creates the managed network.
      await (await provider.create()).destroy()
      for (let i = 0; i < iterations; i++) {
        const started = performance.now()
        const handle = await provider.create()
        creates.push(performance.now() - started)
        const destroying = performance.now()
        await handle.destroy()
        destroys.push(performance.now() - destroying)
      }
      rows.push({ name, iterations, createMedianMs: median(creates), createP95Ms: percentile(creates, 95), destroyMedianMs: median(destroys) })
    } catch (error) {
      rows.push({ name, iterations: 0, createMedianMs: NaN, createP95Ms: NaN, destroyMedianMs: NaN, skipped: (error as Error).message.split('\n')[0] })
    }
  }
  return rows
}
