/**
 * The option fields every harness adapter takes the same way (`cwd`, `env`,
 * `extraArgs`, `timeoutMs`), as zod schemas an adapter spreads into its own
 * strict options schema, so the rules and the messages are one set.
 */
import { z } from 'zod'
import { isSecretRef, type SecretRef } from '../workspace/secrets.js'

/**
 * Zod fields for an adapter's options schema:
 * - `cwd`: a working directory inside the workspace, relative or under `/workspace`, without `..`;
 * - `env`: environment variable names (letters, digits, `_`) to strings or secret references from `createSecrets()`;
 * - `extraArgs`: CLI flags appended verbatim;
 * - `timeoutMs`: a positive whole number of ms.
 * All are optional.
 *
 * @example
 * ```ts
 * const optionsSchema = z.object({ executable: z.string().min(1).optional(), ...harnessOptionFields }).strict()
 * ```
 */
export const harnessOptionFields = {
  cwd: z
    .string()
    .min(1)
    .refine((p) => (!p.startsWith('/') || p === '/workspace' || p.startsWith('/workspace/')) && !p.split('/').includes('..'), 'expected a path inside the workspace: relative, or under /workspace, without ".."')
    .optional(),
  env: z
    .record(
      z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'),
      z.union([z.string(), z.custom<SecretRef>(isSecretRef)], { error: 'expected a string or a secret reference from createSecrets()' }),
    )
    .optional(),
  extraArgs: z.array(z.string()).optional(),
  timeoutMs: z.number().int().positive().optional(),
}
