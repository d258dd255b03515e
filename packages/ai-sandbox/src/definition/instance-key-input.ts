/**
 * The input of `sandbox.destroy` and `sandbox.release` (the compound key, an
 * optional store and logger), its validation, and what `destroy` reports.
 * Invariant: a key is accepted only when it is one of the definition's own
 * (`sbx:<tenant>:<definition>:<provider>:<digest>`), so a stray string never
 * reaches a store or the provider.
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import { instanceStoreSchema, type SandboxInstanceStore } from './instance-store.js'

/** Input of `sandbox.destroy` and `sandbox.release`. */
export interface SandboxInstanceKeyInput {
  /** The compound key, from `sandbox.key({ threadId, runId, tenant? })`. */
  key: string
  /** The store that records the key's sandbox. Default: `sandbox.instances`. */
  instances?: SandboxInstanceStore
  /** The `sandbox` debug category logger. */
  logger?: InternalLogger
}

/**
 * What `sandbox.destroy` did: destroyed the recorded sandbox,
 * or found no record for the key in the store it consulted (`reason:
 * 'unknown-key'`; `message` says which store and how to name the right one).
 */
export type SandboxDestroyResult =
  | { readonly destroyed: true; readonly providerSandboxId: string }
  | { readonly destroyed: false; readonly reason: 'unknown-key'; readonly message: string }

/**
 * The zod schema of {@link SandboxInstanceKeyInput} for one definition.
 * @param keyParts - A key of the definition split on `:` (its definition and provider parts are compared).
 */
export const keyInputSchema = (keyParts: readonly string[]) =>
  z
    .object(
      {
        key: z
          .string({ error: 'expected the compound key of a sandbox: sandbox.key({ threadId, runId, tenant? })' })
          .refine((key) => {
            const parts = key.split(':')
            return parts.length === 5 && parts[0] === 'sbx' && parts[2] === keyParts[2] && parts[3] === keyParts[3] && /^[0-9a-f]{32}$/.test(parts[4]!)
          }, `expected a key of this definition (sbx:<tenant>:${keyParts[2]}:${keyParts[3]}:<digest>), as sandbox.key({ threadId, runId, tenant? }) returns`),
        instances: instanceStoreSchema.optional(),
        logger: z.custom<InternalLogger>((v) => typeof v === 'object' && v !== null, { message: 'expected a logger' }).optional(),
      },
      { error: 'expected { key }, e.g. sandbox.destroy({ key: sandbox.key({ threadId, runId }) })' },
    )
    .strict()

/** The `message` of an unknown-key result: which store was consulted, and how to name the right one. */
export function unknownKeyMessage(input: { key: string; storeGiven: boolean; bound: boolean; ensuredElsewhere: boolean }): string {
  const { key: sandboxKey, storeGiven, bound, ensuredElsewhere } = input
  const where = storeGiven ? 'the instance store passed to destroy' : bound ? 'the store given to defineSandbox({ instances })' : "this definition's in-memory instance store"
  const hint = storeGiven || bound ? 'It was destroyed already, or recorded in another store.' : `If it was ensured with another store (withSandbox(sandbox, { instances }), SandboxInstanceStoreCapability${ensuredElsewhere ? ', as runs of this process were' : ''}, or another process), bind that store with defineSandbox({ instances }) or pass sandbox.destroy({ key, instances }).`
  return `sandbox.destroy: no sandbox is recorded for key ${sandboxKey} in ${where}; nothing was destroyed. ${hint}`
}
