/**
 * Test helpers: make and clean a private local-process root per file, find
 * live processes by a marker, and wait for a condition (bounded). One chat()
 * run with the shell adapter is `runShell` in @testing/support/run-shell.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A private provider root for one test file. */
export function makeRoot(label: string): { root: string; entries: () => string[]; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), `tsbx-e2e-${label}-`))
  return {
    root,
    entries: () => readdirSync(root),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  }
}

/** PIDs of live processes whose command line contains `marker` (via `ps`). */
export function processesMatching(marker: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
  return out
    .split('\n')
    .filter((line) => line.includes(marker) && !line.includes('ps -eo'))
    .map((line) => Number(line.trim().split(/\s+/)[0]))
}

/** Poll `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}
