import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts', internal: 'src/internal.ts', 'testkit/index': 'src/testkit/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: ['vitest', '@tanstack/ai'],
})
