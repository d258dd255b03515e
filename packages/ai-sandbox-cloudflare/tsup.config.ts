import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts', agent: 'src/agent.ts', runner: 'src/runner.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'neutral',
  external: ['@tanstack/ai', '@tanstack/ai-sandbox', '@cloudflare/sandbox', 'zod', /^node:/, /^cloudflare:/],
})
