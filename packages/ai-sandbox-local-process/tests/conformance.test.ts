// The shared provider contract, run against localProcessSandbox in a temp root
// that is removed (and checked empty) after the suite.
import { existsSync } from 'node:fs'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { SANDBOX_ID_ENV } from '@tanstack/ai-sandbox/internal'
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { localProcessSandbox } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'lp-conformance-'))

/** Sandbox ids seen under the root, so a process of one is still found after its folder is gone. */
const seen = new Set<string>()

/**
 * What of the provider is left: each sandbox folder under the root, and each
 * live process carrying the marker (`TANSTACK_SANDBOX_ID=<id>`) of a sandbox
 * of this root. The kit asserts destroy() leaves none of them.
 */
function listResources(): string[] {
  const folders = readdirSync(root)
  for (const id of folders) seen.add(id)
  const processes = readdirSync('/proc').flatMap((pid) => {
    if (!/^\d+$/.test(pid)) return []
    try {
      const id = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').find((entry) => entry.startsWith(`${SANDBOX_ID_ENV}=`))?.slice(SANDBOX_ID_ENV.length + 1)
      return id !== undefined && seen.has(id) ? [`process ${pid} of ${id}`] : []
    } catch {
      return [] // exited meanwhile, or not ours to read
    }
  })
  return [...folders.map((id) => `folder ${id}`), ...processes]
}

runSandboxProviderConformance('local-process', {
  makeProvider: () => localProcessSandbox({ root }),
  ...(process.platform === 'linux' ? { listResources } : {}),
})

afterAll(() => {
  expect(readdirSync(root)).toEqual([])
  rmSync(root, { recursive: true, force: true })
  expect(existsSync(root)).toBe(false)
})
