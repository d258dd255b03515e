/**
 * Where the demo's agent runs, per `--provider`: the sandbox provider, and
 * what the CLI sees from inside it (its own path, the repository's URL, its
 * HOME, the host name of the offline model). local-process is a directory on
 * this machine, so host paths work as they are. Docker is a container of
 * `--image`: the CLI binary and a local repository are bind-mounted read-only,
 * and the model is reached as host.docker.internal.
 * Invariant: every Docker resource the run creates carries the run's label,
 * and `cleanup()` removes whatever of it is left.
 */
import { createServer } from 'node:net'
import { basename, join } from 'node:path'
import type { SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerHostAccess, dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import Docker from 'dockerode'
import { DemoError } from './errors.js'
import type { RepoSource } from './repo.js'

/** The image `--provider docker` uses unless `--image` names another (built by scripts/docker/images.sh). */
export const DEFAULT_DOCKER_IMAGE = 'tanstack-sandbox-debian:bookworm'
/** Where the host's Claude Code binary appears inside the container. */
export const CONTAINER_CLI = '/opt/claude/claude'
/** Where a local repository appears (read-only) inside the container, for the clone. */
export const CONTAINER_REPO = '/mnt/repo'
/** The Docker label on every container and image of one run; its value is the run's temp directory name. */
export const DOCKER_RUN_LABEL = 'tanstack.quickstart.run'

/** Everything provider-specific about one demo run. */
export interface SandboxTarget {
  /** `local-process` or `docker`. */
  readonly name: string
  /** For the intro, e.g. the image. */
  readonly detail?: string
  readonly provider: SandboxProvider
  /** The repository's git URL as the sandbox clones it. */
  readonly repoUrl: string
  /** The CLI's path inside the sandbox. */
  readonly executable: string
  /** The CLI's HOME and scratch directory (`CLAUDE_CODE_TMPDIR`) inside the sandbox; both go with the run. */
  readonly home: string
  readonly tmp: string
  /** The address the offline model listens on, and the host name the sandbox uses for it. */
  readonly modelListen: string
  readonly modelHost: string
  /** Remove what the provider may have left beyond the sandbox itself. Never throws. */
  cleanup: () => Promise<void>
}

/** Inputs of {@link resolveSandboxTarget}. */
export interface SandboxTargetInput {
  readonly provider: 'local-process' | 'docker'
  /** The Docker image (docker only). Default {@link DEFAULT_DOCKER_IMAGE}. */
  readonly image?: string
  /** The run's temp directory. */
  readonly temp: string
  readonly repo: RepoSource
  /** The host path of the Claude Code binary. */
  readonly cli: string
}

/**
 * Work out where the run's agent lives.
 *
 * @throws DemoError `docker` when the engine does not answer or the image is not on it.
 * @example
 * ```ts
 * const target = await resolveSandboxTarget({ provider: 'docker', temp, repo, cli: resolveClaudeExecutable() })
 * claudeCodeText(model, { executable: target.executable, env: { HOME: target.home } })
 * ```
 */
export async function resolveSandboxTarget(input: SandboxTargetInput): Promise<SandboxTarget> {
  const { temp, repo, cli } = input
  if (input.provider === 'local-process') {
    return {
      name: 'local-process',
      provider: localProcessSandbox({ root: join(temp, 'sandboxes') }),
      repoUrl: repo.url,
      executable: cli,
      home: join(temp, 'home'), // a fresh ~/.claude: no user settings, hooks or sessions leak in
      tmp: join(temp, 'tmp'), // the CLI's per-session scratch (default /tmp/claude-<uid>/…), removed with temp
      modelListen: '127.0.0.1',
      modelHost: '127.0.0.1',
      cleanup: async () => undefined,
    }
  }
  const image = input.image ?? DEFAULT_DOCKER_IMAGE
  const docker = new Docker()
  await checkEngine(docker, image)
  const labels = { [DOCKER_RUN_LABEL]: basename(temp) }
  const mounts = [{ source: cli, target: CONTAINER_CLI, readOnly: true }, ...(repo.path ? [{ source: repo.path, target: CONTAINER_REPO, readOnly: true }] : [])]
  // Run as this user, so the repository's files have the owner git expects and nothing root-owned is made for you.
  const user = process.getuid && process.getgid ? `${process.getuid()}:${process.getgid()}` : undefined
  return {
    name: 'docker',
    detail: image,
    provider: dockerSandbox({ image, labels, mounts, ...(user ? { user } : {}), docker }),
    repoUrl: repo.path ? `file://${CONTAINER_REPO}` : repo.url,
    executable: CONTAINER_CLI,
    home: '/tmp/quickstart/home', // in the container: gone with it
    tmp: '/tmp/quickstart/tmp',
    modelListen: (await hostListenAddress(docker)) ?? '0.0.0.0',
    modelHost: 'host.docker.internal',
    cleanup: async () => {
      await pruneDockerSandboxes({ docker, labels }).catch(() => undefined) // best effort: the sandbox's own destroy already ran
    },
  }
}

/** Ping the engine and find the image, with a message saying how to fix either. */
async function checkEngine(docker: Docker, image: string): Promise<void> {
  try {
    await Promise.race([docker.ping(), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5000).unref())])
  } catch (cause) {
    const endpoint = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock'
    throw new DemoError('docker', `--provider docker: no Docker engine answers on ${endpoint} (${(cause as Error).message}). Start one (in this repository: sudo scripts/docker/engine.sh), or drop --provider docker.`, { cause })
  }
  try {
    await docker.getImage(image).inspect()
  } catch (cause) {
    const how = image === DEFAULT_DOCKER_IMAGE ? 'build it with sudo scripts/docker/images.sh, or pass --image with an image that has bash, git and node' : 'build or load it first (images are never pulled)'
    throw new DemoError('docker', `--provider docker: the image ${image} is not on the Docker engine; ${how}.`, { cause })
  }
}

/**
 * Where the model must listen for the sandbox to reach it as
 * host.docker.internal, known before the sandbox exists (`dockerHostAccess`:
 * the default bridge's gateway, 172.17.0.1 on a default engine). Listening
 * there instead of on 0.0.0.0 keeps the mock off every other network. A trial
 * bind proves the address is this machine's.
 * @returns The address, or `undefined` when it is not this machine's (Docker Desktop, a remote engine): then listen on 0.0.0.0.
 */
async function hostListenAddress(docker: Docker): Promise<string | undefined> {
  const access = await dockerHostAccess({ docker }).catch(() => undefined)
  return access && (await canListen(access.listenAddress)) ? access.listenAddress : undefined
}

function canListen(address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(0, address, () => server.close(() => resolve(true)))
  })
}
