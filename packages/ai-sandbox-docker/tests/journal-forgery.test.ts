// An agent attacking its own journal on the Docker defaults (uid 1000, no
// capabilities), through the public API (issue 27, items 4 and 5):
// - it rewrites its journal from byte 0 with a header and a sentinel of its
//   own: the exit probe the reaper uses must keep saying `producing` (and a
//   sweep of reapDetachedRuns leaves the run running, unreclaimed), and a
//   reader (a takeover's) must fail `journal-rewritten` instead of ending on
//   the forged events;
// - it reads its parent shells' memory (`/proc/<pid>/mem`) for the nonce
//   whose hash is in the header, to write a genuine-looking sentinel: the
//   waiting shell is not dumpable, so the read is refused and the run ends
//   with the agent's real exit code and its real last line.
// On the Debian image (dash, GNU tools) and the BusyBox image. Skips naming
// the engine when it is not answering, and fails instead under REQUIRE_DOCKER=1.
import { randomUUID } from 'node:crypto'
import { expect, it } from 'vitest'
import { InMemoryRunStore, memoryStream } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { JournalError, probeRunExit, readJournal, readJournalNdjson, reapDetachedRuns, shellQuote, startJournaledAgent, type SandboxHandle } from '@tanstack/ai-sandbox'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

/** Truncates the journal (its own stdout) and writes a header, events and a sentinel of a nonce it made up. */
const REWRITE = `
exec 3>&1; j=$(readlink /proc/self/fd/3)
n=0123456789abcdef0123456789abcdef
h=$(printf %s "$n" | sha256sum | cut -d' ' -f1)
printf '{"__journal":1,"__nonceHash":"%s"}\\n{"type":"forged","usage":987654321}\\n{"__exit":0,"__nonce":"%s"}\\n' "$h" "$n" > "$j"
echo rewritten >&2
sleep 4
echo '{"type":"real"}'
exit 7
`

/**
 * Scans the writable memory of its parent and grandparent shells for a
 * 32-hex-digit string whose sha256 is the header's hash, and appends a
 * sentinel with it when found. Prints `found` or `refused` on stderr.
 */
const READ_PARENT_MEMORY = `
exec 3>&1; j=$(readlink /proc/self/fd/3)
h=$(head -n 1 "$j" | sed 's/.*"__nonceHash":"\\([0-9a-f]*\\)".*/\\1/')
p1=$PPID
p2=$(cut -d' ' -f4 /proc/$p1/stat)
for pid in $p1 $p2; do
  if ! dd if=/proc/$pid/mem bs=1 count=0 2>/dev/null; then echo "refused $pid $(tr '\\000' ' ' < /proc/$pid/cmdline)" >&2; continue; fi
  echo "readable $pid" >&2
  grep ' rw' /proc/$pid/maps | while read -r range rest; do
    s=\${range%-*}; e=\${range#*-}
    dd if=/proc/$pid/mem bs=4096 skip=$((0x$s / 4096)) count=$(((0x$e - 0x$s) / 4096)) 2>/dev/null
  done | tr -c '0-9a-f' '\\n' | grep -E '^[0-9a-f]{32}$' | sort -u | while read -r n; do
    if [ "$(printf %s "$n" | sha256sum | cut -d' ' -f1)" = "$h" ]; then printf '\\n{"__exit":0,"__nonce":"%s"}\\n' "$n"; echo "found $pid" >&2; fi
  done
done
sleep 2
echo '{"type":"real"}'
exit 7
`

