// Builds the browser app (src/client) into dist/client; the server (src/server) serves it.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

export default defineConfig({
  root: fileURLToPath(new URL('./src/client', import.meta.url)),
  build: { outDir: fileURLToPath(new URL('./dist/client', import.meta.url)), emptyOutDir: true },
  logLevel: 'warn',
})
