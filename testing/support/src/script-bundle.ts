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
 * bundle can live in any folder. With `inlinePackagesExcept`, third-party
 * packages go in the bundle too, all but the listed ones (native bindings),
 * for processes started many times per file (the store suites' children):
 * loading zod and pg file by file cost each start about a quarter second.
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

/** Options of {@link bundleScript}. */
export interface BundleOptions {
  /**
   * Bundle third-party packages too, except these (by package name), which
   * stay out by their absolute path as without the option; a listed package
   * that does not resolve (an optional one never loaded, as pg-native) stays
   * out by its name.
   */
  inlinePackagesExcept?: readonly string[]
}

/** The package name of a bare import: `@scope/name` or `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
}

/**
 * Marks imports that resolve into a `node_modules` folder external, by their
 * resolved absolute path: every one, or with `inlineExcept` only those of the
 * listed packages (the others are bundled).
 */
function nodeModulesByPath(inlineExcept?: ReadonlySet<string>): Plugin {
  return {
    name: 'node-modules-by-path',
    setup(plugin) {
      plugin.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === 'inner' || args.path.startsWith('node:')) return undefined
        if (inlineExcept !== undefined && !inlineExcept.has(packageName(args.path))) return undefined
        const resolved = await plugin.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'inner' })
        if (resolved.errors.length > 0) return inlineExcept === undefined ? { errors: resolved.errors } : { path: args.path, external: true }
        if (resolved.external || !resolved.path.includes('/node_modules/')) return resolved
        return { path: resolved.path, external: true }
      })
    },
  }
}

/**
 * Bundle `entry` (see the module header) into a new temp folder.
 * @param entry Absolute path of the TypeScript entry.
 * @param tsconfig Absolute path of the tsconfig whose `paths` map our package names to their sources; it applies to every bundled file.
 * @param options Which third-party packages go in the bundle (default: none).
 * @returns The bundle; call `dispose()` when the processes that run it are gone.
 * @throws esbuild's error, naming the file and import, when an import does not resolve or a file does not compile.
 */
export async function bundleScript(entry: string, tsconfig: string, options: BundleOptions = {}): Promise<ScriptBundle> {
  const inlineExcept = options.inlinePackagesExcept && new Set(options.inlinePackagesExcept)
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
      plugins: [nodeModulesByPath(inlineExcept)],
      ...(inlineExcept
        ? {
            // The map names the files on disk without copying them in: with the packages' sources it tripled what each start parses.
            sourcesContent: false,
            // A bundled CommonJS package requires Node's built-in modules through `require`, which an ES module has not.
            banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
          }
        : {}),
      logLevel: 'silent',
    })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return { file, dispose: () => rmSync(dir, { recursive: true, force: true }) }
}
