/**
 * The stand-in image and whether this machine can run the lab: an engine, and
 * the image built from the current server sources (its
 * `tanstack.sandbox.standin-source` label must equal the hash of
 * `server/*.ts`, computed as scripts/docker/images.sh computes it), so a suite
 * never runs an old server by accident.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { engine } from '@testing/support/docker-engine'

/** The image `scripts/docker/images.sh cloudflare` builds (TANSTACK_SANDBOX_CLOUDFLARE_IMAGE names another). */
export const CLOUDFLARE_IMAGE = process.env.TANSTACK_SANDBOX_CLOUDFLARE_IMAGE ?? 'tanstack-sandbox-cloudflare:bookworm'

const BUILD = 'scripts/docker/images.sh cloudflare'
const SERVER_DIR = new URL('../server/', import.meta.url)

/** The hash of the server's sources: `server/*.ts` in byte order, concatenated, sha256, first 16 hex digits. */
export function serverSourceHash(): string {
  const names = readdirSync(SERVER_DIR)
    .filter((name) => name.endsWith('.ts'))
    .sort()
  const hash = createHash('sha256')
  for (const name of names) hash.update(readFileSync(new URL(name, SERVER_DIR)))
  return hash.digest('hex').slice(0, 16)
}

/**
 * Why the lab cannot run here, or `undefined`: no engine answering, the
 * image missing, or the image built from other server sources.
 * @param image The image to check (default {@link CLOUDFLARE_IMAGE}).
 */
export async function cloudflareMissing(image = CLOUDFLARE_IMAGE): Promise<string | undefined> {
  const where = process.env.DOCKER_HOST ?? '/var/run/docker.sock'
  try {
    await engine('/_ping')
  } catch (error) {
    return `docker engine not answering on ${where} (${(error as Error).message}); start it with scripts/docker/engine.sh`
  }
  const { status, body } = await engine(`/images/${encodeURIComponent(image)}/json`)
  if (status !== 200) return `docker image ${image} not found on ${where}; build it with ${BUILD} (after pnpm install)`
  if (image !== CLOUDFLARE_IMAGE || process.env.TANSTACK_SANDBOX_CLOUDFLARE_IMAGE !== undefined) return undefined
  const built = (body as { Config?: { Labels?: Record<string, string> | null } }).Config?.Labels?.['tanstack.sandbox.standin-source']
  const current = serverSourceHash()
  if (built !== current) return `docker image ${image} was built from other control-server sources (${built ?? 'no label'}, now ${current}); rebuild it with ${BUILD}`
  return undefined
}
