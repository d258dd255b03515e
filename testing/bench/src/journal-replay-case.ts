/**
 * One case of benchmark (m), in a child Node process of its own (forked by
 * `journal-replay.ts`) so its peak RSS is its own: it resumes the sandbox
 * holding the journal, reads the whole journal one way (`cat` over
 * `process.spawn`, `readJournal` follow, `readJournal` poll), then sends
 * `{ bytes, lines, ms, maxRssBytes }` to the parent. Never destroys the sandbox.
 * argv: provider (`local-process` | `docker`), sandbox id, root (local-process),
 * run id, journal folder, case (`baseline` only resumes the sandbox: the floor).
 */
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { journalPaths, readJournal, type SandboxHandle } from '@tanstack/ai-sandbox'

const [, , provider = '', id = '', root = '', runId = '', dir = '', mode = ''] = process.argv

async function open(): Promise<SandboxHandle> {
  const handle = provider === 'docker' ? await dockerSandbox({ image: 'tanstack-sandbox-debian:bookworm' }).resume({ id }) : await localProcessSandbox({ root }).resume({ id })
  if (!handle) throw new Error(`sandbox ${id} is gone`)
  return handle
}

async function run(handle: SandboxHandle): Promise<{ bytes: number; lines: number }> {
  const paths = journalPaths(runId, dir)
  if (mode === 'baseline') return { bytes: 0, lines: 0 }
  if (mode === 'cat') {
    const child = await handle.process.spawn(`cat ${paths.journal}`)
    let bytes = 0
    let lines = 0
    for await (const chunk of child.stdout) {
      bytes += Buffer.byteLength(chunk)
      for (let at = chunk.indexOf('\n'); at !== -1; at = chunk.indexOf('\n', at + 1)) lines++
    }
    await child.wait()
    return { bytes, lines }
  }
  let bytes = 0
  let lines = 0
  let exit = -1
  for await (const line of readJournal(handle, { paths, strategy: mode === 'poll' ? 'poll' : 'follow', onExit: (result) => void (exit = result.exitCode) })) {
    bytes = line.endPosition
    lines++
  }
  if (exit !== 0) throw new Error(`readJournal ended without the sentinel (exit ${exit})`)
  return { bytes, lines }
}

const handle = await open()
const started = performance.now()
const result = await run(handle)
const ms = performance.now() - started
process.send!({ ...result, ms, maxRssBytes: process.resourceUsage().maxRSS * 1024 })
