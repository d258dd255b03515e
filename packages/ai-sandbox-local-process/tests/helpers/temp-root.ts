/**
 * Test scaffolding shared by the local-process suites: one fresh temp root per
 * test file, handles tracked and destroyed after each test, and a check that
 * the root is empty (then gone) after the file. Also a process-group probe that
 * ignores zombies, since this machine's init never reaps orphans.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '../../src/index.js'
import type { LocalProcessSandboxConfig } from '../../src/index.js'

/** Register hooks for a per-file temp root and return accessors. */
export function useTempRoot() {
  let root = ''
  const handles: SandboxHandle[] = []
  beforeAll(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), 'lp-sandbox-test-')))
  })
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.destroy()))
  })
  afterAll(async () => {
    expect(await readdir(root)).toEqual([])
    await rm(root, { recursive: true, force: true })
    expect(existsSync(root)).toBe(false)
  })
  return {
    get root() {
      return root
    },
    provider: (config: LocalProcessSandboxConfig = {}): SandboxProvider => localProcessSandbox({ root, ...config }),
    /** Create a sandbox that is destroyed after the test. */
    create: async (config: LocalProcessSandboxConfig = {}): Promise<SandboxHandle> => {
      const handle = await localProcessSandbox({ root, ...config }).create()
      handles.push(handle)
      return handle
    },
    /** Destroy `handle` after the test too (for handles from custom providers). */
    track: (handle: SandboxHandle) => handles.push(handle),
  }
}

/** Live (non-zombie) processes whose process group is `pgid`, per `ps`. */
export function liveGroupMembers(pgid: number): number {
  const out = execFileSync('ps', ['-eo', 'pgid=,stat='], { encoding: 'utf8' })
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([group, stat]) => Number(group) === pgid && stat !== undefined && !stat.startsWith('Z')).length
}

/** Poll `predicate` every 20 ms until it holds; fail after `timeoutMs` (a hang guard, not a timing claim). */
export async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Collect an async iterable of strings into an array of chunks. */
export async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const chunks: string[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

/** The rejection of `promise` (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the promise to reject')
}
