// Builds the browser app (src/client) into dist/client; the server (src/server) serves it.
import { defineConfig } from 'vite'

export default defineConfig({
  root: 'src/client',
  build: { outDir: '../../dist/client', emptyOutDir: true },
  logLevel: 'warn',
})
