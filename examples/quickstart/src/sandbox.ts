/**
 * The quickstart's sandbox definition: a sandbox of the run's provider
 * (`sandbox-target.ts`) whose workspace clones the repository (`gitSource`)
 * and runs the setup steps, with the API key as a workspace secret in live
 * mode. Owns nothing at runtime: `defineSandbox` is lazy and `withSandbox`
 * creates the sandbox when `chat()` starts.
 * Invariant: the key never appears in the definition's hash or in logs, only
 * in the secret registry (`createSecrets`).
 */
import { createSecrets, defineSandbox, defineWorkspace, gitSource, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import type { RepoSource } from './repo.js'
import type { SandboxTarget } from './sandbox-target.js'

/** Inputs of {@link defineDemoSandbox}. */
export interface DemoSandboxInput {
  /** The provider, and the repository's URL as the sandbox sees it. */
  readonly target: SandboxTarget
  readonly repo: RepoSource
  /** The Anthropic key for live mode; `undefined` offline. */
  readonly apiKey: string | undefined
  /** Called once the sandbox is created, cloned and set up (the `onReady` hook). Must not throw. */
  readonly onReady: (handle: SandboxHandle) => Promise<void>
}

/** A definition plus what the demo needs to find and destroy its sandbox. */
export interface DemoSandbox {
  readonly definition: SandboxDefinition
  readonly threadId: string
  /** The setup steps, for the progress line. */
  readonly setup: readonly string[]
  /** Destroy the thread's sandbox (idempotent). */
  destroy: () => Promise<void>
}

/**
 * Define the sandbox for one demo run.
 *
 * @returns The lazy definition (`reuse: 'thread'`, so it outlives the run until `destroy()`), its thread and setup.
 * @throws SandboxConfigError when the repository URL is not a git URL.
 * @example
 * ```ts
 * const box = defineDemoSandbox({ target, repo, apiKey: undefined, onReady: async (h) => void (handle = h) })
 * chat({ adapter, threadId: box.threadId, messages, middleware: [withSandbox(box.definition)] })
 * ```
 */
export function defineDemoSandbox(input: DemoSandboxInput): DemoSandbox {
  const setup = [
    'git config user.name "Quickstart agent" && git config user.email agent@example.com', // lets the agent commit
    ...(input.repo.sample ? ['node --test'] : []), // the sample's tests pass before the agent starts
  ]
  const secrets = input.apiKey ? createSecrets({ ANTHROPIC_API_KEY: input.apiKey }) : undefined
  const definition = defineSandbox({
    id: 'quickstart',
    provider: input.target.provider,
    workspace: defineWorkspace({ source: gitSource({ url: input.target.repoUrl }), setup, ...(secrets ? { secrets } : {}) }),
    // Kept after the run so the diff can be read through the handle. No after-setup snapshot (Docker
    // would take one): the sample is new every run, so it could never be reused, and it would outlive the run.
    lifecycle: { reuse: 'thread', snapshot: 'none' },
    hooks: { onReady: input.onReady },
  })
  const threadId = `quickstart-${process.pid}`
  return { definition, threadId, setup, destroy: async () => {
      await definition.destroy({ key: definition.key({ threadId, runId: '' }) })
    } }
}
