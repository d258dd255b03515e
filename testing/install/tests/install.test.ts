/**
 * The packages as a user outside this monorepo gets them (issue 15): `pnpm
 * pack` of every published package, installed into a fresh project in the
 * OS temp folder with npm and with pnpm, next to `@tanstack/ai@0.58.0` and
 * what the examples need from the npm registry. From that project it runs the
 * root README's example (completed with an offline Claude Code adapter),
 * `examples/local-process-basic` and the quickstart's offline path, against
 * aimock on 127.0.0.1. It checks one copy of `@tanstack/ai` and of
 * `@tanstack/ai-sandbox` on disk (capability tokens match by identity: a
 * second copy silently drops `sandbox.file` chunks), that those chunks
 * arrive, and that every run leaves no sandbox folder and no process. A
 * third project, installed by pnpm with hoisting off, holds only the tarballs,
 * their peer and the compiler, and compiles every published entry point with
 * `skipLibCheck: false`.
 * Needs `pnpm build` first (CI builds before the tests).
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { processesWithEnv } from '@testing/support/harness-run'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { INSTALL_TIMEOUT_MS, installedCopies, installProject, PROGRAMS, runProgram, typecheckProject, writeProject, writeTypesProject, type PackageManager } from '../src/fresh-project.js'
import { cleanEnv, packAll, REPO_ROOT, tarballFiles, type Manifest, type PackedPackage } from '../src/pack.js'
import { parseReadmeResult } from '../src/readme-example.js'

const run = promisify(execFile)
const root = mkdtempSync(join(tmpdir(), 'tanstack-install-'))
const MANAGERS: PackageManager[] = ['npm', 'pnpm']
let packed: PackedPackage[] = []
/** Each manager's project, installing side by side (each install waits on the registry and the disk for much of its time). */
const installs = new Map<PackageManager, Promise<unknown>>()
/** The types-only project's install (see `writeTypesProject`). */
let typesInstall: Promise<unknown> = Promise.resolve()

beforeAll(async () => {
  mkdirSync(join(root, 'tarballs'))
  packed = await packAll(join(root, 'tarballs'))
  for (const manager of MANAGERS) {
    const dir = join(root, manager)
    mkdirSync(dir)
    writeProject(dir, packed, manager)
    const install = installProject(dir, manager)
    // Awaited by that manager's suite, which fails with the error; never an unhandled rejection meanwhile.
    install.catch(() => {})
    installs.set(manager, install)
  }
  const typesDir = join(root, 'types-only')
  mkdirSync(typesDir)
  writeTypesProject(typesDir, packed)
  typesInstall = installProject(typesDir, 'pnpm')
  typesInstall.catch(() => {})
}, 180_000)

// Three installed projects: removing them took over a minute on a loaded CI machine.
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
  expect(existsSync(root), 'the suite removes its temp folder').toBe(false)
}, 240_000)

/** Every dependency field of a manifest, as `[field, name, range]`. */
const ranges = (manifest: Manifest) =>
  (['dependencies', 'peerDependencies', 'devDependencies'] as const).flatMap((field) => Object.entries(manifest[field] ?? {}).map(([name, range]) => [field, name, range] as const))

