/**
 * The Docker engine gate and leftover check shared by the Docker suites:
 * talk to the Engine API over its unix socket (no client library), say why
 * a suite cannot run (engine or image missing), and list what carries a
 * suite's run label. Under REQUIRE_DOCKER=1 a missing engine is a failure.
 */
import { request } from 'node:http'
import { describe, it } from 'vitest'

/** The engine socket the suites use. */
export const DOCKER_SOCKET = '/var/run/docker.sock'

/** GET an Engine API path. */
export function engine(path: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: DOCKER_SOCKET, path, timeout: 5000 }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text.startsWith('[') || text.startsWith('{') ? JSON.parse(text) : text }))
    })
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')))
    req.on('error', reject)
    req.end()
  })
}

/** Why the suite cannot run (engine or one of `images` missing), or `null`. */
export async function dockerMissing(images: readonly string[]): Promise<string | null> {
  try {
    await engine('/_ping')
  } catch (error) {
    return `docker engine not answering on ${DOCKER_SOCKET} (${(error as Error).message}); start it with scripts/docker/engine.sh`
  }
  for (const image of images) {
    if ((await engine(`/images/${encodeURIComponent(image)}/json`)).status !== 200) return `docker image ${image} not found; build it with scripts/docker/images.sh`
  }
  return null
}

/**
 * Register `body` when the engine is there; otherwise a skip naming the
 * missing part, or (REQUIRE_DOCKER=1) a failing test saying so.
 */
export function describeWithDocker(title: string, reason: string | null, body: () => void): void {
  if (reason === null) {
    describe(title, body)
    return
  }
  if (process.env.REQUIRE_DOCKER !== '1') {
    describe(title, () => it.skip(`skipped — ${reason}`, () => undefined))
    return
  }
  describe(title, () =>
    it(`needs the Docker engine (REQUIRE_DOCKER=1): ${reason}`, () => {
      throw new Error(`REQUIRE_DOCKER=1 but ${reason}`)
    }),
  )
}

const filters = (label: string) => encodeURIComponent(JSON.stringify({ label: [label] }))

/** Containers, images and volumes carrying `label` (`key=value`). */
export async function dockerLeftovers(label: string): Promise<{ containers: string[]; images: string[]; volumes: string[] }> {
  const [containers, images, volumes] = await Promise.all([
    engine(`/containers/json?all=1&filters=${filters(label)}`),
    engine(`/images/json?all=1&filters=${filters(label)}`),
    engine(`/volumes?filters=${filters(label)}`),
  ])
  return { containers: containers.body.map((c: { Id: string }) => c.Id), images: images.body.map((i: { Id: string }) => i.Id), volumes: (volumes.body.Volumes ?? []).map((v: { Name: string }) => v.Name) }
}
