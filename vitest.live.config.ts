// The live lane: suites that talk to a real cloud service, never part of
// `pnpm test` (CI has no credentials and no network beyond npm). `pnpm test:live`
// uses this file; each suite there needs its service's key (Daytona:
// DAYTONA_API_KEY) and fails naming it when it is missing, since running the
// lane without a key is a mistake, not a skip.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const root = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  test: {
    root,
    include: ['packages/*/live/**/*.live.test.ts'],
    // Cloud sandboxes take seconds to create and minutes to snapshot.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    maxWorkers: 2,
  },
})
