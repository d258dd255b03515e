/**
 * The single path from a zod schema to a `SandboxConfigError`: the first issue
 * becomes a message that names the dotted field and says what was expected.
 */
import type { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'

/**
 * Parse `input` with `schema` or throw {@link SandboxConfigError}.
 * @param prefix - Dotted name of the option object, e.g. `defineSandbox`.
 */
export function parseOptions<TSchema extends z.ZodType>(schema: TSchema, input: unknown, prefix: string): z.output<TSchema> {
  const result = schema.safeParse(input)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const field = [prefix, ...issue.path.map(String)].join('.')
  throw new SandboxConfigError(field, `Invalid option ${field}: ${issue.message}.`, { cause: result.error })
}
