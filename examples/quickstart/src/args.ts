/**
 * Command-line flags of `pnpm demo`, parsed with `node:util` `parseArgs`.
 * Pure apart from reading argv: it validates shapes only; whether a provider
 * exists or a key is set is checked by `runDemo`.
 */
import { parseArgs } from 'node:util'
import type { DemoOptions } from './demo.js'
import { DemoError } from './errors.js'

/** The usage text printed by `--help`. */
export const USAGE = `Usage: pnpm demo [-- options]

Claude Code edits a git repository inside a sandbox while you watch.
Offline by default: a local mock model (aimock) plays a scripted session.

Options:
  --repo <path|url>    work on this git repository instead of a generated sample
                       (offline mode needs math.js and math.test.js in it)
  --provider <name>    sandbox provider: local-process (default, no isolation) or
                       docker (a container; needs a Docker engine and the image)
  --image <name>       image of the docker sandbox
                       (default tanstack-sandbox-debian:bookworm, built by scripts/docker/images.sh)
  --live               use the real Anthropic API (needs ANTHROPIC_API_KEY)
  --task <text>        what to ask Claude Code (with --live)
  --model <id>         model for Claude Code (default claude-sonnet-4-5)
  -h, --help           show this help`

/** Parsed flags: the options for `runDemo`, or a request for help. */
export type ParsedArgs = { help: true } | { help: false; options: DemoOptions }

/**
 * Parse argv (without the node and script entries).
 * @throws DemoError `usage` for an unknown flag, a missing value, a stray positional or a malformed `--model`.
 * @example
 * ```ts
 * parseDemoArgs(['--live', '--repo', '../app']) // { help: false, options: { live: true, repo: '../app' } }
 * ```
 */
export function parseDemoArgs(argv: readonly string[]): ParsedArgs {
  let values: Record<string, string | boolean | undefined>
  try {
    ;({ values } = parseArgs({
      args: [...argv].filter((arg) => arg !== '--'), // pnpm passes a literal `--` through
      options: {
        repo: { type: 'string' },
        provider: { type: 'string' },
        image: { type: 'string' },
        live: { type: 'boolean' },
        task: { type: 'string' },
        model: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }))
  } catch (cause) {
    throw new DemoError('usage', `${(cause as Error).message}\n\n${USAGE}`, { cause })
  }
  if (values.help) return { help: true }
  const options: DemoOptions = {}
  if (typeof values.repo === 'string') options.repo = values.repo
  if (typeof values.provider === 'string') options.provider = values.provider
  if (typeof values.image === 'string') options.image = values.image
  if (values.live === true) options.live = true
  if (typeof values.task === 'string') options.task = values.task
  if (typeof values.model === 'string') options.model = checkModel(values.model)
  return { help: false, options }
}

/** A Claude Code model alias or id; the same rule `claudeCodeText` applies, checked here so a bad flag exits 2. */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:@/[\]-]*$/

function checkModel(model: string): string {
  if (MODEL_ID.test(model)) return model
  throw new DemoError(
    'usage',
    `--model ${JSON.stringify(model)}: not a model id. Use a Claude Code alias (sonnet, opus, haiku) or a full id such as claude-sonnet-4-5: ` +
      'a letter or digit, then letters, digits and . _ : @ / [ ] - (no spaces).',
  )
}
