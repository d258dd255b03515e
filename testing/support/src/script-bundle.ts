/**
 * One TypeScript entry bundled into a single ESM file that plain `node` runs,
 * for suites that start many Node processes from the sources (run servers,
 * journal hosts). Under tsx's loader each such process spent about 1.5 s of
 * CPU compiling and resolving the sources before it served; the bundle loads
 * in a fraction of that, and is built once per test file (esbuild, ~0.4 s).
 *
 * What goes in the bundle: the entry and every file reached through a
 * relative import or a tsconfig `paths` entry (our packages' `src/`, as the
 * tests themselves import them). What stays out: every file under a
 * `node_modules` folder, imported by its absolute path as esbuild resolved
 * it, so each third-party package loads exactly as Node would load it from
 * the importing file (its own `exports`, native bindings, CJS or ESM), and the
 * bundle can live in any folder.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { build, type Plugin } from 'esbuild'

/** A bundled script and the temp folder that holds it. */
export interface ScriptBundle {
  /** Absolute path of the `.mjs` file to pass to `node`. */
  readonly file: string
  /** Removes the temp folder. */
  dispose(): void
}

/** Marks every import that resolves into a `node_modules` folder external, by its resolved absolute path. */
const nodeModulesByPath: Plugin = {
  name: 'node-modules-by-path',
  setup(plugin) {
    plugin.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'inner' || args.path.startsWith('node:')) return undefined
      const resolved = await plugin.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'inner' })
      if (resolved.errors.length > 0) return { errors: resolved.errors }
      if (resolved.external || !resolved.path.includes('/node_modules/')) return resolved
      return { path: resolved.path, external: true }
    })
  },
}

/**
 * Bundle `entry` (see the module header) into a new temp folder.
 * @param entry Absolute path of the TypeScript entry.
 * @param tsconfig Absolute path of the tsconfig whose `paths` map our package names to their sources; it applies to every bundled file.
 * @returns The bundle; call `dispose()` when the processes that run it are gone.
 * @throws esbuild's error, naming the file and import, when an import does not resolve or a file does not compile.
 */
export async function bundleScript(entry: string, tsconfig: string): Promise<ScriptBundle> {
  const dir = mkdtempSync(join(tmpdir(), 'script-bundle-'))
  const file = join(dir, basename(entry).replace(/\.ts$/, '.mjs'))
  try {
    await build({
      entryPoints: [entry],
      outfile: file,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      tsconfig,
      // Node's own resolution for packages: no `module` condition, `main` before `module`.
      conditions: [],
      mainFields: ['main'],
      sourcemap: 'inline',
      plugins: [nodeModulesByPath],
      logLevel: 'silent',
    })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return { file, dispose: () => rmSync(dir, { recursive: true, force: true }) }
}
