// Root test configuration. Vitest 4 reads `test.projects` from this file and
// silently ignores a `vitest.workspace.ts`, so there is deliberately none.
// Every package and end-to-end suite with a `tests/` folder becomes a project;
// the packages' suites load our packages' sources, the end-to-end suites their
// builds (see BUILT_PACKAGE).
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { join, relative } from 'node:path'
import { defineConfig } from 'vitest/config'
import { LongestFirstSequencer } from './vitest.sequencer.js'

const root = fileURLToPath(new URL('.', import.meta.url))

const alias = [
  { find: /^@tanstack\/ai-sandbox\/internal$/, replacement: join(root, 'packages/ai-sandbox/src/internal.ts') },
  { find: /^@tanstack\/ai-sandbox\/testkit$/, replacement: join(root, 'packages/ai-sandbox/src/testkit/index.ts') },
  { find: /^@tanstack\/ai-sandbox\/persistence$/, replacement: join(root, 'packages/ai-sandbox/src/persistence/index.ts') },
  { find: /^@tanstack\/ai-sandbox$/, replacement: join(root, 'packages/ai-sandbox/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-local-process$/, replacement: join(root, 'packages/ai-sandbox-local-process/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-docker$/, replacement: join(root, 'packages/ai-sandbox-docker/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-daytona$/, replacement: join(root, 'packages/ai-sandbox-daytona/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-cloudflare$/, replacement: join(root, 'packages/ai-sandbox-cloudflare/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-sqlite$/, replacement: join(root, 'packages/ai-sandbox-sqlite/src/index.ts') },
  { find: /^@tanstack\/ai-sandbox-postgres$/, replacement: join(root, 'packages/ai-sandbox-postgres/src/index.ts') },
  { find: /^@tanstack\/ai-claude-code$/, replacement: join(root, 'packages/ai-claude-code/src/index.ts') },
  { find: /^@tanstack\/ai-opencode$/, replacement: join(root, 'packages/ai-opencode/src/index.ts') },
  { find: /^@tanstack\/ai-grok-build$/, replacement: join(root, 'packages/ai-grok-build/src/index.ts') },
  { find: /^@tanstack\/ai-codex$/, replacement: join(root, 'packages/ai-codex/src/index.ts') },
]

/**
 * `TANSTACK_TEST_LANE=node-versions` (scripts/ci/node-lane.sh, which `.ci/run`
 * runs under Node 22 and 24): each package's unit suites and the Claude Code
 * end-to-end suite on local-process (the adapter's host side: the CLI's
 * process, its stream parsing, the chat loop); of the Docker provider its pure
 * suites and `memory-bounds` (the Engine API's hijacked exec connection paused
 * and resumed under unread output: Node's http and stream code, the part of
 * the provider that can change with Node); of the Daytona
 * provider only its config suite (the rest needs the stand-in's containers), and the same of the
 * Cloudflare provider (the rest needs workerd and its containers). The Claude
 * Code suite in a Docker sandbox left the lanes (77 s of each): its host side
 * is the local-process suite's plus that Engine API connection, and the rest
 * (the CLI in the container, its HOME there, host.docker.internal) is engine
 * and shell behaviour. Left to Node 20,
 * which runs every suite: the provider, journal and reaper conformance kits
 * (and the provider kit's own fs-race self-test, a busy swapper loop),
 * the Docker provider's engine suites, and the cross-process races of the
 * SQLite and PostgreSQL stores (`multi-process`, `open-race`, `fencing`).
 * Those prove shell, engine and database behaviour that does not change with
 * Node, and each takes tens of seconds; the stores' own suites, which load the
 * native better-sqlite3 build of each Node, stay. Without it every suite runs.
 */
const lane = process.env.TANSTACK_TEST_LANE
const LANE_FILES: Record<string, string[]> = {
  'ai-sandbox-docker': ['tests/config.test.ts', 'tests/demux.test.ts', 'tests/job.test.ts', 'tests/memory-bounds.test.ts'],
  'ai-sandbox-daytona': ['tests/config.test.ts'],
  'ai-sandbox-cloudflare': ['tests/config.test.ts'],
  'claude-code-e2e': ['tests/claude-code.e2e.test.ts'],
}
const LANE_EXCLUDE = ['**/journal-conformance*.test.ts', '**/reaper-conformance*.test.ts', '**/testkit/host-side-fs-races.test.ts']
const LANE_EXCLUDE_IN: Record<string, string[]> = {
  'ai-sandbox-local-process': ['tests/conformance.test.ts'],
  'ai-sandbox-sqlite': ['tests/multi-process.test.ts', 'tests/open-race.test.ts'],
  'ai-sandbox-postgres': ['tests/multi-process.test.ts', 'tests/fencing.test.ts'],
}

/**
 * `TANSTACK_TEST_LANE_SHARD=k/n` (with the lane; `.ci/run` gives Node 22 `1/2`
 * and Node 24 `2/2`): the lanes share the packages' unit files instead of each
 * running all of them, since Node 20 already runs every one. The files that
 * touch what changes between Node versions run on every lane: the SQLite and
 * PostgreSQL store suites (the native better-sqlite3 build of each Node, the
 * `pg` driver over Node's sockets) and the lane's own picks above (the Docker
 * Engine API connection, the Claude Code CLI's process and stream). The rest
 * is dealt out longest first to the shard with the least so far, by the times
 * in scripts/ci/test-durations.json (a file not there counts 1 s), so a file
 * always lands on the same lane. Each lane does a third less (333 of 505
 * recorded seconds; a lane alone took 262 s of CPU before).
 */
const LANE_EVERY_SHARD = new Set(['ai-sandbox-sqlite', 'ai-sandbox-postgres', ...Object.keys(LANE_FILES)])
const laneShard = (() => {
  const value = process.env.TANSTACK_TEST_LANE_SHARD
  if (value === undefined || value === '') return undefined
  const match = /^([1-9]\d*)\/([1-9]\d*)$/.exec(value)
  if (!match || Number(match[1]) > Number(match[2])) throw new Error(`TANSTACK_TEST_LANE_SHARD=${value}: expected k/n with 1 <= k <= n, e.g. 1/2`)
  return { index: Number(match[1]) - 1, count: Number(match[2]) }
})()

/** Whether the lane leaves out `path` (relative to project `name`'s folder): LANE_EXCLUDE and LANE_EXCLUDE_IN, whose patterns use only `**` and `*`. */
function laneExcludes(name: string, path: string): boolean {
  const asRegExp = (pattern: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*\*\/|\*/g, (glob) => (glob === '*' ? '[^/]*' : '(?:.*/)?'))}$`)
  return [...LANE_EXCLUDE, ...(LANE_EXCLUDE_IN[name] ?? [])].some((pattern) => asRegExp(pattern).test(path))
}

/** Repository-relative `*.test.ts` paths under `dir`, sorted. */
function testFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => relative(root, join(dir, name)))
    .sort()
}

/** The repository-relative test files of this lane shard, over the packages' projects not in LANE_EVERY_SHARD. */
function shardFiles(shard: { index: number; count: number }): Set<string> {
  const durations = existsSync(join(root, 'scripts/ci/test-durations.json')) ? (JSON.parse(readFileSync(join(root, 'scripts/ci/test-durations.json'), 'utf8')) as Record<string, number>) : {}
  const files = readdirSync(join(root, 'packages'))
    .filter((name) => !LANE_EVERY_SHARD.has(name))
    .flatMap((name) => testFilesUnder(join(root, 'packages', name, 'tests')).filter((path) => !laneExcludes(name, relative(join(root, 'packages', name), join(root, path)))))
    .map((path) => ({ path, seconds: durations[path] ?? 1 }))
    .sort((a, b) => b.seconds - a.seconds || (a.path < b.path ? -1 : 1))
  const load = Array.from({ length: shard.count }, () => 0)
  const mine = new Set<string>()
  for (const file of files) {
    const lightest = load.indexOf(Math.min(...load))
    load[lightest]! += file.seconds
    if (lightest === shard.index) mine.add(file.path)
  }
  return mine
}
const laneShardFiles = lane === 'node-versions' && laneShard ? shardFiles(laneShard) : undefined

/** A project's include on the lane: its lane picks, its share of a shard, or all of its files. */
function laneInclude(dir: string, name: string): string[] {
  if (LANE_FILES[name]) return LANE_FILES[name]
  if (!laneShardFiles || LANE_EVERY_SHARD.has(name)) return ['tests/**/*.test.ts']
  return testFilesUnder(join(dir, name, 'tests')).filter((path) => laneShardFiles.has(path)).map((path) => relative(join(dir, name), join(root, path)))
}

/**
 * Projects whose worker keeps the modules it loaded from one file to the next
 * (`isolate: false`; vitest otherwise starts a fresh process per file): the
 * packages' own suites, which load the same package sources file after file,
 * every end-to-end and example suite, and every project of the Node lanes.
 * Each file still owns what it starts (servers, CLIs, containers by a label of
 * its own) and cleans it up in its own hooks; what is shared is the module
 * cache. It cut a lane's CPU time by a fifth (225 s to 181 s), and the summed
 * import time of the end-to-end suites by two thirds (sandbox-e2e's 21
 * local files: 37 s to 10.5 s). Not the Docker provider's few long engine
 * suites, which keep a process each.
 */
const ISOLATED_PACKAGES = new Set(['ai-sandbox-docker'])
function sharesModules(folder: string, name: string): boolean {
  return lane === 'node-versions' || folder !== 'packages' || !ISOLATED_PACKAGES.has(name)
}

/**
 * Where our packages resolve. A package's own suites load its TypeScript
 * sources (`alias`, on the `packages/*` projects only), so a unit test never
 * runs a stale build and one copy of each capability token is loaded. The
 * end-to-end suites and the examples' tests load the built packages, as a user
 * and their own server processes (started from `dist/`) do: `pnpm build`
 * comes before `pnpm test`. Those builds are left to Node itself rather than
 * to vitest's module runner (`BUILT_PACKAGE` is external), which cut a small
 * end-to-end file's CPU time by about a third (import 4-8 s to 2-3 s): each
 * such file runs in a fresh process and used to evaluate hundreds of source
 * modules of the packages through the runner.
 */
const BUILT_PACKAGE = /\/packages\/[^/]+\/dist\//

function projectsIn(folder: string) {
  const dir = join(root, folder)
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((name) => existsSync(join(dir, name, 'tests')))
    .filter((name) => lane !== 'node-versions' || folder === 'packages' || name in LANE_FILES)
    .map((name) => ({
      extends: true as const,
      ...(folder === 'packages' ? { resolve: { alias } } : {}),
      test: {
        name,
        root: join(dir, name),
        include: lane === 'node-versions' ? laneInclude(dir, name) : ['tests/**/*.test.ts'],
        ...(lane === 'node-versions' ? { exclude: ['**/node_modules/**', ...LANE_EXCLUDE, ...(LANE_EXCLUDE_IN[name] ?? [])] } : {}),
        ...(sharesModules(folder, name) ? { isolate: false } : {}),
        ...(folder === 'packages' ? {} : { server: { deps: { external: [BUILT_PACKAGE] } } }),
        // A suite that needs a service started once for all its files (a database) has tests/global-setup.ts.
        ...(existsSync(join(dir, name, 'tests', 'global-setup.ts')) ? { globalSetup: [join(dir, name, 'tests', 'global-setup.ts')] } : {}),
      },
    }))
}

/**
 * Files run side by side. Most of them wait on containers, agent CLIs and
 * databases rather than the CPU, so vitest's default (one worker per core
 * but one) left a 2-core machine running one file at a time at a load under
 * 1. Every file owns what it starts (containers by a label of its own, its
 * own database schema, ports chosen by the OS, temp folders), so files do
 * not see each other. TANSTACK_TEST_WORKERS overrides the count.
 */
const workers = Number(process.env.TANSTACK_TEST_WORKERS ?? Math.max(3, availableParallelism() - 1))

/**
 * Transformed modules are kept on disk (node_modules/.experimental-vitest-cache,
 * keyed by each file's content and id), so the ~40 projects that load the same
 * package sources transform them once, a worker reads them without asking the
 * main process, and the Node 22 and 24 lanes of `.ci/run` reuse what the Node 20
 * run wrote. Measured on the `ai-sandbox` project on 2 cores: CPU time down
 * from 126 s to 106 s. `vitest --clearCache` empties it.
 */
const fsModuleCache = true

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: workers,
    sequence: { sequencer: LongestFirstSequencer },
    experimental: { fsModuleCache },
    projects: [...projectsIn('packages'), ...projectsIn('examples'), ...projectsIn('testing')],
  },
})
