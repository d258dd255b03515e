/**
 * Packs every published package of this repository (`packages/*` that are not
 * private) with `pnpm pack`, the way a release would, and reads the manifest
 * each tarball carries. It owns only the tarballs it writes into the folder
 * the caller gives it; it never builds: a package whose `dist` files are
 * missing is refused with a message that says to run `pnpm build`.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The repository root (two folders above `testing/install`). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** The fields of a package.json this suite reads. */
export interface Manifest {
  readonly name: string
  readonly version: string
  readonly private?: boolean
  readonly exports?: Record<string, string | Record<string, string>>
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
}

/** One packed package. */
export interface PackedPackage {
  /** Folder name under `packages/`, e.g. `ai-sandbox`. */
  readonly folder: string
  /** The package.json inside the tarball (as `pnpm pack` rewrote it). */
  readonly manifest: Manifest
  /** Absolute path of the `.tgz`. */
  readonly tarball: string
}

/** The published packages: every `packages/<folder>` whose package.json is not private. */
export function publishedFolders(): string[] {
  const root = join(REPO_ROOT, 'packages')
  return readdirSync(root)
    .filter((folder) => existsSync(join(root, folder, 'package.json')))
    .filter((folder) => !(JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8')) as Manifest).private)
    .sort()
}

/**
 * The files a package's `exports` point at (`types` and `import` of every entry) that do not exist yet.
 * @returns Paths relative to the package folder; empty when the build is complete.
 */
export function missingBuildOutputs(folder: string): string[] {
  const dir = join(REPO_ROOT, 'packages', folder)
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
  const targets = Object.values(manifest.exports ?? {}).flatMap((entry) => (typeof entry === 'string' ? [entry] : Object.values(entry)))
  return targets.filter((target) => !existsSync(join(dir, target)))
}

/**
 * `pnpm pack` every published package, side by side, each into `destination/<folder>/`.
 *
 * @param destination - An existing, empty folder for the tarballs.
 * @returns One entry per package, in folder order.
 * @throws Error naming the package and its missing files when a package is not built (run `pnpm build` first).
 */
export async function packAll(destination: string): Promise<PackedPackage[]> {
  const folders = publishedFolders()
  const unbuilt = folders.map((folder) => ({ folder, missing: missingBuildOutputs(folder) })).filter((entry) => entry.missing.length > 0)
  if (unbuilt.length > 0) {
    const list = unbuilt.map((entry) => `packages/${entry.folder}: ${entry.missing.join(', ')}`).join('; ')
    throw new Error(`Build the packages before packing them (run \`pnpm build\` at the repository root). Missing: ${list}`)
  }
  // Side by side, each into a folder of its own so every tarball is found by where it landed.
  return Promise.all(
    folders.map(async (folder) => {
      const into = join(destination, folder)
      mkdirSync(into)
      await run('pnpm', ['pack', '--pack-destination', into], { cwd: join(REPO_ROOT, 'packages', folder), env: cleanEnv(), timeout: 120_000 })
      const tarball = readdirSync(into).find((name) => name.endsWith('.tgz'))
      if (!tarball) throw new Error(`pnpm pack in packages/${folder} wrote no tarball into ${into}`)
      const path = join(into, tarball)
      return { folder, tarball: path, manifest: await tarballManifest(path) }
    }),
  )
}

/** The `package/package.json` inside a tarball. */
export async function tarballManifest(tarball: string): Promise<Manifest> {
  const { stdout } = await run('tar', ['-xOzf', tarball, 'package/package.json'], { maxBuffer: 1 << 20 })
  return JSON.parse(stdout) as Manifest
}

/** The files inside a tarball, without the leading `package/`. */
export async function tarballFiles(tarball: string): Promise<string[]> {
  const { stdout } = await run('tar', ['-tzf', tarball], { maxBuffer: 16 << 20 })
  return stdout.split('\n').filter(Boolean).map((line) => line.replace(/^package\//, ''))
}

/**
 * The environment for a package manager or program started from a test:
 * ours, without what `pnpm test` and vitest add (`npm_*` settings that npm
 * would read as its own config, `NODE_OPTIONS`, `VITEST*`) and without this
 * repository's `node_modules/.bin` folders on the `PATH`, so nothing of the
 * monorepo leaks into a project that is meant to stand alone.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|PNPM_|VITEST|NODE_OPTIONS$|NODE_ENV$|TEST$|INIT_CWD$)/.test(key)) continue
    env[key] = value
  }
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((entry) => entry !== '' && !entry.startsWith(REPO_ROOT.replace(/\/$/, '')))
    .join(':')
  return { ...env, ...extra }
}
