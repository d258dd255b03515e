/**
 * `pnpm --filter @example/sandbox-web dev`: the server. Opens the SQLite
 * stores in the data folder (runs, locks, sandboxes, and the threads'
 * portable-snapshot checkpoints), creates the sample repository, starts the
 * offline model (unless `ANTHROPIC_API_KEY` is set), schedules the reaper and
 * serves the routes and the built browser app on 127.0.0.1. Prints
 * `listening http://127.0.0.1:<port>` once it serves, and on the next line
 * the address to open, with the launch's access token:
 * `open http://127.0.0.1:<port>/?token=<token>`.
 * Invariant: a SIGTERM or Ctrl-C closes the server and the stores but never
 * cancels a run: every live run is aborted without a cancel, so withSandbox
 * detaches it (records `detachedSince` + `sandboxKey`), and the next process
 * takes it over when a tab comes back, or its reaper closes it out. From the
 * signal on, the API answers 503 and kept-alive connections are closed, so no
 * tab reattaches to (and no run is taken over by) the process that is going.
 */
import { chmod, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { createHarnessSecretRedactor } from '@tanstack/ai-sandbox'
import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { clientKey } from './access.js'
import { createAgent } from './agent.js'
import { readConfig, type ServerConfig } from './config.js'
import { offlineModelKey, startOfflineModel } from './model.js'
import { promptStore } from './prompts.js'
import { scheduleReaper } from './reaper.js'
import { createApp } from './routes.js'
import { runLimiter } from './run-limit.js'
import { runSandboxStore } from './run-sandboxes.js'
import { ensureSampleRepo } from './sample-repo.js'
import { stoppedChanges } from './stopped-changes.js'

let config: ServerConfig
try {
  config = readConfig()
} catch (error) {
  console.error(`sandbox-web: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
// The data folder holds every run's prompt, transcript and sandbox: only the server's user may enter it (0700, also
// when it existed wider), so another user of the machine reads none of it.
await mkdir(config.dataDir, { recursive: true, mode: 0o700 })
await chmod(config.dataDir, 0o700)
const stores = createSqliteStores({ path: join(config.dataDir, 'runs.db'), leaseMs: config.leaseMs })
const repoPath = join(config.dataDir, 'sample-repo')
await ensureSampleRepo(repoPath)
const modelKey = config.apiKey ? undefined : await offlineModelKey(config.dataDir)
const model = modelKey === undefined ? undefined : await startOfflineModel({ stepSeconds: config.stepSeconds, host: config.provider === 'docker' ? '0.0.0.0' : '127.0.0.1', port: config.modelPort, apiKey: modelKey })
const runSandboxes = runSandboxStore(join(config.dataDir, 'run-sandboxes'))
const agent = createAgent(config, stores, repoPath, model && modelKey ? { port: model.port, apiKey: modelKey } : undefined, runSandboxes)
const prompts = promptStore(join(config.dataDir, 'prompts'))
const reaper = scheduleReaper(config, stores, agent, prompts)
// A run counts against the caps until its record leaves `running`. Runs a previous process left running (detached,
// their agents still working) count too, against this launch's token: the one client there is.
const limiter = runLimiter({ perClient: config.maxRunsPerClient, total: config.maxRunsTotal }, async (runId) => {
  const record = await stores.runs.get(runId)
  return record === null || record.status === 'running'
})
for (const { runId } of await prompts.recent(200)) {
  if ((await stores.runs.get(runId))?.status === 'running') limiter.track(clientKey(config.accessToken), runId)
}
// A stopped run's diff leaves the sandbox without passing withSandbox's scrubber: take the key the agent holds out of it.
const redact = createHarnessSecretRedactor({ forwardedHostEnv: ['ANTHROPIC_API_KEY'], hostEnv: { ANTHROPIC_API_KEY: config.apiKey ?? modelKey } })
const stopped = stoppedChanges({ dir: join(config.dataDir, 'stopped-changes'), provider: agent.sandbox.provider, instances: stores.instances, redact })
let stopping = false
let port = config.port
const app = createApp({ config, stores, agent, prompts, runSandboxes, reaper, limiter, stopped, port: () => port, stopping: () => stopping })

const server = serve({ fetch: app.fetch, port: config.port, hostname: '127.0.0.1' }, (info) => {
  port = info.port
  // One write, so a reader of the output never sees the first line without the second.
  console.log(
    `listening http://127.0.0.1:${info.port} (${config.apiKey ? 'live: the real API' : 'offline: the local mock model'}, ${config.provider} sandboxes, data in ${config.dataDir})\n` +
      `open http://127.0.0.1:${info.port}/?token=${config.accessToken} (the API answers only with this launch's token; anyone who can read this output can use the app)`,
  )
})

async function shutdown(): Promise<void> {
  if (stopping) return
  stopping = true
  reaper.stop()
  server.close()
  // Kept-alive connections would otherwise still reach this process (a tab's reattach, taking a run over here).
  if ('closeIdleConnections' in server) server.closeIdleConnections()
  setTimeout(() => process.exit(0), 5000).unref()
  // Detach every run this process drives (an abort with no cancel): withSandbox records detachedSince + sandboxKey and
  // keeps the sandbox, so a tab that comes back takes the run over, and the reaper finds it if none does.
  for (const controller of agent.driving.values()) controller.abort()
  for (let waited = 0; agent.driving.size > 0 && waited < 3000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
  if ('closeAllConnections' in server) server.closeAllConnections() // the detached runs' streams: their tabs reconnect to the next server
  await (model?.stop() ?? Promise.resolve()).catch(() => undefined)
  stores.close()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown())
process.on('SIGINT', () => void shutdown())
