// A journal follow whose reader is gone without killing it (its host was
// SIGKILLed mid-run) must not stay in the container for the container's whole
// life: once the run's journal is deleted, its `tail -f` stops by itself. A
// follow of a live run's journal keeps running. On the Debian image
// (GNU tail) and the BusyBox image (BusyBox tail, which polls). Skips naming
// the engine when it is not answering, and fails instead under REQUIRE_DOCKER=1.
import { randomUUID } from 'node:crypto'
import { expect, it } from 'vitest'
import { journalFollowCommand, journalPaths, shellQuote, startJournaledAgent, type SandboxHandle } from '@tanstack/ai-sandbox'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

/** How many `tail` processes in the container follow `journal` (read through /proc, as BusyBox has no `ps -o args`). */
async function tailsOf(handle: SandboxHandle, journal: string): Promise<number> {
  const script = `n=0; for f in /proc/[0-9]*/cmdline; do c=$(tr '\\000' ' ' < "$f" 2>/dev/null); case "$c" in "tail "*${shellQuote(journal)}*) n=$((n+1));; esac; done; echo $n`
  return Number((await handle.process.exec(script)).stdout.trim())
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return check()
}

describeWithDocker('docker journal follow without its reader', await dockerMissing([DEBIAN_IMAGE, BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const { create } = useDockerSandboxes('journal-follow-orphan')
  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    it(`stops once the journal is deleted, and not before (${image})`, async () => {
      const handle = await create({ image, killGraceMs: 500 })
      const runId = `orphan-${randomUUID()}`
      const paths = journalPaths(runId)
      // A live run: its waiting shell is what tells a follow that a sentinel may still come.
      await startJournaledAgent(handle, `echo '{"line":1}'; sleep 120`, { journal: { runId } })
      // A reader whose host died: its follow runs on and nobody will ever kill it.
      const orphan = await handle.process.spawn(journalFollowCommand(paths))
      try {
        expect(await until(async () => (await tailsOf(handle, paths.journal)) === 1, 10_000), 'the follow runs one tail').toBe(true)
        await new Promise((resolve) => setTimeout(resolve, 2_500))
        expect(await tailsOf(handle, paths.journal), 'a follow of an existing journal keeps running').toBe(1)

        expect((await handle.process.exec(`rm -f ${shellQuote(paths.journal)} ${shellQuote(paths.stderr)}`)).exitCode).toBe(0)
        expect(await until(async () => (await tailsOf(handle, paths.journal)) === 0, 10_000), 'no tail outlives its deleted journal').toBe(true)
      } finally {
        await orphan.kill().catch(() => undefined)
      }
    })
  }
})
