/**
 * A fresh project outside the repository, as a new user would make one: a
 * package.json that depends on the packed tarballs, `@tanstack/ai` and what
 * the examples need from the npm registry, installed with npm or pnpm, plus
 * copies of the programs to run (the root README's example completed with an
 * adapter, `examples/local-process-basic`, the quickstart). It owns the
 * project folder it is given; it finds how many copies of a package the
 * install put on disk, and runs a program there with a clean environment.
 */
import { execFile } from 'node:child_process'
import { cpSync, existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, sep } from 'node:path'
import { promisify } from 'node:util'
import { cleanEnv, REPO_ROOT, type PackedPackage } from './pack.js'
import { readmeProgram } from './readme-example.js'

const run = promisify(execFile)

/** Which package manager installs the project. */
export type PackageManager = 'npm' | 'pnpm'

/**
 * What the examples import besides our packages, at the versions this
 * repository tests (`examples/quickstart/package.json`), plus tsx to run
 * TypeScript, and the compiler with the type packages the programs need to check them against the published types.
 */
export const REGISTRY_DEPENDENCIES: Readonly<Record<string, string>> = {
  '@tanstack/ai': '0.58.0',
  '@copilotkit/aimock': '1.43.0',
  '@anthropic-ai/claude-code': '2.1.332',
  dockerode: '5.0.1',
  tsx: '4.23.15',
  typescript: '5.9.3',
  '@types/node': '20.19.43',
  // The quickstart imports dockerode itself, so it needs dockerode's types as any app that does; our packages bring their own.
  '@types/dockerode': '4.0.2',
}

/**
 * What the types-only project installs besides the tarballs: the peer every
 * package names, the compiler and Node's types. Nothing else, so a type a
 * published `.d.ts` needs resolves only if that package depends on it.
 */
export const TYPES_ONLY_DEPENDENCIES: Readonly<Record<string, string>> = {
  '@tanstack/ai': REGISTRY_DEPENDENCIES['@tanstack/ai']!,
  typescript: REGISTRY_DEPENDENCIES.typescript!,
  '@types/node': REGISTRY_DEPENDENCIES['@types/node']!,
}

/** The programs copied into the project, by the path they are run from. */
export const PROGRAMS = {
  readme: 'readme-example.ts',
  /** Imports every entry point of every packed package, so `tsc` (with `skipLibCheck: false`) checks all of their published types. */
  allTypes: 'all-published-types.ts',
  basic: 'local-process-basic/src/main.ts',
  quickstart: 'quickstart/src/main.ts',
} as const

/** Milliseconds an install may take: a cold npm cache fetches the Claude Code binary (about 200 MB), and the npm and pnpm installs share the registry and the disk (a cold CI run once needed more than 330 s). */
export const INSTALL_TIMEOUT_MS = 600_000

/**
 * Write the project: package.json, tsconfig.json and the programs.
 * @param dir - An existing, empty folder outside the repository.
 * @param packed - The tarballs from `packAll`.
 */
export function writeProject(dir: string, packed: readonly PackedPackage[], manager: PackageManager): void {
  const dependencies: Record<string, string> = {}
  for (const { manifest, tarball } of packed) dependencies[manifest.name] = `file:${tarball}`
  Object.assign(dependencies, REGISTRY_DEPENDENCIES)
  const manifest = {
    name: `fresh-${manager}-project`,
    private: true,
    type: 'module',
    dependencies,
    // pnpm runs no install script unless allowed; Claude Code's postinstall places its native binary.
    ...(manager === 'pnpm' ? { pnpm: { onlyBuiltDependencies: ['@anthropic-ai/claude-code'] } } : {}),
  }
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  writeFileSync(
    join(dir, 'tsconfig.json'),
    `${JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] }, include: ['*.ts', 'quickstart/src', 'local-process-basic/src'] }, null, 2)}\n`,
  )
  writeFileSync(join(dir, PROGRAMS.readme), readmeProgram(rootReadmeExample()))
  writeFileSync(join(dir, PROGRAMS.allTypes), allTypesProgram(packed))
  cpSync(join(REPO_ROOT, 'examples/local-process-basic/src'), join(dir, 'local-process-basic/src'), { recursive: true })
  for (const part of ['src', 'fixtures']) cpSync(join(REPO_ROOT, 'examples/quickstart', part), join(dir, 'quickstart', part), { recursive: true })
}

/**
 * Write a consumer that only compiles our published types (issue 30): the
 * tarballs, `@tanstack/ai`, the compiler and `@types/node`, installed by pnpm
 * with hoisting off, so a `.d.ts` that imports a module whose types its
 * package does not depend on fails with TS7016 instead of finding another
 * package's copy. The full project cannot prove that: the quickstart imports
 * dockerode itself, so that project depends on `@types/dockerode` directly.
 * Install it with `installProject(dir, 'pnpm')` and check it with `typecheckProject`.
 */
