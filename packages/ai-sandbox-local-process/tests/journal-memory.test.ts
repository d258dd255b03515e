// Issue 27, item 5 on local-process: an app that does not run as root. Its
// agent runs as the app's user, and the shell that holds the journal's nonce
// runs from an execute-only copy of sh, so Linux makes it not dumpable: the
// agent cannot read the nonce from that shell's memory (`/proc/<pid>/mem`) to
// end its own run with a sentinel that looks real. The app here is a Node
// process of uid 65534 (nobody) driving the built packages through the public
// API (localProcessSandbox, startJournaledAgent, readJournalNdjson); as root,
// which CI is, the test starts it with setpriv. (As root the agent could read
// any process, which docs/journal.md says.) Needs `pnpm build` first.
import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'

const NOBODY = 65534
const asRoot = process.getuid?.() === 0
const dist = (pkg: string) => fileURLToPath(new URL(`../../${pkg}/dist/index.js`, import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'lp-journal-memory-'))
if (asRoot) chownSync(scratch, NOBODY, NOBODY)
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  expect(existsSync(scratch)).toBe(false)
})

/**
 * The agent: scans the writable memory of its parent and grandparent shells
 * for a 32-hex-digit string whose sha256 is the journal header's hash, and
 * appends a sentinel with it when found. Prints `refused`, `readable` and
 * `found` lines on stderr, then its real last line, and exits 7.
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
sleep 1
echo '{"type":"real"}'
exit 7
`

/** The app: one journaled run of the agent above on local-process; prints what its reader saw as one JSON line. */
const APP = `
import { localProcessSandbox } from ${JSON.stringify(dist('ai-sandbox-local-process'))}
import { readJournalNdjson, startJournaledAgent } from ${JSON.stringify(dist('ai-sandbox'))}
const handle = await localProcessSandbox({ root: process.argv[2] }).create()
try {
  await handle.fs.write('/workspace/read-parent.sh', process.argv[3])
  const runId = 'memory-' + process.pid
  await startJournaledAgent(handle, 'sh read-parent.sh', { journal: { runId } })
  const events = []
  let exit
  for await (const event of readJournalNdjson(handle, { journal: { runId }, onExit: (e) => void (exit = e) })) events.push(event)
  process.stdout.write(JSON.stringify({ uid: process.getuid(), events, exit }) + '\\n')
} finally {
  await handle.destroy()
}
`

it('an app that is not root: its agent cannot read the nonce from the waiting shell, and the run ends with its real exit code and last line', () => {
  for (const pkg of ['ai-sandbox', 'ai-sandbox-local-process']) expect(existsSync(dist(pkg)), `${dist(pkg)} is missing: run pnpm build first`).toBe(true)
  const app = join(scratch, 'app.mjs')
  writeFileSync(app, APP)
  const args = [app, join(scratch, 'sandboxes'), READ_PARENT_MEMORY]
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scratch, TMPDIR: scratch }
  const run = asRoot
    ? spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, ...args], { env, encoding: 'utf8', timeout: 60_000 })
    : spawnSync(process.execPath, args, { env, encoding: 'utf8', timeout: 60_000 })
  expect(run.status, run.stderr).toBe(0)
  const seen = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { uid: number; events: unknown[]; exit?: { exitCode: number; stderrTail: string } }
  expect(seen.uid, 'the app is not root').not.toBe(0)
  expect(seen.exit?.stderrTail, 'the waiting shell refuses the read').toMatch(/refused \d+ \S+\/\.waiter\.\d+\/sh /)
  expect(seen.exit?.stderrTail, 'no nonce found in any parent').not.toMatch(/found/)
  expect(seen.exit?.exitCode, "the run ends with the agent's own exit code").toBe(7)
  expect(seen.events).toEqual([{ type: 'real' }])
}, 90_000)