describe('the packed tarballs', () => {
  it('are made outside the repository, one per published package', () => {
    expect(root.startsWith(REPO_ROOT)).toBe(false)
    expect(packed.map((p) => p.manifest.name).sort()).toEqual([
      '@tanstack/ai-claude-code',
      '@tanstack/ai-codex',
      '@tanstack/ai-grok-build',
      '@tanstack/ai-opencode',
      '@tanstack/ai-sandbox',
      '@tanstack/ai-sandbox-cloudflare',
      '@tanstack/ai-sandbox-daytona',
      '@tanstack/ai-sandbox-docker',
      '@tanstack/ai-sandbox-local-process',
      '@tanstack/ai-sandbox-postgres',
      '@tanstack/ai-sandbox-sqlite',
    ])
  })

  it('name real version ranges between our packages, with @tanstack/ai and @tanstack/ai-sandbox as peers', () => {
    const versions = new Map(packed.map((p) => [p.manifest.name, p.manifest.version]))
    for (const { manifest } of packed) {
      expect(manifest.version, manifest.name).toMatch(/^\d+\.\d+\.\d+(-[\w.]+)?$/)
      expect(manifest.version, `${manifest.name} has a release version, not 0.0.0`).not.toBe('0.0.0')
      for (const [field, name, range] of ranges(manifest)) {
        expect(range, `${manifest.name} ${field}.${name}`).not.toMatch(/^(workspace|file|link):/)
        if (field !== 'devDependencies' && versions.has(name)) expect(range, `${manifest.name} ${field}.${name}`).toBe(`^${versions.get(name)}`)
      }
      expect(manifest.peerDependencies?.['@tanstack/ai'], `${manifest.name} peer @tanstack/ai`).toBe('0.58.0')
      expect(manifest.dependencies?.['@tanstack/ai'], `${manifest.name} must not bundle its own @tanstack/ai`).toBeUndefined()
      if (manifest.name === '@tanstack/ai-sandbox') continue
      expect(manifest.peerDependencies?.['@tanstack/ai-sandbox'], `${manifest.name} peer @tanstack/ai-sandbox`).toBe(`^${versions.get('@tanstack/ai-sandbox')}`)
      expect(manifest.dependencies?.['@tanstack/ai-sandbox'], `${manifest.name} must not depend on a copy of core`).toBeUndefined()
    }
  })

  it('hold the built files their exports name, and no sources or tests', async () => {
    for (const { manifest, tarball } of packed) {
      const files = await tarballFiles(tarball)
      const targets = Object.values(manifest.exports ?? {}).flatMap((entry) => (typeof entry === 'string' ? [entry] : Object.values(entry)))
      for (const target of targets) expect(files, `${manifest.name} ships ${target}`).toContain(target.replace(/^\.\//, ''))
      expect(files.filter((file) => /^(src|tests|bench)\//.test(file)), `${manifest.name} ships only dist and docs`).toEqual([])
    }
  })
})

describe('a project that only compiles the published types (pnpm, hoisting off)', () => {
  it('type-checks every entry point with skipLibCheck off, each package bringing the types its .d.ts imports', async () => {
    await typesInstall
    const result = await typecheckProject(join(root, 'types-only'))
    expect(result.stdout + result.stderr).toBe('')
    expect(result.code).toBe(0)
  }, INSTALL_TIMEOUT_MS + 120_000)
})

describe.each<PackageManager>(MANAGERS)('a fresh project installed with %s', (manager) => {
  const dir = join(root, manager)
  // The programs' temp folder: local-process sandboxes, Claude Code's HOME and the quickstart's repository land here.
  const tmp = join(root, `${manager}-tmp`)
  // tsx's compile cache would land there too; it is turned off so the folder holds only what the programs leave.
  const programEnv = { TMPDIR: tmp, TSX_DISABLE_CACHE: '1' }

  beforeAll(async () => {
    mkdirSync(tmp)
    await installs.get(manager)
  }, INSTALL_TIMEOUT_MS + 30_000)

  it('has exactly one copy of @tanstack/ai and of @tanstack/ai-sandbox on disk', async () => {
    expect(installedCopies(dir, '@tanstack/ai')).toHaveLength(1)
    expect(installedCopies(dir, '@tanstack/ai-sandbox')).toHaveLength(1)
    for (const { manifest } of packed) expect(installedCopies(dir, manifest.name), manifest.name).toHaveLength(1)
    if (manager === 'npm') {
      // npm ls exits non-zero on a missing, invalid or extraneous package (a peer out of range included).
      const { stdout } = await run('npm', ['ls', '--all', '--json'], { cwd: dir, env: cleanEnv(), maxBuffer: 64 << 20 })
      expect((JSON.parse(stdout) as { problems?: string[] }).problems ?? []).toEqual([])
    }
  })

  it('type-checks the programs against the published types', async () => {
    const result = await typecheckProject(dir)
    expect(result.stdout + result.stderr).toBe('')
    expect(result.code).toBe(0)
  }, 120_000)

  it("runs the root README's example offline: the run finishes with sandbox.file chunks", async () => {
    const result = await runProgram(dir, PROGRAMS.readme, programEnv)
    expect(result.code, result.stderr).toBe(0)
    const seen = parseReadmeResult(result.stdout)
    expect(seen, `no result line in:\n${result.stdout}\n${result.stderr}`).toBeDefined()
    expect(seen!.types.RUN_FINISHED).toBe(1)
    expect(seen!.types.RUN_ERROR).toBeUndefined()
    expect(seen!.custom).toContain('sandbox.file')
    expect(seen!.filePaths.some((path) => path.endsWith('/notes.txt'))).toBe(true)
  }, 120_000)

  it('runs examples/local-process-basic: two runs share one sandbox, then it is destroyed', async () => {
    const result = await runProgram(dir, PROGRAMS.basic, programEnv)
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(/run 1 > hello from .*\/workspace/)
    expect(result.stdout).toMatch(/run 2 > hi\b/)
    expect(result.stdout).toContain('sandbox destroyed')
  }, 120_000)

  it("runs the quickstart's offline path: Claude Code adds multiply to math.js", async () => {
    const result = await runProgram(dir, PROGRAMS.quickstart, { ...programEnv, NO_COLOR: '1' })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain('Summary')
    expect(result.stdout).toContain('+export function multiply(a, b) {')
  }, 180_000)

  it('leaves no sandbox folder, temp file or process behind', () => {
    const root = `tanstack-ai-sandbox-${process.getuid!()}`
    const sandboxes = join(tmp, root)
    expect(existsSync(sandboxes) ? readdirSync(sandboxes) : []).toEqual([])
    expect(readdirSync(tmp).filter((name) => name !== root)).toEqual([])
    expect(processesWithEnv(`TMPDIR=${tmp}`)).toEqual([])
  })
})
