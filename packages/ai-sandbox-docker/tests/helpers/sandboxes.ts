/**
 * Scaffolding shared by the Docker suites: a label unique to one test file on
 * every container (and so on every image committed from one), sandboxes
 * tracked and destroyed after each test, and the leftover check: after the
 * file, no container, image or volume carrying that label may remain.
 */
import { randomUUID } from 'node:crypto'
import Docker from 'dockerode'
import { afterAll, afterEach, expect } from 'vitest'
import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '../../src/index.js'
import type { DockerSandboxConfig } from '../../src/index.js'

/** The label key that ties resources to one test file's run. */
export const RUN_LABEL = 'tanstack-test.run'

/** What one test file's engine resources look like. */
export interface Leftovers {
  containers: string[]
  images: string[]
  volumes: string[]
}

/** Everything on the engine carrying `label=value`. */
export async function leftovers(docker: Docker, label: string): Promise<Leftovers> {
  const filters = { label: [label] }
  const [containers, images, volumes] = await Promise.all([docker.listContainers({ all: true, filters }), docker.listImages({ all: true, filters }), docker.listVolumes({ filters })])
  return { containers: containers.map((c) => `${c.Id.slice(0, 12)} ${c.Names.join(',')}`), images: images.map((i) => i.Id), volumes: (volumes.Volumes ?? []).map((v) => v.Name) }
}

/**
 * Register per-test cleanup and the per-file leftover check.
 * @param file - A short name for the test file (goes into the label value).
 */
export function useDockerSandboxes(file: string) {
  const docker = new Docker()
  const run = `${file}-${randomUUID().slice(0, 8)}`
  const labels = { [RUN_LABEL]: run }
  const handles: SandboxHandle[] = []
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.destroy()))
  })
  afterAll(async () => {
    // Every sandbox must be gone already; snapshot images are kept by design, so prune those.
    const before = await leftovers(docker, `${RUN_LABEL}=${run}`)
    expect(before.containers, 'every sandbox container was destroyed by the tests').toEqual([])
    await pruneDockerSandboxes({ labels })
    expect(await leftovers(docker, `${RUN_LABEL}=${run}`), 'no container, image or volume with our labels is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)
  return {
    docker,
    labels,
    /** A provider whose containers carry this file's label. */
    provider: (config: DockerSandboxConfig): SandboxProvider => dockerSandbox({ ...config, labels: { ...config.labels, ...labels } }),
    /** Create a sandbox that is destroyed after the test. */
    create: async (config: DockerSandboxConfig, input?: Parameters<SandboxProvider['create']>[0]): Promise<SandboxHandle> => {
      const handle = await dockerSandbox({ ...config, labels: { ...config.labels, ...labels } }).create(input)
      handles.push(handle)
      return handle
    },
    /** Destroy `handle` after the test too. */
    track: <T extends SandboxHandle>(handle: T): T => {
      handles.push(handle)
      return handle
    },
  }
}

/** The rejection of `promise` (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the promise to reject')
}

/** Collect an async iterable of strings. */
export async function collect(stream: AsyncIterable<string>): Promise<string> {
  let text = ''
  for await (const chunk of stream) text += chunk
  return text
}
