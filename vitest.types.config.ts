// Type tests: every package or suite with `tests/**/*.test-d.ts` becomes a
// project whose files vitest checks with `tsc` (expectTypeOf, @ts-expect-error)
// and never runs. `pnpm test:types` uses this file; `pnpm test` (vitest.config.ts)
// runs only `*.test.ts`. Each project compiles with its own tsconfig, so an
// adapter's type tests see core's published `.d.ts` (build first), as users do.
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const root = fileURLToPath(new URL('.', import.meta.url))

/** True when `dir` holds a `*.test-d.ts` file at any depth. */
function hasTypeTests(dir: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some((entry) => (entry.isDirectory() ? hasTypeTests(join(dir, entry.name)) : entry.name.endsWith('.test-d.ts')))
}

function typeProjectsIn(folder: string) {
  const dir = join(root, folder)
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((name) => existsSync(join(dir, name, 'tests')) && hasTypeTests(join(dir, name, 'tests')))
    .map((name) => ({
      test: {
        name: `${name}:types`,
        root: join(dir, name),
        include: [],
        typecheck: {
          enabled: true,
          only: true,
          include: ['tests/**/*.test-d.ts'],
          tsconfig: join(dir, name, 'tsconfig.json'),
          // Errors in sources are `pnpm typecheck`'s to report; here only the type tests count.
          ignoreSourceErrors: true,
        },
      },
    }))
}

export default defineConfig({
  test: {
    projects: [...typeProjectsIn('packages'), ...typeProjectsIn('testing')],
  },
})