export function writeTypesProject(dir: string, packed: readonly PackedPackage[]): void {
  const dependencies: Record<string, string> = {}
  for (const { manifest, tarball } of packed) dependencies[manifest.name] = `file:${tarball}`
  Object.assign(dependencies, TYPES_ONLY_DEPENDENCIES)
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'types-only-project', private: true, type: 'module', dependencies }, null, 2)}\n`)
  // No hoisting into node_modules/.pnpm/node_modules either: each package sees only its own dependencies.
  writeFileSync(join(dir, '.npmrc'), 'hoist=false\n')
  writeFileSync(
    join(dir, 'tsconfig.json'),
    `${JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] }, include: [PROGRAMS.allTypes] }, null, 2)}\n`,
  )
  writeFileSync(join(dir, PROGRAMS.allTypes), allTypesProgram(packed))
}

/**
 * A module that imports the types of every entry point (`exports` key) of
 * every packed package: a consumer with `skipLibCheck: false` compiles each
 * published `.d.ts` and everything it imports (issue 30: a `.d.ts` importing
 * a module whose types are not a dependency fails there with TS7016).
 */
export function allTypesProgram(packed: readonly PackedPackage[]): string {
  const specifiers = packed.flatMap(({ manifest }) =>
    Object.keys(manifest.exports ?? { '.': '' })
      .filter((key) => key !== './package.json')
      .map((key) => (key === '.' ? manifest.name : `${manifest.name}/${key.replace(/^\.\//, '')}`)),
  )
  const lines = specifiers.map((specifier, i) => `import type * as entry${i} from '${specifier}'`)
  return `// Generated by the install suite: every published entry point's types.\n${lines.join('\n')}\nexport type Entries = [${specifiers.map((_, i) => `typeof entry${i}`).join(', ')}]\n`
}

/** The first TypeScript block of the root README. */
export function rootReadmeExample(): string {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1]
  if (!block) throw new Error('README.md has no ```ts example block')
  return block
}

/**
 * Install the project with `manager`. pnpm is told to ignore any workspace
 * (so it never joins this monorepo's) and to use its usual store, which
 * a run of this suite keeps warm. Either manager runs install scripts for
 * Claude Code only (npm: `--ignore-scripts`, then `npm rebuild` of it).
 * @returns The package manager's output, for a failure message.
 */
export async function installProject(dir: string, manager: PackageManager): Promise<string> {
  // --prefer-offline: take what the cache has without asking the registry again (a first run still downloads).
  // Install scripts run for Claude Code only (its postinstall places the native binary), with either manager: pnpm by
  // `onlyBuiltDependencies`, npm by installing with --ignore-scripts and then rebuilding that one package. Otherwise npm
  // compiles better-sqlite3 from source (no prebuilt binary is reachable offline) for a project that never opens SQLite:
  // a minute of one core.
  const options = { cwd: dir, env: cleanEnv(), timeout: INSTALL_TIMEOUT_MS, maxBuffer: 64 << 20 }
  if (manager === 'pnpm') {
    const { stdout, stderr } = await run('pnpm', ['install', '--ignore-workspace', '--prefer-offline', '--config.confirmModulesPurge=false', '--reporter=append-only'], options)
    return `${stdout}${stderr}`
  }
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--loglevel=error'], options)
  const built = await run('npm', ['rebuild', '@anthropic-ai/claude-code', '--loglevel=error'], options)
  return [installed.stdout, installed.stderr, built.stdout, built.stderr].join('')
}

/**
 * Every folder on disk that holds package `name`, found by walking the
 * project's node_modules the way Node resolves: each installed package's own
 * node_modules and the node_modules folder it sits in (pnpm keeps a package's
 * dependencies beside it), symlinks resolved.
 * @returns The distinct real paths; one entry means one copy.
 */
export function installedCopies(projectDir: string, name: string): string[] {
  const copies = new Set<string>()
  const visited = new Set<string>()
  const walk = (nodeModules: string) => {
    if (visited.has(nodeModules) || !existsSync(nodeModules)) return
    visited.add(nodeModules)
    for (const entry of readdirSync(nodeModules)) {
      if (entry.startsWith('.')) continue
      const names = entry.startsWith('@') ? readdirSync(join(nodeModules, entry)).map((inner) => `${entry}/${inner}`) : [entry]
      for (const pkg of names) {
        let real: string
        try {
          real = realpathSync(join(nodeModules, pkg))
        } catch {
          continue // a dangling link
        }
        if (pkg === name) copies.add(real)
        walk(join(real, 'node_modules'))
        walk(containingNodeModules(real))
      }
    }
  }
  walk(join(projectDir, 'node_modules'))
  return [...copies].sort()
}

/** `/x/node_modules/@scope/name` → `/x/node_modules`. */
function containingNodeModules(packageDir: string): string {
  const parent = dirname(packageDir)
  return basename(parent).startsWith('@') ? dirname(parent) : parent.endsWith(`${sep}node_modules`) ? parent : join(packageDir, 'node_modules')
}

/** How one program run ended. */
export interface ProgramRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * Run a TypeScript program of the project with Node and tsx (the quickstart
 * also with its early signal handlers, as its `start` script does).
 * @param env - Added to the clean environment, e.g. `TMPDIR` so sandboxes land in the test's folder.
 */
export async function runProgram(dir: string, program: string, env: Record<string, string>, timeoutMs = 120_000): Promise<ProgramRun> {
  const early = program === PROGRAMS.quickstart ? ['--import', './quickstart/src/early-signals.mjs'] : []
  try {
    const { stdout, stderr } = await run('node', [...early, '--import', 'tsx', program], { cwd: dir, env: cleanEnv(env), timeout: timeoutMs, maxBuffer: 16 << 20 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; signal?: string }
    return { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: `${failed.stderr ?? ''}${failed.signal ? `\n(killed by ${failed.signal})` : ''}` }
  }
}

/** Type-check the project's programs against the installed packages' published types (`tsc --noEmit`). */
export async function typecheckProject(dir: string): Promise<ProgramRun> {
  try {
    const { stdout, stderr } = await run('node', [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir, env: cleanEnv(), timeout: 120_000 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' }
  }
}
