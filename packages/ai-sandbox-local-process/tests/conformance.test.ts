// The shared provider contract, run against localProcessSandbox in a temp root
// that is removed (and checked empty) after the suite.
import { existsSync } from 'node:fs'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { localProcessSandbox } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'lp-conformance-'))

runSandboxProviderConformance('local-process', {
  makeProvider: () => localProcessSandbox({ root }),
})

afterAll(() => {
  expect(readdirSync(root)).toEqual([])
  rmSync(root, { recursive: true, force: true })
  expect(existsSync(root)).toBe(false)
})
