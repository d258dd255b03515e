// Middleware: withSandbox (the capability tokens it provides are in ../capabilities).
export { withSandbox } from './with-sandbox.js'
export type { SandboxMiddlewareOptions } from './with-sandbox.js'
export { DEFAULT_CANCEL_POLL_MS } from './durability.js'
