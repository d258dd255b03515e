/**
 * `pnpm demo`: the main job. Claude Code edits a git repository inside a
 * local-process sandbox while the terminal shows the sandbox coming up, the
 * agent's streamed text, its tool calls and results, and a closing summary
 * with the diff. Exit 0 on success; on failure the error's message and a
 * non-zero code (2 for bad flags, 130 on Ctrl-C, 1 otherwise).
 */
import { SandboxError } from '@tanstack/ai-sandbox'
import { parseDemoArgs, USAGE } from './args.js'
import { runDemo } from './demo.js'
import { DemoError } from './errors.js'
import { createTerminalReporter, printSummary } from './terminal.js'

async function main(): Promise<number> {
  const parsed = parseDemoArgs(process.argv.slice(2))
  if (parsed.help) {
    console.log(USAGE)
    return 0
  }
  // First signal: abort the run and clean up. A second one exits at once.
  const interrupt = new AbortController()
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => (interrupt.signal.aborted ? process.exit(130) : interrupt.abort(new DemoError('aborted', `Received ${signal}.`))))
  }
  const result = await runDemo({ ...parsed.options, reporter: createTerminalReporter(), signal: interrupt.signal })
  printSummary(result)
  return 0
}

try {
  process.exitCode = await main()
} catch (error) {
  const reason = SandboxError.isInstance(error) ? error.reason : undefined
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`\n✗ demo failed${reason ? ` (${reason})` : ''}: ${message}\n`)
  process.exitCode = reason === 'usage' || reason === 'unsupported-provider' || reason === 'missing-api-key' ? 2 : reason === 'aborted' ? 130 : 1
}