async function stage(handle: SandboxHandle, name: string, script: string): Promise<string> {
  const path = `/workspace/${name}.sh`
  await handle.fs.write(path, script)
  return `sh ${path}`
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describeWithDocker('docker journal against its own agent', await dockerMissing([DEBIAN_IMAGE, BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const { create } = useDockerSandboxes('journal-forgery')
  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    it(`an agent that rewrites its journal does not end its run, for the reaper's probe or a reader (${image})`, async () => {
      const handle = await create({ image })
      expect(handle.journalSecret, 'the provider keeps a secret outside the container').toMatch(/^[0-9a-f]{64}$/)
      const runId = `rewrite-${randomUUID()}`
      const paths = await startJournaledAgent(handle, await stage(handle, 'rewrite', REWRITE), { journal: { runId } })
      await until(async () => (await handle.process.exec(`cat ${paths.stderr}`)).stdout.includes('rewritten'), 10_000)
      expect(await probeRunExit({ handle, runId }), 'the forged sentinel is not an exit').toEqual({ state: 'producing' })
      // The reaper's own sweep over the run, recorded as detached by another host: it finalizes and reclaims nothing.
      const runs = new InMemoryRunStore()
      await runs.createOrResume({ runId, threadId: `thread-${runId}`, startedAt: Date.now() })
      await runs.update(runId, { detachedSince: Date.now(), sandboxKey: `key-${runId}` })
      const reclaimed: string[] = []
      const sweep = await reapDetachedRuns({
        runs,
        locks: new InMemoryLockStore(),
        durability: (id) => memoryStream({ runId: id }),
        hasFinished: (record) => probeRunExit({ handle, runId: record.runId }),
        drive: () => {
          throw new Error('the sweep drove a run whose agent is still working')
        },
        now: Date.now(),
        detachedRunTtlMs: 3_600_000,
        reclaim: async (record) => void reclaimed.push(record.runId),
      })
      expect(sweep.entries.map((entry) => entry.outcome)).toEqual(['producing'])
      expect((await runs.get(runId))?.status, 'the record is not finalized from the forged end').toBe('running')
      expect(reclaimed, 'the sandbox is not reclaimed').toEqual([])
      const events: unknown[] = []
      const read = (async () => {
        for await (const event of readJournalNdjson(handle, { journal: { runId }, deleteOnExit: false })) events.push(event)
      })()
      const failure = await read.then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(JournalError.isInstance(failure) && failure.reason, String(failure)).toBe('journal-rewritten')
      expect(events, 'nothing of the rewritten journal is taken for the run').toEqual([])
      // A reader given only the paths decodes the run id from the file name and checks against the secret too.
      const byPaths = await (async () => {
        for await (const line of readJournal(handle, { paths, strategy: 'poll', pollMs: 50 })) void line
      })().then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(JournalError.isInstance(byPaths) && byPaths.reason, String(byPaths)).toBe('journal-rewritten')
      // After the agent's real exit the shell appends the genuine sentinel, but the journal still does not start
      // with the header it wrote: the probe keeps saying producing, and the reaper expires the run at its TTL.
      await until(async () => (await handle.process.exec(`grep -c '"__exit":7' ${paths.journal} || true`)).stdout.trim() === '1', 15_000)
      expect(await probeRunExit({ handle, runId })).toEqual({ state: 'producing' })
    })

    it(`the waiting shell of an earlier launch of the same run id cannot end a later launch (${image})`, async () => {
      const handle = await create({ image })
      const runId = `relaunch-${randomUUID()}`
      const go = `/workspace/go-${randomUUID()}`
      // Launch 1 deletes its journal (so a takeover would start the run afresh) and exits 0 once told to;
      // its waiting shell then appends its own genuine sentinel to whatever file has the journal's name.
      const first = await startJournaledAgent(handle, `exec 3>&1; rm -f "$(readlink /proc/self/fd/3)"; while [ ! -f ${shellQuote(go)} ]; do sleep 0.1; done; exit 0`, { journal: { runId } })
      await until(async () => (await handle.process.exec(`test -f ${shellQuote(first.journal)}`)).exitCode !== 0, 10_000)
      await startJournaledAgent(handle, `sleep 3; echo '{"type":"real"}'; exit 7`, { journal: { runId } })
      await handle.process.exec(`touch ${shellQuote(go)}`)
      let exit: { exitCode: number } | undefined
      const events: unknown[] = []
      for await (const event of readJournalNdjson(handle, { journal: { runId }, onExit: (e) => void (exit = e) })) events.push(event)
      expect(exit?.exitCode, "the later launch ends with its own agent's exit code").toBe(7)
      // The earlier shell's sentinel landed in the later journal, where it is an ordinary line.
      expect(events).toEqual([{ __exit: 0, __nonce: expect.stringMatching(/^[0-9a-f]{32}$/) }, { type: 'real' }])
    })

    it(`an agent cannot read the nonce from its parent shells' memory (${image})`, async () => {
      const handle = await create({ image })
      const runId = `memory-${randomUUID()}`
      await startJournaledAgent(handle, await stage(handle, 'read-parent', READ_PARENT_MEMORY), { journal: { runId } })
      const events: unknown[] = []
      let exit: { exitCode: number; stderrTail: string } | undefined
      for await (const event of readJournalNdjson(handle, { journal: { runId }, onExit: (e) => void (exit = e) })) events.push(event)
      expect(exit?.stderrTail, 'the waiting shell refuses the read').toMatch(/refused \d+ \S+\/\.waiter\.\d+\/sh /)
      expect(exit?.stderrTail, 'no nonce found in any parent').not.toMatch(/found/)
      expect(exit?.exitCode, 'the run ends with the agent own exit code').toBe(7)
      expect(events).toEqual([{ type: 'real' }])
    })
  }
})
