// The one workerd module the test Worker imports, declared as far as it uses it
// (tsc runs in Node, where `cloudflare:workers` does not exist).
declare module 'cloudflare:workers' {
  export abstract class WorkerEntrypoint<Env = unknown> {
    protected readonly env: Env
    protected readonly ctx: { waitUntil: (promise: Promise<unknown>) => void }
    constructor(ctx: unknown, env: Env)
  }
}
