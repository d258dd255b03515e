// Unused files, exports and dependencies (knip), run by `pnpm knip` and CI.
// Public API: each published package's `exports` (knip reads them from its
// package.json: `src/index.ts`, and core's `src/testkit/index.ts` through the
// tsup entries). Tests, type tests, benchmarks, example programs and suite
// helpers are entries too. An export used only inside its own module is not a
// finding: modules export their constants and helpers for their docstrings and
// tests to name, and a file-local use keeps them honest.
import type { KnipConfig } from 'knip'

const tests = ['tests/**/*.{test,test-d}.ts']

const config: KnipConfig = {
  ignoreExportsUsedInFile: true,
  // Operating-system tools that tests start (coreutils, util-linux), not npm packages.
  ignoreBinaries: ['mkfifo', 'truncate', 'setpriv', 'unshare'],
  workspaces: {
    // publint and attw run in every package folder through `pnpm --filter ./packages/* exec`, which knip does not read.
    '.': { project: ['*.{ts,js}'], ignoreDependencies: ['publint', '@arethetypeswrong/cli'] },
    // The testkit entry imports vitest, an optional peer: only users who run the conformance kits install it.
    'packages/ai-sandbox': {
      entry: ['src/index.ts', 'src/internal.ts', 'src/testkit/index.ts', ...tests, 'bench/**/*.ts'],
      project: ['src/**/*.ts', 'tests/**/*.ts', 'bench/**/*.ts'],
      ignoreDependencies: ['vitest'],
    },
    'packages/*': {
      entry: ['src/index.ts', 'src/testkit/index.ts', ...tests, 'bench/**/*.ts'],
      project: ['src/**/*.ts', 'tests/**/*.ts', 'bench/**/*.ts'],
    },
    'testing/*': { entry: [...tests, 'src/**/*.ts'], project: ['src/**/*.ts', 'tests/**/*.ts'] },
    // The Cloudflare stand-in's control server runs inside its image (perl is the image's, not the host's).
    'testing/cloudflare-standin': { entry: [...tests, 'src/**/*.ts', 'server/main.ts'], project: ['src/**/*.ts', 'server/**/*.ts', 'tests/**/*.ts'], ignoreBinaries: ['perl'] },
    // The real agent CLIs: their binaries are found at run time with `createRequire(from).resolve('<cli>/package.json')`.
    'testing/claude-code-e2e': { entry: [...tests, 'src/**/*.ts'], project: ['src/**/*.ts', 'tests/**/*.ts'], ignoreDependencies: ['@anthropic-ai/claude-code'] },
    'testing/codex-e2e': { entry: [...tests, 'src/**/*.ts'], project: ['src/**/*.ts', 'tests/**/*.ts'], ignoreDependencies: ['@openai/codex'] },
    'testing/opencode-e2e': { entry: [...tests, 'src/**/*.ts'], project: ['src/**/*.ts', 'tests/**/*.ts'], ignoreDependencies: ['opencode-ai'] },
    // The web example: knip finds its entries from the package scripts and the vite config; the Claude Code binary is resolved at run time.
    'examples/sandbox-web': { entry: [...tests], project: ['src/**/*.{ts,tsx}', 'tests/**/*.ts'], ignoreDependencies: ['@anthropic-ai/claude-code'] },
    // The Cloudflare example: its Worker is an entry (wrangler.jsonc's `main`; the launcher bundles it by path), the
    // launcher and the deploy script come from the package scripts; the Claude Code binary is resolved at run time.
    'examples/sandbox-cloudflare': { entry: ['src/worker.ts', ...tests], project: ['src/**/*.ts', 'tests/**/*.ts'], ignoreDependencies: ['@anthropic-ai/claude-code'] },
    'examples/*': { entry: ['src/main.ts', 'src/minimal.ts', 'src/*.mjs', ...tests], project: ['src/**/*.{ts,mjs}', 'tests/**/*.ts'] },
  },
}

export default config
