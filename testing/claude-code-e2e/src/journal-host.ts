/**
 * Host A of the journal takeover suite: a separate Node process (bundled with
 * `@testing/support/script-bundle`) that resumes the run's sandbox by id and starts a durable Claude Code
 * run in it, appending each chunk to the file-backed event log. The test kills
 * it with SIGKILL mid-run, so it never cleans up and never says goodbye; it
 * prints one line on stdout once the run is under way only to help debugging.
 * Input: one JSON argument, see `HostConfig`.
 */
import type { ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { fileStreamLog } from '@testing/support/file-stream-log'
import { providerFor, runDurably, type ProviderConfig } from './durable-host.js'

/** What the test passes on the command line. */
interface HostConfig {
  provider: ProviderConfig
  sandboxId: string
  logFile: string
  runId: string
  threadId: string
  prompt: string
  claude: ClaudeCodeOptions
}

const config = JSON.parse(process.argv[2] ?? '') as HostConfig
const handle = await providerFor(config.provider).resume({ id: config.sandboxId })
if (!handle) throw new Error(`journal-host: sandbox ${config.sandboxId} is gone`)
let count = 0
await runDurably({
  handle,
  log: fileStreamLog(config.logFile),
  runId: config.runId,
  threadId: config.threadId,
  prompt: config.prompt,
  claude: config.claude,
  attach: false,
  onChunk: (chunk) => process.stdout.write(`${++count} ${chunk.type}\n`),
})
process.stdout.write('host A finished the run (it should have been killed)\n')
