/**
 * `pnpm --filter @example/sandbox-web dev`: the server. Opens the SQLite
 * stores in the data folder, creates the sample repository, starts the
 * offline model (unless `ANTHROPIC_API_KEY` is set), schedules the reaper and
 * serves the routes and the built browser app on 127.0.0.1. Prints
 * `listening http://127.0.0.1:<port>` once it serves.
 * Invariant: a SIGTERM or Ctrl-C closes the server and the stores but never
 * cancels a run: a live run is detached, and the next process (or its
 * reaper) takes it over from the SQLite file.
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { createAgent } from './agent.js'
import { readConfig } from './config.js'
import { startOfflineModel } from './model.js'
import { promptStore } from './prompts.js'
import { scheduleReaper } from './reaper.js'
import { createApp } from './routes.js'
import { ensureSampleRepo } from './sample-repo.js'

const config = readConfig()
await mkdir(config.dataDir, { recursive: true })
const stores = createSqliteStores({ path: join(config.dataDir, 'runs.db'), leaseMs: config.leaseMs })
const repoPath = join(config.dataDir, 'sample-repo')
await ensureSampleRepo(repoPath)
const model = config.apiKey ? undefined : await startOfflineModel(config.stepSeconds, config.provider === 'docker' ? '0.0.0.0' : '127.0.0.1', config.modelPort)
const agent = createAgent(config, stores, repoPath, model?.port)
const prompts = promptStore(join(config.dataDir, 'prompts'))
const reaper = scheduleReaper(config, stores, agent, prompts)
const app = createApp({ config, stores, agent, prompts, reaper })

const server = serve({ fetch: app.fetch, port: config.port, hostname: '127.0.0.1' }, (info) => {
  console.log(`listening http://127.0.0.1:${info.port} (${config.apiKey ? 'live: the real API' : 'offline: the local mock model'}, ${config.provider} sandboxes, data in ${config.dataDir})`)
})

function shutdown(): void {
  reaper.stop()
  server.close()
  setTimeout(() => process.exit(0), 2000).unref()
  void (model?.stop() ?? Promise.resolve()).finally(() => {
    stores.close()
    process.exit(0)
  })
}
process.on('SIGTERM', shutdown)
process.on('SIGINT', shutdown)
