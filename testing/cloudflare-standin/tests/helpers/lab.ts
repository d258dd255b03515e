/**
 * One lab per test file: the test Worker (fixtures/worker.ts) bundled into a
 * temp folder, Miniflare started on it, and at the end the lab closed (its
 * containers removed and checked) and the temp folder removed and checked.
 * The reason to skip comes first, so a file can hand it to `describeWithDocker`.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, expect } from 'vitest'
import { bundleWorker, cloudflareMissing, startCloudflareLab, type CloudflareLab } from '../../src/index.js'
import type TestWorker from '../fixtures/worker.js'

/** The test Worker's RPC methods as Node sees them. */
export type Worker = Pick<TestWorker, Exclude<keyof TestWorker, 'fetch'>>

/** What a file's tests use once the lab is up. */
export interface LabUse {
  lab: CloudflareLab
  worker: Worker
}

/** A sandbox id no other test or file uses (a Durable Object name maps to one container name in every lab). */
export const uniqueId = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`

/** The reason to skip, and `use()` to call inside the describe body (registers beforeAll/afterAll). */
export async function cloudflareLab(): Promise<{ reason: string | null; use: () => LabUse }> {
  const reason = (await cloudflareMissing()) ?? null
  return {
    reason,
    use: () => {
      const state = {} as LabUse
      let dir = ''
      beforeAll(async () => {
        dir = mkdtempSync(join(tmpdir(), 'cf-standin-test-'))
        const script = await bundleWorker(new URL('../fixtures/worker.ts', import.meta.url).pathname, join(dir, 'worker.js'))
        state.lab = await startCloudflareLab({ script })
        state.worker = await state.lab.worker<Worker>()
      }, 60_000)
      afterAll(async () => {
        try {
          await state.lab?.close()
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
        expect(existsSync(dir), 'the temp folder was removed').toBe(false)
      }, 60_000)
      return state
    },
  }
}
