/**
 * Bundle the fake Grok Build agent (`src/fake-agent/`, with the ACP SDK and
 * its dependencies) into one standalone file, `dist/fake-grok/fake-grok.mjs`,
 * that runs with a bare `node` (the Debian image has node and nothing else),
 * beside a `grok` launcher script. Rebuilds only when a source is newer than
 * the bundle; writes through a temporary file, so concurrent suites never
 * see half a bundle. Run directly (`pnpm build:fake`) or from the suites.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))
const sources = join(root, 'src', 'fake-agent')

/** Where the fake lives on the host. */
export interface FakeAgent {
  /** The folder holding both files (mount it read-only into a container). */
  dir: string
  /** The bundle, `node <bundle> agent … stdio`. */
  bundle: string
  /** An executable `grok` launcher next to the bundle (follows symlinks to find it). */
  launcher: string
}

/**
 * Build the fake when its sources changed, and return its paths.
 * @example
 * ```ts
 * const { launcher } = await ensureFakeAgent() // .../dist/fake-grok/grok
 * ```
 */
export async function ensureFakeAgent(): Promise<FakeAgent> {
  const dir = join(root, 'dist', 'fake-grok')
  const bundle = join(dir, 'fake-grok.mjs')
  const launcher = join(dir, 'grok')
  const newest = Math.max(...readdirSync(sources).map((name) => statSync(join(sources, name)).mtimeMs))
  if (!existsSync(bundle) || !existsSync(launcher) || statSync(bundle).mtimeMs < newest) {
    mkdirSync(dir, { recursive: true })
    const temp = `${bundle}.${process.pid}.tmp`
    await build({
      entryPoints: [join(sources, 'main.ts')],
      outfile: temp,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node18',
      legalComments: 'none',
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      logLevel: 'silent',
    })
    renameSync(temp, bundle)
    const script = `${launcher}.${process.pid}.tmp`
    writeFileSync(script, '#!/bin/sh\n# Launches the fake Grok Build agent bundled next to this script.\nd=$(dirname "$(readlink -f "$0")")\nexec node "$d/fake-grok.mjs" "$@"\n')
    chmodSync(script, 0o755)
    renameSync(script, launcher)
  }
  return { dir, bundle, launcher }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const fake = await ensureFakeAgent()
  console.log(`fake Grok Build agent: ${fake.launcher}`)
}
