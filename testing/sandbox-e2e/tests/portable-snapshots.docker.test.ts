/**
 * A thread moves between providers through its checkpoints (spec 000
 * "Portable sandbox snapshots"): runs on local-process, then on Docker
 * (BusyBox image), then on local-process again, one persistence value for
 * all. Each run's new private sandbox starts from the previous run's
 * checkpoint, with the same bytes and modes, whatever provider wrote it.
 * Every container carries a label unique to this file; none is left.
 * Skips naming the engine when it is not answering, fails instead under
 * REQUIRE_DOCKER=1.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect, it } from 'vitest'
import { defineSandbox, memorySandboxSnapshots, withSandbox } from '@tanstack/ai-sandbox'
import { withPersistence } from '@tanstack/ai-sandbox/persistence'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

const IMAGE = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `snap-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([IMAGE], { needsBridge: false })
const tmp = makeRoot('portable-snapshots-docker')

describeWithDocker('portable snapshots across providers', reason, () => {
  afterAll(async () => {
    const left = tmp.entries()
    tmp.cleanup()
    expect(left, 'every local sandbox directory is removed').toEqual([])
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'no container, image or volume of this file is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 60_000)

  it('local-process → Docker → local-process: each new sandbox starts from the checkpoint the other provider wrote', async () => {
    const local = defineSandbox({ id: 'snap-move', provider: localProcessSandbox({ root: tmp.root }), lifecycle: { reuse: 'none' } })
    const docker = defineSandbox({ id: 'snap-move', provider: dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500 }), lifecycle: { reuse: 'none', snapshot: 'none' } })
    const snapshots = await memorySandboxSnapshots({ sandbox: local })
    const on = (sandbox: typeof local) => [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })]
    const listing = 'find . -path ./.tanstack -prune -o -print | LC_ALL=C sort; cat src/main.txt; wc -c < data.bin; ls -l data.bin | cut -c1-10'

    const first = await runShell({ threadId: 't-move', middleware: on(local), command: "mkdir -p src empty && printf 'from local\\n' > src/main.txt && head -c 3000 /dev/urandom > data.bin && chmod 600 data.bin && echo ok" })
    expect(first.error).toBeUndefined()
    const written = await snapshots.latest('t-move')

    const onDocker = await runShell({ threadId: 't-move', middleware: on(docker), command: `${listing}; printf 'from docker\\n' >> src/main.txt` })
    expect(onDocker.error).toBeUndefined()
    expect(onDocker.text).toContain('./empty')
    expect(onDocker.text).toContain('from local')
    expect(onDocker.text).toMatch(/3000\s+-rw-------/)
    const fromDocker = await snapshots.latest('t-move')
    expect(fromDocker?.sequence).toBe(2)
    const fileOf = (checkpoint: typeof written, path: string) => checkpoint?.manifest.entries.find((entry) => entry.path === path)
    expect(fileOf(fromDocker, 'data.bin'), 'the bytes and mode Docker restored are the ones local-process stored').toEqual(fileOf(written, 'data.bin'))

    const back = await runShell({ threadId: 't-move', middleware: on(local), command: 'cat src/main.txt; ls -d empty' })
    expect(back.error).toBeUndefined()
    expect(back.text).toBe('from local\nfrom docker\nempty\n')
  })
})
