/**
 * One figure of the `snapshots` table, in a child Node process of its own
 * (forked by `snapshots.ts`) so its peak RSS is its own: it resumes the
 * sandbox, times `runs` captures, restores or tar references one after the
 * other (a restore's workspace is emptied before each, off the clock), then
 * sends `{ ms: [...], maxRssBytes, bytes, files }` to the parent. The peak
 * RSS is the highest over the runs. Never destroys the sandbox.
 *
 * argv: provider (`local-process` | `docker`), sandbox id, root (local-process),
 * work folder (holds `blobs/`, `manifest.json`, `tree.tar`), runs, mode:
 * - `baseline`: only loads the packages and resumes the sandbox (the RSS floor);
 * - `tar-capture`: `tar -cf - .` through `process.spawn`, stdout drained;
 * - `tar-base64-capture`: `tar -cf - . | base64` likewise (the engine's transport);
 * - `capture`: `captureSandboxWorkspace` with a `putBlob` writing `blobs/<sha256>`,
 *   then the last run's manifest to `manifest.json` (after the clock and the RSS reading);
 * - `tar-restore`: `tar -xf -` through `process.spawn`, `tree.tar` written to its stdin;
 * - `restore`: `restoreSandboxWorkspace` of `manifest.json`, `getBlob` reading `blobs/`.
 */
import { createReadStream } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { captureSandboxWorkspace, restoreSandboxWorkspace, type SandboxHandle, type SandboxSnapshotManifest } from '@tanstack/ai-sandbox'

const [, , provider = '', id = '', root = '', work = '', runsArg = '1', mode = ''] = process.argv

/** Result of one case. */
interface CaseResult {
  /** Bytes read from stdout (tar cases, as UTF-8 text) or stored/written (engine cases). */
  readonly bytes: number
  readonly files: number
}

/** Resume the sandbox; only the provider package in use is loaded (the baseline's floor is that provider's). */
async function open(): Promise<SandboxHandle> {
  const handle = provider === 'docker' ? await (await import('@tanstack/ai-sandbox-docker')).dockerSandbox({ image: 'tanstack-sandbox-debian:bookworm' }).resume({ id }) : await (await import('@tanstack/ai-sandbox-local-process')).localProcessSandbox({ root }).resume({ id })
  if (!handle) throw new Error(`sandbox ${id} is gone`)
  return handle
}

/** Run `command` and drain both streams; stdin gets `input` when given. @throws on a non-zero exit. */
async function drain(handle: SandboxHandle, command: string, input?: string): Promise<number> {
  const child = await handle.process.spawn(command)
  let stderr = ''
  const errors = (async () => {
    for await (const chunk of child.stderr) stderr += chunk
  })()
  const feeding = (async () => {
    if (input === undefined) return
    for await (const chunk of createReadStream(input, { highWaterMark: 1024 * 1024 })) await child.stdin.write(chunk as Buffer)
    await child.stdin.end()
  })()
  let bytes = 0
  for await (const chunk of child.stdout) bytes += chunk.length
  await Promise.all([errors, feeding])
  const exit = await child.wait()
  if (exit.exitCode !== 0) throw new Error(`${command} exited ${exit.exitCode}: ${stderr.slice(-2000)}`)
  return bytes
}

async function run(handle: SandboxHandle): Promise<CaseResult & { after?: () => Promise<void> }> {
  const blobs = join(work, 'blobs')
  switch (mode) {
    case 'baseline':
      return { bytes: 0, files: 0 }
    case 'tar-capture':
      return { bytes: await drain(handle, 'tar -cf - .'), files: 0 }
    case 'tar-base64-capture':
      return { bytes: await drain(handle, 'tar -cf - . | base64'), files: 0 }
    case 'tar-restore':
      await drain(handle, 'tar -xf -', join(work, 'tree.tar'))
      return { bytes: 0, files: 0 }
    case 'capture': {
      const capture = await captureSandboxWorkspace(handle, { putBlob: (sha256, bytes) => writeFile(join(blobs, sha256), bytes) })
      return { bytes: capture.stats.bytes, files: capture.stats.files, after: () => writeFile(join(work, 'manifest.json'), JSON.stringify({ manifest: capture.manifest, manifestSha256: capture.manifestSha256 })) }
    }
    case 'restore': {
      const { manifest, manifestSha256 } = stored!
      const restored = await restoreSandboxWorkspace(handle, { manifest, manifestSha256, getBlob: (sha256) => readFile(join(blobs, sha256)) })
      return { bytes: restored.stats.bytes, files: restored.stats.files }
    }
    default:
      throw new Error(`unknown snapshots case ${JSON.stringify(mode)}`)
  }
}

const handle = await open()
// The stored manifest is read before the clock starts (a store hands it over with the checkpoint).
const stored = mode === 'restore' ? (JSON.parse(await readFile(join(work, 'manifest.json'), 'utf8')) as { manifest: SandboxSnapshotManifest; manifestSha256: string }) : undefined
const ms: number[] = []
let last: CaseResult = { bytes: 0, files: 0 }
let afterLast: (() => Promise<void>) | undefined
for (let index = 0; index < Number(runsArg); index++) {
  if (mode === 'restore' || mode === 'tar-restore') {
    const emptied = await handle.process.exec('find . -mindepth 1 -delete')
    if (emptied.exitCode !== 0) throw new Error(`emptying the workspace failed: ${emptied.stderr}`)
  }
  const started = performance.now()
  const { after, ...result } = await run(handle)
  ms.push(performance.now() - started)
  last = result
  afterLast = after
}
const maxRssBytes = process.resourceUsage().maxRSS * 1024
await afterLast?.()
// Exit once the answer is out: a Docker handle's connections would keep the process alive.
process.send!({ ...last, ms, maxRssBytes }, () => process.exit(0))
