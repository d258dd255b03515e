// The provider conformance kit against the example directory provider, as a
// provider author would run it: a fresh root per run, removed afterwards.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { directorySandbox } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'directory-conformance-'))
afterAll(() => {
  // Every sandbox the kit created was destroyed, so nothing is left under the root.
  expect(readdirSync(root), 'sandbox folders left behind').toEqual([])
  rmSync(root, { recursive: true, force: true })
})

runSandboxProviderConformance('directory', {
  makeProvider: () => directorySandbox({ root }),
  // What of the provider is left: its sandbox folders under the root (a destroy in progress is `<id>.destroying`).
  listResources: () => readdirSync(root),
})
