/**
 * The single path from a zod schema to a `SandboxConfigError`: the first issue
 * becomes a message that names the dotted field and says what was expected.
 */
import type { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'

/**
 * Parse `input` with `schema` or throw {@link SandboxConfigError} whose
 * `field` is the dotted path of the first problem. Providers use it to
 * validate their config objects the same way core does.
 * @param prefix - Dotted name of the option object, e.g. `dockerSandbox`.
 * @returns The parsed value.
 * @throws SandboxConfigError naming the field.
 */
export function parseOptions<TSchema extends z.ZodType>(schema: TSchema, input: unknown, prefix: string): z.output<TSchema> {
  const result = schema.safeParse(input)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  // An unknown key is reported on its object; name the key itself.
  const extra = issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : []
  const field = [prefix, ...issue.path.map(String), ...extra].join('.')
  throw new SandboxConfigError(field, `Invalid option ${field}: ${issue.message}.`, { cause: result.error })
}
