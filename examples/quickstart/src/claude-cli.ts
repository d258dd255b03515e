/**
 * Finds the Claude Code native binary that `@anthropic-ai/claude-code`
 * installs (`bin/claude.exe`, placed there by the package's postinstall).
 * It only resolves and checks the path; it never downloads or installs.
 * With the local-process provider a host path is also a path inside the sandbox.
 */
import { accessSync, constants } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { DemoError } from './errors.js'

/**
 * Resolve the `claude` binary shipped by the `@anthropic-ai/claude-code` dependency.
 *
 * @returns The absolute path of `bin/claude.exe`.
 * @throws DemoError `cli-missing` when the package or its native binary is absent or not executable.
 * @example
 * ```ts
 * const executable = resolveClaudeExecutable()
 * claudeCodeText('claude-sonnet-4-5', { executable })
 * ```
 */
export function resolveClaudeExecutable(): string {
  const require = createRequire(import.meta.url)
  let packageJson: string
  try {
    packageJson = require.resolve('@anthropic-ai/claude-code/package.json')
  } catch (cause) {
    throw new DemoError('cli-missing', 'The @anthropic-ai/claude-code package is not installed. Run `pnpm install` at the repository root.', { cause })
  }
  const executable = join(dirname(packageJson), 'bin', 'claude.exe')
  try {
    accessSync(executable, constants.X_OK)
  } catch (cause) {
    throw new DemoError(
      'cli-missing',
      `The Claude Code binary ${executable} is missing or not executable. Its postinstall script places it there: ` +
        'run `pnpm install` at the repository root (with install scripts allowed for @anthropic-ai/claude-code).',
      { cause },
    )
  }
  return executable
}
