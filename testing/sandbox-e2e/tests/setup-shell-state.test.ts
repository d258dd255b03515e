/**
 * The setup shell's cwd/env carry-over when a step installs its own EXIT
 * trap, leaves with `exit` or `exec`, on the real local-process provider
 * (the host's /bin/sh, dash here). Cases in `helpers/setup-shell-cases.ts`.
 */
import { afterAll, describe, expect } from 'vitest'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot } from './helpers/run-chat.js'
import { setupShellStateCases } from './helpers/setup-shell-cases.js'

const tmp = makeRoot('setup-state')

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox, made or half-made, is gone').toEqual([])
})

describe('setup shell state on local-process', () => {
  setupShellStateCases('local', localProcessSandbox({ root: tmp.root }))
})
