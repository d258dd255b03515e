/**
 * The `/runner` entry of `@tanstack/ai-sandbox-cloudflare`: what runs inside
 * the container in `colocated` mode (a Node program, not a Worker). The app's
 * runner module calls `runInContainerHarness` once; the Coordinator of
 * `createCloudflareSandboxAgent({ mode: 'colocated' })` launches it and keeps
 * its output (spec 000 "Edge / serverless execution").
 */
export { runInContainerHarness } from './runner/run-in-container.js'
export type { ContainerRunInfo, ContainerRunResult, RunInContainerHarnessOptions } from './runner/run-in-container.js'
export { CONTAINER_RUN_REQUEST_VERSION, containerRunRequestSchema } from './runner/request.js'
export type { ContainerRunRequest } from './runner/request.js'
