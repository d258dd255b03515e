// Middleware: `withSandbox`, the chat middleware that gives a run its sandbox,
// its options type and the cancel poll default. The capability tokens it
// provides live in ../capabilities. Not exported: the run's phases and state
// (run-setup, run-turn, run-end, run-state, …), durability bookkeeping and the
// redacting logger, which are withSandbox's own.
export { withSandbox } from './with-sandbox.js'
export type { SandboxMiddlewareOptions } from './with-sandbox.js'
export { DEFAULT_CANCEL_POLL_MS } from './durability.js'
