/**
 * Preloaded by `pnpm start` (`node --import ./src/early-signals.mjs --import tsx src/main.ts`):
 * tsx and main.ts take a few hundred ms to load, and a Ctrl-C in that window
 * would kill the process without a word. This queues such signals instead.
 * Plain JavaScript because it runs before tsx exists. main.ts takes over: it
 * removes `remember` and replays `queue` through its own handler.
 */
const queue = []
const remember = (signal) => queue.push({ signal, at: Date.now() })
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, remember)
globalThis[Symbol.for('@example/quickstart.early-signals')] = { queue, remember }
