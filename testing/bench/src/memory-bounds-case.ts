/**
 * One case of benchmark (j), run in a child Node process of its own (forked
 * by `memory-bounds.ts`) so its peak RSS is its own: it does the case, then
 * sends `{ outcome, maxRssBytes }` to the parent (maxRSS of
 * `process.resourceUsage()`, which Node reports in KiB). The sandbox root is
 * argv[3]; every sandbox is destroyed before the answer.
 */
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { DEFAULT_MAX_LINE_BYTES, SandboxError, spawnNdjson, type SandboxHandle } from '@tanstack/ai-sandbox'
// Internal to withSandbox (not exported): the per-run file events and diffs a chat() run computes.
import { startRunFileEvents } from '../../../packages/ai-sandbox/src/watch/run-file-events.js'

const [, , name = '', root = ''] = process.argv
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** What one case did, for the table. */
async function runCase(handle: SandboxHandle): Promise<string> {
  switch (name) {
    case 'baseline':
      return 'nothing (the floor: Node, tsx and the packages loaded)'
    case 'exec 200 MB of output': {
      try {
        const result = await handle.process.exec('yes tsbx-exec-flood | head -c 200000000')
        return `returned ${result.stdout.length} bytes`
      } catch (error) {
        return SandboxError.isInstance(error) ? `${error.name} ${error.reason}` : String(error)
      }
    }
    case 'unread `yes` spawn for 5 s': {
      const job = await handle.process.spawn('yes tsbx-unread')
      await sleep(5000)
      await job.kill()
      let unread = 0
      for await (const chunk of job.stdout) unread += chunk.length
      return `${unread} bytes were buffered when killed`
    }
    case '300 MB NDJSON line through spawnNdjson': {
      try {
        for await (const _ of spawnNdjson(handle, "head -c 300000000 /dev/zero | tr '\\0' a", { maxLineBytes: DEFAULT_MAX_LINE_BYTES })) void _
        return 'read the whole line'
      } catch (error) {
        return SandboxError.isInstance(error) ? `${error.name} ${error.reason}` : String(error)
      }
    }
    case '2 GB sparse file in a run diff': {
      const files = await startRunFileEvents({ handle, hooks: {} })
      await handle.process.exec('truncate -s 2G big.log')
      await files.flush()
      const changes = await files.changes()
      await files.stop({ flush: false })
      const big = changes.find((change) => change.path.endsWith('/big.log'))
      return big ? `file.changed big.log: tooLarge=${String(big.tooLarge ?? false)}, diff ${big.diff.length} chars` : 'no change reported'
    }
    default:
      throw new Error(`unknown memory-bounds case ${JSON.stringify(name)}`)
  }
}

const handle = await localProcessSandbox({ root }).create()
let outcome: string
try {
  outcome = await runCase(handle)
} finally {
  await handle.destroy()
}
process.send!({ outcome, maxRssBytes: process.resourceUsage().maxRSS * 1024 })
