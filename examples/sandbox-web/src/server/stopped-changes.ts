/**
 * What a stopped run had changed. A run's `file.changed` diffs are emitted
 * when the agent finishes; a run that is stopped never gets there, and Stop
 * destroys its sandbox, so without this the user could never see what the
 * stopped agent did. The cancel route calls `capture` BEFORE it records the
 * cancel (both bands tear the sandbox down): `git diff` against the commit
 * the workspace was cloned at, plus every untracked file, read-only, inside
 * the run's sandbox (resumed by id, never ensured), bounded in time and size,
 * with the app's secret values taken out. The result is kept as one JSON file
 * per run in the data folder and served by `GET /api/runs/:runId/changes`.
 * Invariant: capturing never blocks a Stop for long and never fails it: any
 * problem (no sandbox yet, no git, a timeout) yields no capture.
 */
import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { RunRecord } from '@tanstack/ai'
import type { SandboxInstanceStore, SandboxProvider } from '@tanstack/ai-sandbox'
import { ID_PATTERN } from './prompts.js'

/** One file's diff, as the page shows `file.changed` diffs. */
export interface CapturedChange {
  readonly path: string
  readonly diff: string
}

/** A stopped run's changes, as served to the page. */
export interface StoppedChanges {
  readonly runId: string
  /** When the capture was taken (epoch ms), just before the cancel. */
  readonly capturedAt: number
  readonly files: readonly CapturedChange[]
  /** `true` when the diff was cut at {@link MAX_DIFF_BYTES}. */
  readonly truncated: boolean
}

/** The most diff text kept per stopped run, bytes. */
export const MAX_DIFF_BYTES = 1_000_000
/** The longest a capture may delay a Stop, ms. */
export const CAPTURE_TIMEOUT_MS = 5000

/**
 * Tracked changes against HEAD, then each untracked file (not ignored) against nothing, with fixed prefixes whatever
 * the git config says. Read-only: no index, ref or object of the workspace's repository is written.
 */
const DIFF_COMMAND = [
  'export GIT_PAGER=cat GIT_OPTIONAL_LOCKS=0',
  'G="git -c core.quotepath=off -c diff.noprefix=false -c color.ui=false"',
  '{ $G diff --no-ext-diff --src-prefix=a/ --dst-prefix=b/ HEAD -- . 2>/dev/null',
  `$G ls-files --others --exclude-standard -z 2>/dev/null | xargs -0 -r -n 1 sh -c 'git -c core.quotepath=off -c color.ui=false diff --no-ext-diff --no-index --src-prefix=a/ --dst-prefix=b/ -- /dev/null "$1" 2>/dev/null; true' _`,
  `} | head -c ${MAX_DIFF_BYTES + 1}`,
].join('\n')

/** Split a combined `git diff` into one entry per file, named by its `+++ b/…` (or, for a deletion, `--- a/…`) line. */
export function splitDiff(text: string): CapturedChange[] {
  return text
    .split(/^(?=diff --git )/m)
    .filter((part) => part.startsWith('diff --git '))
    .map((diff) => {
      const after = /^\+\+\+ b\/(.*)$/m.exec(diff)?.[1]
      const before = /^--- a\/(.*)$/m.exec(diff)?.[1]
      const header = /^diff --git a\/.* b\/(.*)$/m.exec(diff)?.[1]
      return { path: after ?? before ?? header ?? '(unknown)', diff: diff.replace(/\n$/, '') }
    })
}

/** What {@link stoppedChanges} needs: where the run's sandbox is, and the values to take out of a diff. */
export interface StoppedChangesOptions {
  /** Folder of the JSON files (in the app's private data folder). */
  dir: string
  provider: SandboxProvider
  instances: SandboxInstanceStore
  /** Takes the app's secret values (the API key, the offline model's key) out of a text. */
  redact: (text: string) => string
}

/** Capture, keep and read stopped runs' changes. */
export function stoppedChanges({ dir, provider, instances, redact }: StoppedChangesOptions) {
  const file = (runId: string) => join(dir, `${runId}.json`)
  return {
    /**
     * Diff the run's workspace now and keep it. Resolves `undefined`, never rejects, when there is nothing to read:
     * the run has no sandbox yet (still booting), it is gone, or git did not answer within {@link CAPTURE_TIMEOUT_MS}.
     */
    async capture(record: RunRecord): Promise<StoppedChanges | undefined> {
      if (record.sandboxKey === undefined || !ID_PATTERN.test(record.runId)) return undefined
      try {
        const instance = await instances.get(record.sandboxKey)
        // resume, never ensure: ensure would create a fresh sandbox for a run whose sandbox is gone.
        const handle = instance ? await provider.resume({ id: instance.providerSandboxId }) : null
        if (!handle) return undefined
        const result = await handle.process.exec(DIFF_COMMAND, { timeoutMs: CAPTURE_TIMEOUT_MS })
        const truncated = Buffer.byteLength(result.stdout) > MAX_DIFF_BYTES
        const text = redact(truncated ? result.stdout.slice(0, MAX_DIFF_BYTES) : result.stdout)
        const captured: StoppedChanges = { runId: record.runId, capturedAt: Date.now(), files: splitDiff(text), truncated }
        await mkdir(dir, { recursive: true, mode: 0o700 })
        await writeFile(`${file(record.runId)}.tmp`, JSON.stringify(captured))
        await rename(`${file(record.runId)}.tmp`, file(record.runId))
        return captured
      } catch {
        return undefined // a Stop goes on without a capture
      }
    },
    /** The capture of a stopped run, or `undefined` when there is none. */
    async load(runId: string): Promise<StoppedChanges | undefined> {
      if (!ID_PATTERN.test(runId) || !existsSync(file(runId))) return undefined
      return JSON.parse(await readFile(file(runId), 'utf8')) as StoppedChanges
    },
  }
}

/** See {@link stoppedChanges}. */
export type StoppedChangesStore = ReturnType<typeof stoppedChanges>
