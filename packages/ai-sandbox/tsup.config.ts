import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts', internal: 'src/internal.ts', 'testkit/index': 'src/testkit/index.ts', 'persistence/index': 'src/persistence/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // Keep the `node:` prefix (tsup strips it by default): workerd and bundlers for it resolve only `node:*` builtins.
  removeNodeProtocol: false,
  external: ['vitest', '@tanstack/ai'],
})
