import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // Keep the `node:` prefix (tsup strips it by default): workerd and bundlers for it resolve only `node:*` builtins.
  removeNodeProtocol: false,
  external: ['@tanstack/ai', '@tanstack/ai-sandbox'],
})
