/**
 * The provider's `fs.watch` loses nothing in a burst: 2,000 files made at
 * once in an existing directory, in a directory created in the same breath,
 * and across nested new directories are all reported as created (a burst is
 * settled by a rescan against the known listing), and so are their changes
 * and deletes. Counting assertions only; the 10,000-file figure is in the bench.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import type { SandboxWatchEvent } from '@tanstack/ai-sandbox'
import { useTempRoot, waitFor } from './helpers/temp-root.js'

const temp = useTempRoot()
const sh = promisify(execFile)
const COUNT = 2000

/** Watch a fresh sandbox and collect the paths per event type. */
async function watched(setup = '') {
  const handle = await temp.create()
  if (setup) await handle.process.exec(setup)
  const seen = { create: new Set<string>(), change: new Set<string>(), delete: new Set<string>() }
  const watcher = await handle.fs.watch!((event: SandboxWatchEvent) => void seen[event.type].add(event.path))
  const run = (script: string) => sh('/bin/sh', ['-c', script], { cwd: handle.workspaceRoot })
  return { seen, watcher, run }
}

const files = (set: Set<string>, pattern: RegExp) => [...set].filter((path) => pattern.test(path)).length

describe('fs.watch in a burst of files', () => {
  it(`reports ${COUNT} files created at once in an existing directory, then their changes and deletes`, async () => {
    const { seen, watcher, run } = await watched('mkdir d')
    await run(`cd d && seq 1 ${COUNT} | xargs touch`)
    await waitFor(() => files(seen.create, /^d\/\d+$/) === COUNT, `${COUNT} creates`, 60_000)
    await run(`cd d && for i in $(seq 1 ${COUNT}); do printf x > $i; done`)
    await waitFor(() => files(seen.change, /^d\/\d+$/) === COUNT, `${COUNT} changes`, 60_000)
    await run('rm -rf d')
    await waitFor(() => files(seen.delete, /^d\/\d+$/) === COUNT && seen.delete.has('d'), `${COUNT} deletes`, 60_000)
    await watcher.close()
  })

  it(`reports ${COUNT} files made in a directory created in the same breath`, async () => {
    const { seen, watcher, run } = await watched()
    await run(`mkdir n && cd n && seq 1 ${COUNT} | xargs touch`)
    await waitFor(() => files(seen.create, /^n\/\d+$/) === COUNT, `${COUNT} creates`, 60_000)
    expect(seen.create.has('n')).toBe(true)
    await watcher.close()
  })

  it(`reports ${COUNT} files across 40 nested new directories`, async () => {
    const { seen, watcher, run } = await watched()
    await run(`for i in $(seq 1 40); do mkdir -p x/$i/y && (cd x/$i/y && seq 1 ${COUNT / 40} | xargs touch); done`)
    await waitFor(() => files(seen.create, /^x\/\d+\/y\/\d+$/) === COUNT, `${COUNT} creates`, 60_000)
    await watcher.close()
  })
})
