/**
 * File events on the Cloudflare provider (no native watcher: the portable
 * find + stat poll), with cloudflareSandbox inside workerd (Miniflare) and the
 * real @cloudflare/sandbox Durable Object driving stand-in containers (Debian,
 * with git): watchWorkspace, a chat() run's sandbox.file chunks and
 * file.changed diffs in a git workspace, and a later run of a thread, over
 * the shared cases of @testing/support/file-event-cases. Afterwards no
 * container may remain (the lab checks). Skips naming the engine or image
 * when missing, and fails instead under REQUIRE_DOCKER=1.
 */
import { describeWithDocker } from '@testing/support/docker-engine'
import { pollFileEventCases } from '@testing/support/file-event-cases'
import { DEFAULT_WORKDIR } from '../src/config.js'
import { cloudflareTestLab } from './helpers/lab.js'

const lab = await cloudflareTestLab()
// The cases take a provider while they register; the lab's is one RPC away.
const provider = lab.reason === null ? await lab.provider() : undefined

describeWithDocker('file events on Cloudflare (poll, stand-in)', lab.reason, () => {
  lab.cleanupAfter()
  pollFileEventCases('cloudflare', provider!, true, DEFAULT_WORKDIR)
})
