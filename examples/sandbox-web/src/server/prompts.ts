/**
 * The thread's messages, as far as this example keeps them: the prompt of
 * each run, one small JSON file per run in the data folder. The attach route
 * and the reaper load it to re-drive a run (the client sends no history when
 * it reconnects). A real app keeps its chat persistence here instead.
 */
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Ids the routes accept: what `crypto.randomUUID()` and the tests make. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,100}$/

/** What the app stores of a run beside its record. */
export interface StoredPrompt {
  readonly runId: string
  readonly threadId: string
  readonly prompt: string
}

/** Save and load the prompt of a run under `dir`. */
export function promptStore(dir: string) {
  const file = (runId: string) => join(dir, `${runId}.json`)
  return {
    async save(entry: StoredPrompt): Promise<void> {
      await mkdir(dir, { recursive: true })
      await writeFile(file(entry.runId), JSON.stringify(entry))
    },
    /** The `limit` most recently started runs, newest first. */
    async recent(limit: number): Promise<StoredPrompt[]> {
      const names = existsSync(dir) ? (await readdir(dir)).filter((name) => name.endsWith('.json')) : []
      const dated = await Promise.all(names.map(async (name) => ({ name, at: (await stat(join(dir, name))).mtimeMs })))
      const newest = dated.sort((a, b) => b.at - a.at).slice(0, limit)
      return Promise.all(newest.map(async ({ name }) => JSON.parse(await readFile(join(dir, name), 'utf8')) as StoredPrompt))
    },
    /** The stored prompt, or `undefined` for a run this app never started. */
    async load(runId: string): Promise<StoredPrompt | undefined> {
      if (!ID_PATTERN.test(runId) || !existsSync(file(runId))) return undefined
      return JSON.parse(await readFile(file(runId), 'utf8')) as StoredPrompt
    },
  }
}

/** See {@link promptStore}. */
export type PromptStore = ReturnType<typeof promptStore>
