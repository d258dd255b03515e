/**
 * The compound sandbox key: which sandbox a run gets. Two runs share a sandbox
 * exactly when tenant, definition, provider (and its fingerprint), workspace
 * hash and thread match, and, for `reuse: 'none'`, the run too.
 * Source: spec 000, "Lifecycle & resume".
 */
import { createHash } from 'node:crypto'

/** Inputs of {@link computeSandboxKey}. */
export interface SandboxKeyInput {
  /** `defineSandbox({ id })`. */
  definitionId: string
  /** `provider.name`. */
  provider: string
  /** `provider.fingerprint`, when the provider has one. */
  providerFingerprint?: string
  /** `workspace.hash` (secret values excluded). */
  workspaceHash: string
  threadId: string
  /** Required when `reuse` is `'none'`. */
  runId?: string
  /** Default `'thread'`. */
  reuse?: 'thread' | 'none'
  /** Tenant from the run context; runs of different tenants never share a sandbox. */
  tenant?: string
}

/**
 * Compute the compound key `sbx:<tenant>:<definition>:<provider>:<digest>`.
 * The digest covers the provider fingerprint, workspace hash, thread and (for
 * `reuse: 'none'`) run, so the key is short, stable and safe in any store.
 *
 * @example
 * ```ts
 * computeSandboxKey({ definitionId: 'repo-agent', provider: 'docker', workspaceHash: ws.hash, threadId: 't1' })
 * ```
 */
export function computeSandboxKey(input: SandboxKeyInput): string {
  const reuse = input.reuse ?? 'thread'
  const parts = [
    `fp=${input.providerFingerprint ?? ''}`,
    `ws=${input.workspaceHash}`,
    `thread=${input.threadId}`,
    reuse === 'none' ? `run=${input.runId ?? ''}` : 'run=*',
  ]
  const digest = createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32)
  return ['sbx', encode(input.tenant ?? '-'), encode(input.definitionId), encode(input.provider), digest].join(':')
}

function encode(part: string): string {
  return encodeURIComponent(part).replace(/:/g, '%3A')
}
