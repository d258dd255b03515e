// The one workerd module the test Workers import, declared as far as they use it
// (tsc runs in Node, where `cloudflare:workers` does not exist).
declare module 'cloudflare:workers' {
  export abstract class WorkerEntrypoint<Env = unknown> {
    protected readonly env: Env
    protected readonly ctx: { waitUntil: (promise: Promise<unknown>) => void }
    constructor(ctx: unknown, env: Env)
  }
  export abstract class DurableObject<Env = unknown> {
    protected readonly env: Env
    protected readonly ctx: {
      waitUntil: (promise: Promise<unknown>) => void
      storage: { sql: { exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] } }; transactionSync<T>(fn: () => T): T }
    }
    constructor(ctx: unknown, env: Env)
    fetch?(request: Request): Promise<Response>
  }
}
