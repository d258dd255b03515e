/**
 * `vite build` of the example's client into dist/client, which every server a
 * suite starts serves. Run once per test run by tests/global-setup.ts, never
 * from a file: files run side by side, and a build empties the folder another
 * file's server is serving.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const EXAMPLE_DIR = fileURLToPath(new URL('../..', import.meta.url))

/** Build src/client into dist/client (throws when vite fails; 120 s at most). */
export function buildClient(): void {
  execFileSync(process.execPath, [join(EXAMPLE_DIR, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], { cwd: EXAMPLE_DIR, stdio: 'inherit', timeout: 120_000 })
}
