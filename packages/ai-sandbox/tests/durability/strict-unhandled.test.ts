/**
 * Issue 27, item 1: no promise the library starts may reject unhandled. A
 * child process under `node --unhandled-rejections=strict` (where one
 * unhandled rejection ends the process, as it did the host in the attack)
 * gives hostile run ids to every public durable entry point: chat() with
 * withSandbox (the attack's path), readJournal,
 * probeRunExit, awaitAttachableJournal, pruneJournals, reclaimSandbox,
 * RunController, sandboxRunDriver and reapDetachedRuns (with the hostile id in
 * a record another process wrote). The child must exit 0, and each entry
 * point must refuse the id or leave it alone, never act on it.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { expect, it } from 'vitest'

const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const CHILD = fileURLToPath(new URL('./fixtures/hostile-entry-points.ts', import.meta.url))

function runChild(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--unhandled-rejections=strict', '--import', TSX_LOADER, CHILD], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()))
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

it('every durable entry point given a hostile run id refuses it or leaves it alone, and nothing rejects unhandled (node --unhandled-rejections=strict)', async () => {
  const { code, stdout, stderr } = await runChild()
  expect(code, `the child ended with ${code}: an unhandled rejection or a crash\n${stderr.slice(-4000)}`).toBe(0)
  const outcomes = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, Record<string, string>>
  expect(Object.keys(outcomes)).toEqual(['too long (513)', 'lone surrogate', 'CR/LF', 'NUL'])
  for (const [name, entries] of Object.entries(outcomes)) {
    // Refused by the run-id rule (InvalidRunIdError / JournalError invalid-run-id, SandboxConfigError invalid-option naming
    // the field), or, for the probe, the prune and the attach preflight, which answer instead of throwing, left alone.
    expect(entries, name).toEqual({
      'chat() + withSandbox': 'threw invalid-run-id',
      readJournal: 'threw invalid-run-id',
      probeRunExit: expect.stringMatching(/^resolved .*"state":"unknown"/),
      awaitAttachableJournal: 'threw unknown-run',
      pruneJournals: 'resolved {}',
      reclaimSandbox: 'threw invalid-option',
      'RunController.start': 'threw invalid-option',
      // The id is in a record another process wrote from here on: the driver claims nothing, so the sweep cannot either.
      'sandboxRunDriver claim': 'threw invalid-run-id',
      reapDetachedRuns: 'resolved not-claimed=1',
    })
  }
}, 120_000)
