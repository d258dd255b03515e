/**
 * The engine gate of the Docker suites: probe the engine and the images once
 * per file. When something is missing the suite skips with a reason naming it
 * (`docker engine not answering on /var/run/docker.sock`), unless
 * REQUIRE_DOCKER=1 (CI), where the same reason becomes a failing test.
 */
import Docker from 'dockerode'
import { describe, it } from 'vitest'

/** The images `scripts/docker/images.sh` builds. */
export const DEBIAN_IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
export const BUSYBOX_IMAGE = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'

/** What the probe found. */
export interface EngineGate {
  /** `null` when everything needed is there, otherwise why not. */
  readonly missing: string | null
}

const SOCKET = '/var/run/docker.sock'

/** Ping the engine (bounded) and check that `images` exist. */
export async function probeEngine(images: readonly string[]): Promise<EngineGate> {
  const docker = new Docker()
  const endpoint = process.env.DOCKER_HOST ?? SOCKET
  try {
    await Promise.race([docker.ping(), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5000).unref())])
  } catch (error) {
    return { missing: `docker engine not answering on ${endpoint} (${(error as Error).message}); start it with scripts/docker/engine.sh` }
  }
  for (const image of images) {
    try {
      await docker.getImage(image).inspect()
    } catch {
      return { missing: `docker image ${image} not found on ${endpoint}; build it with scripts/docker/images.sh` }
    }
  }
  return { missing: null }
}

/** True when a missing engine must fail the run instead of skipping it. */
export const REQUIRED = process.env.REQUIRE_DOCKER === '1'

/**
 * Register `suite` when the engine and images are there; otherwise one
 * skipped (or, under REQUIRE_DOCKER=1, failing) test that names what is missing.
 */
export async function describeWithDocker(name: string, images: readonly string[], suite: () => void): Promise<void> {
  const gate = await probeEngine(images)
  if (gate.missing === null) {
    describe(name, suite)
    return
  }
  if (REQUIRED) {
    describe(name, () => {
      it(`needs the Docker engine (REQUIRE_DOCKER=1): ${gate.missing}`, () => {
        throw new Error(`REQUIRE_DOCKER=1 but ${gate.missing}`)
      })
    })
    return
  }
  describe(name, () => {
    it.skip(`skipped — ${gate.missing}`, () => undefined)
  })
}
