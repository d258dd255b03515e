/**
 * Environment variables as the container providers (Docker, Daytona,
 * Cloudflare) take and store them: the rule a name and a value must meet, and
 * the shell text of the env files a job's shell sources. Owns only the text;
 * where the files live and who writes them is each provider's. Invariant: a
 * value reaches the process unchanged (single-quoted, never expanded).
 */
import { z } from 'zod'
import { shellQuote } from './quote.js'

/** What a variable name must look like: a portable shell identifier. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Validation of env names and values (provider config, create, exec, `env.set`):
 * names are portable shell identifiers, values hold no NUL. Parse with the
 * provider's option parser, so the error names the provider's field.
 */
export const envVarsSchema = z.record(
  z.string().regex(ENV_NAME, 'variable names must be letters, digits and "_", not starting with a digit (e.g. MY_VAR)'),
  z.string().refine((value) => !value.includes('\0'), 'values cannot contain NUL'),
)

/**
 * Shell text that exports `env`: what an `env.d` entry holds. Values are
 * single-quoted, so nothing in them is expanded.
 * @param env - names already checked with {@link envVarsSchema}.
 * @returns one `export NAME='value'` line per variable (empty for no variables).
 */
export function envFileText(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join('')
}

/**
 * A job's `.env` file: the export text of {@link envFileText} assigned to one
 * variable, `__tanstack_call_env`, which only the command's shell evaluates
 * (so the job wrapper itself never runs with the caller's variables).
 * @param env - the per-call variables, already checked.
 * @returns the file's text, one line.
 */
export function callEnvFileText(env: Readonly<Record<string, string>>): string {
  return `__tanstack_call_env=${shellQuote(envFileText(env))}\n`
}
