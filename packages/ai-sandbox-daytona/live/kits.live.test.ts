// The live lane (`pnpm test:live`, never `pnpm test`): the provider, journal
// and reaper kits against Daytona's real service with the caller's key.
// DAYTONA_API_KEY is required; DAYTONA_API_URL, DAYTONA_TARGET and
// DAYTONA_SNAPSHOT (a snapshot with git and node; the kits' git and ports
// cases need them, and report what is missing) are optional.
import { describe, expect, it } from 'vitest'
import { runJournalConformance, runReaperConformance, runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { daytonaSandbox } from '../src/index.js'

const key = process.env.DAYTONA_API_KEY
const provider = () =>
  daytonaSandbox({
    ...(process.env.DAYTONA_API_URL ? { apiUrl: process.env.DAYTONA_API_URL } : {}),
    ...(process.env.DAYTONA_TARGET ? { target: process.env.DAYTONA_TARGET } : {}),
    ...(process.env.DAYTONA_SNAPSHOT ? { snapshot: process.env.DAYTONA_SNAPSHOT } : {}),
    // Sandboxes a failed run leaves behind stop after 15 minutes and are deleted once stopped.
    autoStopInterval: 15,
    ephemeral: true,
    labels: { 'tanstack-test.lane': 'live' },
  })

if (!key) {
  describe('daytona live lane', () => {
    it('needs DAYTONA_API_KEY', () => {
      expect.fail('Set DAYTONA_API_KEY (and optionally DAYTONA_API_URL, DAYTONA_TARGET, DAYTONA_SNAPSHOT) to run pnpm test:live against Daytona.')
    })
  })
} else {
  runSandboxProviderConformance('daytona (live)', { makeProvider: provider, timeoutMs: 300_000 })
  runJournalConformance('daytona (live)', { makeProvider: provider })
  runReaperConformance('daytona (live)', { makeProvider: provider })
}
