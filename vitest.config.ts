// Root test configuration. Vitest 4 reads `test.projects` from this file and
// silently ignores a `vitest.workspace.ts`, so there is deliberately none.
// Every package and end-to-end suite with a `tests/` folder becomes a project,
// and our own packages resolve to their TypeScript sources, so tests never run
// against a stale build and only one copy of each capability token is loaded.
import { existsSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { defineConfig } from 'vitest/config'

const root = fileURLToPath(new URL('.', import.meta.url))

const alias = [
  { find: /^@tanstack\/ai-sandbox\/testkit$/, replacement: join(root, 'packages/ai-sandbox/src/testkit/index.ts') },
  { find: /^@tanstack\/ai-sandbox$/, replacement: join(root, 'packages/ai-sandbox/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-local-process$/, replacement: join(root, 'packages/ai-sandbox-local-process/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-docker$/, replacement: join(root, 'packages/ai-sandbox-docker/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-sqlite$/, replacement: join(root, 'packages/ai-sandbox-sqlite/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-postgres$/, replacement: join(root, 'packages/ai-sandbox-postgres/src/index.ts') },
  { find: /^@tanstack\/ai-claude-code$/, replacement: join(root, 'packages/ai-claude-code/src/index.ts') },
  { find: /^@tanstack\/ai-opencode$/, replacement: join(root, 'packages/ai-opencode/src/index.ts') },
  { find: /^@tanstack\/ai-grok-build$/, replacement: join(root, 'packages/ai-grok-build/src/index.ts') },
  { find: /^@tanstack\/ai-codex$/, replacement: join(root, 'packages/ai-codex/src/index.ts') },
]

function projectsIn(folder: string) {
  const dir = join(root, folder)
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((name) => existsSync(join(dir, name, 'tests')))
    .map((name) => ({
      extends: true as const,
      test: {
        name,
        root: join(dir, name),
        include: ['tests/**/*.test.ts'],
        // A suite that needs a service started once for all its files (a database) has tests/global-setup.ts.
        ...(existsSync(join(dir, name, 'tests', 'global-setup.ts')) ? { globalSetup: [join(dir, name, 'tests', 'global-setup.ts')] } : {}),
      },
    }))
}

export default defineConfig({
  resolve: { alias },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [...projectsIn('packages'), ...projectsIn('examples'), ...projectsIn('testing')],
  },
})
