/**
 * The option fields every harness adapter takes the same way (`cwd`, `env`,
 * `extraArgs`, `timeoutMs`, `exitGraceMs`, `maxLineBytes`), as zod schemas an adapter spreads into its own
 * strict options schema, so the rules and the messages are one set.
 */
import { z } from 'zod'
import { isSecretRef, type SecretRef } from '../contracts/secret-ref.js'

/** The options every harness adapter takes the same way; each adapter's options interface extends it. */
export interface HarnessCommonOptions {
  /** Working directory inside the workspace (relative, or under `/workspace`). Default: the workspace root. */
  cwd?: string
  /** Extra environment for the CLI. Values may be secret references from `createSecrets()`. */
  env?: Record<string, string | SecretRef>
  /** Extra CLI flags, appended verbatim. */
  extraArgs?: string[]
  /** Stop the run after this many ms: the CLI's process tree is stopped and the run ends with `RUN_ERROR` `timeout`. Default: no limit. */
  timeoutMs?: number
  /** How long the CLI may take to exit by itself after its final event before its process tree is stopped, in ms. Default 3000 (`DEFAULT_EXIT_GRACE_MS`). */
  exitGraceMs?: number
  /**
   * The longest line of CLI output the run reads, in UTF-8 bytes; a longer one ends the run with `RUN_ERROR` `line_too_long`
   * and stops the CLI. At least 1024. Default 32 MiB (`DEFAULT_MAX_LINE_BYTES`).
   */
  maxLineBytes?: number
}

/**
 * Zod fields for an adapter's options schema:
 * - `cwd`: a working directory inside the workspace, relative or under `/workspace`, without `..`;
 * - `env`: environment variable names (letters, digits, `_`) to strings or secret references from `createSecrets()`;
 * - `extraArgs`: CLI flags appended verbatim;
 * - `timeoutMs`: a positive whole number of ms;
 * - `exitGraceMs`: a whole number of ms, 0 or more (how long the CLI may take to exit after its final event; see `DEFAULT_EXIT_GRACE_MS`);
 * - `maxLineBytes`: a whole number of bytes, at least 1024 (the longest CLI output line read; see `DEFAULT_MAX_LINE_BYTES`).
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
  timeoutMs: z.number().int('expected a whole number of ms').positive('expected a positive number of ms, e.g. 600000 for 10 minutes').optional(),
  exitGraceMs: z.number().int('expected a whole number of ms').nonnegative('expected 0 or more ms (default 3000)').optional(),
  maxLineBytes: z.number().int('expected a whole number of bytes').min(1024, 'expected at least 1024 bytes').optional(),
}

/**
 * Advice for `parseOptions` when an adapter's options get a credential key
 * (`apiKey`, `authToken`, ...): adapters take none, because the CLI reads its
 * credential from its own environment. The message names the variables the
 * adapter forwards and the three ways to set them.
 * @param adapter - The factory's name, e.g. `claudeCodeText`.
 * @param variables - The CLI's credential variables, the usual one first (e.g. `['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN']`).
 * @returns `{ unknownKeys }` for the fourth argument of `parseOptions`.
 * @example
 * ```ts
 * parseOptions(optionsSchema, options, 'codexText.options', credentialOptionAdvice('codexText', ['OPENAI_API_KEY']))
 * ```
 */
export function credentialOptionAdvice(adapter: string, variables: readonly [string, ...string[]]): { readonly unknownKeys: Readonly<Record<string, string>> } {
  const [first] = variables
  const message =
    `${adapter} takes no credential option: the CLI reads ${variables.join(' or ')} from its environment. ` +
    `Set ${first} as a workspace secret (defineWorkspace({ secrets: createSecrets({ ${first}: … }) })), ` +
    `in the adapter's env option (env: { ${first}: secrets.${first} }), or in the host's environment, which the adapter forwards when the workspace does not set it.`
  const keys = ['apiKey', 'api_key', 'apikey', 'key', 'token', 'authToken', 'accessToken', 'credentials', 'auth']
  return { unknownKeys: Object.fromEntries(keys.map((key) => [key, message])) }
}
