/**
 * Replay determinism of the Claude Code translator on every recorded `claude`
 * session: an attaching host re-translates a run's journal from byte 0 and
 * must get the chunks the first host stored, ids included. The checks (and
 * why they hold) are @testing/support/journal-determinism's.
 */
import { describeJournalDeterminism } from '@testing/support/journal-determinism'
import { cliVersions, recording, translate } from './helpers/recordings.js'

describeJournalDeterminism({
  cli: 'claude',
  versions: cliVersions(),
  scenarios: ['text', 'tools', 'thinking', 'resume', 'structured-output', 'api-error'],
  recording,
  translate,
})
