/**
 * `pnpm demo`: the main job. Claude Code edits a git repository inside a
 * sandbox (local-process, or a container with --provider docker) while the
 * terminal shows the sandbox coming up, the agent's streamed text, its tool
 * calls and results, and a closing summary with the diff. Exit 0 on success;
 * on failure the error's message and a non-zero code (2 for bad flags, 130 on
 * Ctrl-C, 1 otherwise).
 * Invariant: one Ctrl-C always cleans up. Handlers are in place before the demo's
 * modules load (they are imported dynamically; early-signals.mjs covers tsx's own
 * start-up), a repeat within REPEAT_WINDOW_MS is the same keypress relayed again
 * and is ignored, and only a later one exits without cleanup, saying what is left.
 */

export {} // a module (it uses top-level await) whose imports are all dynamic, see above

/** What early-signals.mjs leaves on `globalThis`. */
interface EarlySignals {
  readonly queue: { signal: NodeJS.Signals; at: number }[]
  readonly remember: (signal: NodeJS.Signals) => void
}

/** A second signal sooner than this is a relay of the first (a wrapper, pnpm), not a second Ctrl-C. */
const REPEAT_WINDOW_MS = 1000

const interrupt = new AbortController()
let interruptedAt = 0
let tempDir: string | undefined
/** `--provider docker`, and `runDemo` has not settled yet: a forced exit may leave the run's container. */
let dockerRun = false
let settled = false
/** Set once the demo's modules are loaded; before that nothing exists to leave behind. */
let describeLeftovers: ((temp: string | undefined, options: { docker?: boolean }) => string) | undefined

/** Handle a signal received at `at` (ms since the epoch). */
function onSignal(signal: NodeJS.Signals, at = Date.now()): void {
  const name = signal === 'SIGINT' ? 'Ctrl-C' : signal
  if (!interrupt.signal.aborted) {
    interruptedAt = at
    interrupt.abort(new DOMException(`Received ${signal}.`, 'AbortError')) // first, so the progress line stops
    process.stderr.write(`\n■ ${name}: stopping the run and cleaning up (${name} again to exit at once, without cleanup)\n`)
    return
  }
  if (at - interruptedAt < REPEAT_WINDOW_MS) return
  process.stderr.write(`\n✗ ${name} again: exiting before cleanup finished.\n${describeLeftovers?.(tempDir, { docker: dockerRun && !settled }) ?? '  Nothing had been created yet.'}\n`)
  process.exit(130)
}
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
for (const signal of SIGNALS) process.on(signal, () => onSignal(signal))
// Take over from early-signals.mjs (absent when main.ts is started some other way).
const early = (globalThis as { [key: symbol]: EarlySignals | undefined })[Symbol.for('@example/quickstart.early-signals')]
if (early) {
  for (const signal of SIGNALS) process.off(signal, early.remember)
  for (const { signal, at } of early.queue.splice(0)) onSignal(signal, at)
}

async function main(): Promise<number> {
  const [{ parseDemoArgs, USAGE }, { runDemo }, { createTerminalReporter, printSummary }, leftovers] = await Promise.all([
    import('./args.js'),
    import('./demo.js'),
    import('./terminal.js'),
    import('./leftovers.js'),
  ])
  describeLeftovers = leftovers.describeLeftovers
  const parsed = parseDemoArgs(process.argv.slice(2))
  if (parsed.help) {
    console.log(USAGE)
    return 0
  }
  dockerRun = parsed.options.provider === 'docker'
  const reporter = { ...createTerminalReporter(process.stdout, interrupt.signal), tempCreated: (_at: number, path: string) => void (tempDir = path) }
  const result = await runDemo({ ...parsed.options, reporter, signal: interrupt.signal }).finally(() => (settled = true))
  printSummary(result)
  return 0
}

try {
  process.exitCode = await main()
} catch (error) {
  const { SandboxError } = await import('@tanstack/ai-sandbox')
  const reason = SandboxError.isInstance(error) ? error.reason : undefined
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`\n✗ demo failed${reason ? ` (${reason})` : ''}: ${message}\n`)
  process.exitCode = reason === 'usage' || reason === 'unsupported-provider' || reason === 'missing-api-key' ? 2 : reason === 'aborted' ? 130 : 1
}
