import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  // Declarations without a second type check (TypeScript's noCheck): `pnpm typecheck` checks src with the
  // tests, the emitted files are byte-identical, and the build takes half the CPU (core: 55 to 28 s).
  dts: { compilerOptions: { noCheck: true } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: ['@tanstack/ai', '@tanstack/ai-sandbox', 'pg'],
})
