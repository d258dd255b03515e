/**
 * Which sandbox each run got: the provider's id (a local-process folder name
 * or a Docker container id), one small JSON file per run in the data folder,
 * written when the run starts. The page shows it beside the run id, so a
 * restore that gave the thread a new sandbox can be seen. The instance store
 * forgets a sandbox once it is destroyed; this keeps the name for the record.
 */
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ID_PATTERN } from './prompts.js'

/** The sandbox a run ran in. */
export interface RunSandbox {
  readonly runId: string
  readonly threadId: string
  /** `SandboxHandle.id`: what `provider.resume({ id })` takes. */
  readonly sandboxId: string
}

/** Save and load the sandbox of a run under `dir`. */
export function runSandboxStore(dir: string) {
  const file = (runId: string) => join(dir, `${runId}.json`)
  return {
    async save(entry: RunSandbox): Promise<void> {
      if (!ID_PATTERN.test(entry.runId)) return
      await mkdir(dir, { recursive: true })
      await writeFile(file(entry.runId), JSON.stringify(entry))
    },
    /** The sandbox id, or `undefined` when the run never got one (refused, stopped while booting) or was not started here. */
    async load(runId: string): Promise<string | undefined> {
      if (!ID_PATTERN.test(runId) || !existsSync(file(runId))) return undefined
      return (JSON.parse(await readFile(file(runId), 'utf8')) as RunSandbox).sandboxId
    },
  }
}

/** See {@link runSandboxStore}. */
export type RunSandboxStore = ReturnType<typeof runSandboxStore>
