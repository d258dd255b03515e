/**
 * The compound sandbox key: which sandbox a run gets. Two runs share a sandbox
 * exactly when tenant, definition, provider (and its fingerprint), workspace
 * hash and thread match, and, for `reuse: 'none'`, the run too.
 * Source: spec 000, "Lifecycle & resume".
 */
import { createHash } from 'node:crypto'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'

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

const text = z.string()
const keyInputSchema = z
  .object({
    definitionId: text.min(1, 'expected the definition id (defineSandbox({ id }))'),
    provider: text.min(1, 'expected the provider name (provider.name)'),
    providerFingerprint: text.optional(),
    workspaceHash: text.min(1, 'expected the workspace hash (workspace.hash)'),
    threadId: text,
    runId: text.optional(),
    reuse: z.enum(['thread', 'none']).optional(),
    tenant: text.optional(),
  })
  .strict()

/** The key component for "no tenant"; a tenant literally named `-` is written `%2D`, so the two never meet. */
const NO_TENANT = '-'

/**
 * Compute the compound key `sbx:<tenant>:<definition>:<provider>:<digest>`.
 * The digest covers the provider fingerprint, workspace hash, thread and (for
 * `reuse: 'none'`) run, so the key is short, stable and safe in any store.
 * Components are URI-encoded (`:` too); `-` stands for no tenant.
 *
 * @throws SandboxConfigError naming the field (`computeSandboxKey.definitionId`, …) for a missing or mistyped input.
 * @example
 * ```ts
 * computeSandboxKey({ definitionId: 'repo-agent', provider: 'docker', workspaceHash: ws.hash, threadId: 't1' })
 * ```
 */
export function computeSandboxKey(input: SandboxKeyInput): string {
  parseOptions(keyInputSchema, input, 'computeSandboxKey')
  const reuse = input.reuse ?? 'thread'
  const parts = [
    `fp=${input.providerFingerprint ?? ''}`,
    `ws=${input.workspaceHash}`,
    `thread=${input.threadId}`,
    reuse === 'none' ? `run=${input.runId ?? ''}` : 'run=*',
  ]
  const digest = createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32)
  const tenant = input.tenant === undefined ? NO_TENANT : input.tenant === NO_TENANT ? '%2D' : encode(input.tenant)
  return ['sbx', tenant, encode(input.definitionId), encode(input.provider), digest].join(':')
}

function encode(part: string): string {
  return encodeURIComponent(part).replace(/:/g, '%3A')
}
