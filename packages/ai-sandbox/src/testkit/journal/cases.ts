/**
 * The cases of the journal conformance kit, one exported check per rule of
 * spec 000 "Durable runs (the run journal)", driving the public journal API
 * against a real sandbox. Each check throws an AssertionError naming its rule.
 * One file: the cases share one set of agent scripts and read in spec order.
 * Design notes: docs/design/testkit.md
 */
import { randomBytes } from 'node:crypto'
import { expect } from 'vitest'
import { journalReadCommand, parseJournalRead } from '../../journal/bounded-read.js'
import { journalCleanupCommand, journalExistsCommand, journalExitProbeCommand, journalListCommand, journalMtimeListCommand, parseJournalExit, parseJournalList, parseJournalMtimeListing } from '../../journal/commands.js'
import { decodeJournalRunId, encodeRunId } from '../../journal/run-id.js'
import { exitSentinelLine, journalHeaderLine, parseExitSentinel, parseJournalHeader } from '../../journal/sentinel.js'
import { JournalError } from '../../journal/errors.js'
import { probeRunExit } from '../../reaper/probe.js'
import { readJournal } from '../../journal/reader.js'
import type { JournalLine } from '../../journal/bytes.js'
import { readJournalNdjson, startJournaledAgent } from '../../journal/journaled-spawn.js'
import { spawnNdjson } from '../../harness/spawn-ndjson.js'
import type { SpawnNdjsonExit } from '../../harness/spawn-ndjson.js'
import { shellQuote } from '../../shell/quote.js'
import {
  caseDeadline,
  countingSpawns,
  journalTails,
  markerName,
  rawJournal,
  readAll,
  statusOf,
  tailsUntil,
  waitForExit,
  WAIT_FOR_MARKER,
  writeMarker,
  type JournalConformanceContext,
  type JournalRun,
} from './context.js'

/** `printf` an agent line; the text is single-quoted for the agent's shell. */
const say = (line: string) => `printf '%s\\n' ${shellQuote(line)}; `

/** Start `script` journaled in the run's sandbox. */
async function start(run: JournalRun, script: string): Promise<void> {
  await startJournaledAgent(run.handle, script, { journal: { runId: run.runId, dir: run.paths.dir } })
}

const texts = (lines: readonly JournalLine[]) => lines.map((line) => line.line)

/** Where a yielded line starts: its end less its UTF-8 bytes and newline (the kit's agents write valid UTF-8). */
const startOf = (line: JournalLine) => line.endPosition - Buffer.byteLength(line.line) - 1

/** stdout lands between the header and the genuine sentinel; an unterminated last line is still a line of its own. */
export async function checkJournalStdoutWithSentinel(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('stdout')
  await start(run, `${say('{"n":1}')}${say('{"n":"é日本🙂"}')}printf '%s' '{"n":3}'`)
  expect(await waitForExit(run), 'the agent exited 0').toBe(0)

  const raw = (await rawJournal(run)).toString('utf8').split('\n')
  const header = parseJournalHeader(raw[0]!)
  expect(header?.nonceHash, `the journal's first line is the header with the nonce hash: ${raw[0]}`).toMatch(/^[0-9a-f]{64}$/)
  expect(raw.at(-1), 'the journal ends with a newline').toBe('')
  expect(parseExitSentinel(raw.at(-2)!, header), `the last line is the genuine sentinel: ${raw.at(-2)}`).toEqual({ exitCode: 0 })
  expect(raw.slice(1, -2), 'the agent\'s stdout, byte for byte, between header and sentinel').toEqual(['{"n":1}', '{"n":"é日本🙂"}', '{"n":3}'])

  const { lines, exitCode } = await readAll(run, { signal: caseDeadline(context) })
  expect(texts(lines), 'readJournal yields the agent lines only (no header, no sentinel)').toEqual(['{"n":1}', '{"n":"é日本🙂"}', '{"n":3}'])
  expect(exitCode).toBe(0)
}

/** A non-zero exit (and a death by signal, 128+N) is recorded and reported through onExit, here through spawnNdjson's journal path. */
export async function checkJournalNonZeroExit(context: JournalConformanceContext): Promise<void> {
  for (const [script, code] of [[`${say('{"step":1}')}exit 7`, 7], [`${say('{"step":1}')}sh -c 'kill -KILL $$'`, 137]] as const) {
    const run = await context.newRun(`exit-${code}`)
    const exits: SpawnNdjsonExit[] = []
    const values: unknown[] = []
    for await (const value of spawnNdjson(run.handle, script, { journal: { runId: run.runId, dir: run.paths.dir }, signal: caseDeadline(context), onExit: (exit) => void exits.push(exit) })) values.push(value)
    expect(values).toEqual([{ step: 1 }])
    expect(exits.map((exit) => exit.exitCode), `onExit reports the agent's exit code ${code}`).toEqual([code])
  }
}

/** stderr never enters the journal; it lands in the `.err` sidecar and in onExit's stderrTail. */
export async function checkJournalStderrSeparate(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('stderr')
  const values: unknown[] = []
  let exit: SpawnNdjsonExit | undefined
  await start(run, `${say('{"out":1}')}echo 'ERR-LINE {"fake":true}' >&2; ${say('{"out":2}')}`)
  for await (const value of readJournalNdjson(run.handle, { journal: { runId: run.runId, dir: run.paths.dir }, deleteOnExit: false, signal: caseDeadline(context), onExit: (e) => void (exit = e) })) values.push(value)
  expect(values).toEqual([{ out: 1 }, { out: 2 }])
  expect(exit?.exitCode).toBe(0)
  expect(exit?.stderrTail, 'onExit carries the end of the .err sidecar').toContain('ERR-LINE')
  expect((await rawJournal(run)).toString('utf8'), 'stderr is not in the journal').not.toContain('ERR-LINE')
  const err = await run.handle.process.exec(`cat ${shellQuote(run.paths.stderr)}`)
  expect(err.stdout, 'stderr is in the .err sidecar').toBe('ERR-LINE {"fake":true}\n')
}

/** Reads from a line's `endPosition` give the same lines with the same absolute byte positions as a read from 0. */
export async function checkJournalOffsets(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('offsets')
  const agent = ['{"i":0}', '{"i":"ü"}', '', '{"i":"日本語"}', '{"i":"🙂🙂"}', '{"i":5}']
  await start(run, agent.map(say).join(''))
  expect(await waitForExit(run)).toBe(0)
  const whole = await readAll(run, { signal: caseDeadline(context) })
  expect(texts(whole.lines), 'every agent line but the empty one (readJournal skips empty lines)').toEqual(agent.filter((line) => line !== ''))
  const bytes = await rawJournal(run)
  for (const [i, line] of whole.lines.entries()) {
    expect(bytes.subarray(startOf(line), line.endPosition).toString('utf8'), `bytes ${startOf(line)}..${line.endPosition} are line ${i} and its newline`).toBe(`${line.line}\n`)
    // Only newlines (the skipped empty line) may lie between two yielded lines.
    if (i > 0) expect(bytes.subarray(whole.lines[i - 1]!.endPosition, startOf(line)).toString('utf8'), `between line ${i - 1} and line ${i}`).toMatch(/^\n*$/)
  }
  for (const k of [0, 2, 4]) {
    const rest = await readAll(run, { fromByte: whole.lines[k]!.endPosition, signal: caseDeadline(context) })
    expect(rest.lines, `a read from line ${k}'s endPosition (byte ${whole.lines[k]!.endPosition})`).toEqual(whole.lines.slice(k + 1))
    expect(rest.exitCode).toBe(0)
    const polled = await readAll(run, { fromByte: whole.lines[k]!.endPosition, strategy: 'poll', pollMs: 50, signal: caseDeadline(context) })
    expect(polled.lines, `a polled read from line ${k}'s endPosition`).toEqual(whole.lines.slice(k + 1))
  }
}

/**
 * Each line reaches the reader before the agent writes the next: the agent
 * waits for a marker the case writes only after it saw the line. A reader
 * that buffers never sees the line, and the case ends at its deadline.
 */
export async function checkJournalLiveDelivery(context: JournalConformanceContext, strategy: 'follow' | 'poll'): Promise<void> {
  const run = await context.newRun(`live-${strategy}`)
  const count = 3
  let script = WAIT_FOR_MARKER
  for (let i = 1; i <= count; i++) script += `${say(`{"i":${i}}`)}w ${shellQuote(markerName(run, `seen-${i}`))}; `
  await start(run, script)
  const seen: string[] = []
  let exitCode: number | undefined
  for await (const line of readJournal(run.handle, { paths: run.paths, strategy, pollMs: 50, signal: caseDeadline(context), onExit: (e) => (exitCode = e.exitCode) })) {
    seen.push(line.line)
    const i = seen.length
    expect(line.line, `line ${i} arrives before the agent may write line ${i + 1}`).toBe(`{"i":${i}}`)
    await writeMarker(run.handle, markerName(run, `seen-${i}`))
  }
  expect(seen, `${strategy}: every line was delivered while the agent waited for it to be seen`).toHaveLength(count)
  expect(exitCode).toBe(0)
}

/**
 * `emptyWaitMs` bounds a journal that stays EMPTY, not a read: a run that
 * keeps writing for longer than that bound is read to its sentinel. (A
 * reader whose empty-journal timer outlived the first byte cut long runs off.)
 */
export async function checkJournalLongReadNotStalled(context: JournalConformanceContext, strategy: 'follow' | 'poll'): Promise<void> {
  const run = await context.newRun(`long-${strategy}`)
  const count = 6
  let script = ''
  for (let i = 1; i <= count; i++) script += `${say(`{"i":${i}}`)}sleep 1; `
  await start(run, script)
  const seen: string[] = []
  let exitCode: number | undefined
  for await (const line of readJournal(run.handle, { paths: run.paths, strategy, pollMs: 100, emptyWaitMs: 2000, signal: caseDeadline(context), onExit: (e) => (exitCode = e.exitCode) })) seen.push(line.line)
  expect(seen, `${strategy}: a read of about ${count} s with emptyWaitMs 2000 gets every line`).toHaveLength(count)
  expect(exitCode).toBe(0)
}

/** Aborting (and breaking out of) a follow kills its `tail`: none is left in the sandbox. */
export async function checkJournalFollowAbortLeavesNoTail(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('abort')
  const stop = markerName(run, 'stop')
  await start(run, `${WAIT_FOR_MARKER}${say('{"n":1}')}w ${shellQuote(stop)}; ${say('{"n":2}')}`)
  expect(await journalTails(run), 'no tail of this journal before a reader').toEqual([])

  const controller = new AbortController()
  const seen: string[] = []
  for await (const line of readJournal(run.handle, { paths: run.paths, strategy: 'follow', signal: AbortSignal.any([controller.signal, caseDeadline(context)]) })) {
    seen.push(line.line)
    const running = await tailsUntil(run, (tails) => tails.length > 0)
    expect(running.length, 'the follow reader runs one tail of this journal (counted through /proc)').toBe(1)
    controller.abort()
  }
  expect(seen, 'the abort ended the iteration without an error after the first line').toEqual(['{"n":1}'])
  expect(await tailsUntil(run, (tails) => tails.length === 0, 2_000), 'no tail outlives an aborted reader').toEqual([])

  for await (const line of readJournal(run.handle, { paths: run.paths, strategy: 'follow', signal: caseDeadline(context) })) {
    expect(line.line).toBe('{"n":1}')
    break
  }
  expect(await tailsUntil(run, (tails) => tails.length === 0, 2_000), 'no tail outlives a consumer that stopped reading').toEqual([])

  // The agent ran on through both readers: its journal is complete once it is let go.
  await writeMarker(run.handle, stop)
  const { lines, exitCode } = await readAll(run, { signal: caseDeadline(context) })
  expect(texts(lines)).toEqual(['{"n":1}', '{"n":2}'])
  expect(exitCode).toBe(0)
  expect(await tailsUntil(run, (tails) => tails.length === 0, 2_000), 'no tail is left after a read to the sentinel').toEqual([])
}

/** Aborting a poll reader ends it without an error, and the agent runs on. */
export async function checkJournalPollAbort(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('poll-abort')
  const stop = markerName(run, 'stop')
  await start(run, `${WAIT_FOR_MARKER}${say('{"n":1}')}w ${shellQuote(stop)}; ${say('{"n":2}')}exit 4`)
  const controller = new AbortController()
  const seen: string[] = []
  for await (const line of readJournal(run.handle, { paths: run.paths, strategy: 'poll', pollMs: 50, signal: AbortSignal.any([controller.signal, caseDeadline(context)]) })) {
    seen.push(line.line)
    controller.abort()
  }
  expect(seen).toEqual(['{"n":1}'])
  expect(parseJournalExit((await run.handle.process.exec(journalExitProbeCommand(run.paths))).stdout), 'the agent is still running after the reader stopped').toEqual({ state: 'running' })
  await writeMarker(run.handle, stop)
  const { lines, exitCode } = await readAll(run, { strategy: 'poll', pollMs: 50, signal: caseDeadline(context) })
  expect(texts(lines)).toEqual(['{"n":1}', '{"n":2}'])
  expect(exitCode).toBe(4)
}

/** Sentinels the agent prints (no nonce, a random nonce, the header's hash, its parent's `$n`) are ordinary lines; the shell's own sentinel ends the run with the real exit code. */
export async function checkJournalForgedSentinel(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('forged')
  const go = markerName(run, 'go')
  const guessed = randomBytes(16).toString('hex')
  const forged = ['{"__exit":0}', `{"__exit":0,"__nonce":"${guessed}"}`]
  // The agent also copies the header's hash (it can read its own journal) and tries the shell's variable, which it must not inherit.
  const script = `${WAIT_FOR_MARKER}${forged.map(say).join('')}h=$(head -n 1 ${shellQuote(run.paths.journal)} | sed 's/.*"__nonceHash":"\\([0-9a-f]*\\)".*/\\1/'); printf '{"__exit":0,"__nonce":"%s"}\\n' "$h"; printf '{"__exit":0,"__nonce":"%s"}\\n' "$n"; w ${shellQuote(go)}; ${say('{"after":true}')}exit 3`
  await start(run, script)
  const seen: string[] = []
  const deadline = Date.now() + 10_000
  while (seen.length < 4 && Date.now() < deadline) {
    seen.splice(0, seen.length, ...texts((await readAll(run, { strategy: 'poll', signal: AbortSignal.timeout(500) })).lines))
  }
  expect(seen.slice(0, 2), 'the forged sentinels are ordinary lines').toEqual(forged)
  expect(seen[2], 'the agent can copy the header hash, which is no nonce').toMatch(/^\{"__exit":0,"__nonce":"[0-9a-f]{64}"\}$/)
  expect(seen[3], "the agent does not inherit the shell's nonce").toBe('{"__exit":0,"__nonce":""}')
  expect(parseJournalExit((await run.handle.process.exec(journalExitProbeCommand(run.paths))).stdout), 'the exit probe does not take a forged sentinel for an exit').toEqual({ state: 'running' })
  await writeMarker(run.handle, go)
  const { lines, exitCode } = await readAll(run, { signal: caseDeadline(context) })
  expect(texts(lines)).toEqual([...seen.slice(0, 4), '{"after":true}'])
  expect(exitCode, 'the real exit code').toBe(3)
  expect(await waitForExit(run)).toBe(3)
}

/**
 * An agent that rewrites its journal from byte 0 does not end its run (issue
 * 27, item 4). It truncates the journal to a bare sentinel; and, where the
 * provider keeps a `journalSecret`, to a header and a sentinel of a nonce of
 * its own. The exit probe (what the reaper uses) keeps saying the run is
 * producing, before and after the agent's real exit, and a reader from byte 0
 * (a takeover's) fails with JournalError `journal-rewritten` having yielded
 * nothing. Without a `journalSecret` a header of the agent's own is not
 * caught (the agent runs as its journal's user): that variant is left out.
 */
export async function checkJournalRewritten(context: JournalConformanceContext): Promise<void> {
  const nonce = randomBytes(16).toString('hex')
  const variants: Array<[string, string]> = [['bare-sentinel', `{"__exit":0,"__nonce":"${nonce}"}`]]
  const first = await context.newRun('rewritten-bare')
  if (first.handle.journalSecret !== undefined) variants.push(['own-header', `${journalHeaderLine(nonce)}\n{"forged":true}\n${exitSentinelLine(0, nonce)}`])
  for (const [name, content] of variants) {
    const run = name === 'bare-sentinel' ? first : await context.newRun(`rewritten-${name}`)
    const go = markerName(run, 'go')
    await start(run, `${WAIT_FOR_MARKER}${say('{"before":true}')}printf '%s\\n' ${shellQuote(content)} > ${shellQuote(run.paths.journal)}; w ${shellQuote(go)}; ${say('{"after":true}')}exit 3`)
    const probe = async () => probeRunExit({ handle: run.handle, runId: run.runId, journalDir: run.paths.dir })
    const deadline = Date.now() + 10_000
    while (!(await rawJournal(run)).toString('utf8').includes(content) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(await probe(), `${name}: the exit probe does not take a rewritten journal's sentinel for an exit`).toEqual({ state: 'producing' })
    const seen: string[] = []
    const failure = await (async () => {
      for await (const line of readJournal(run.handle, { runId: run.runId, dir: run.paths.dir, strategy: 'poll', pollMs: 50, signal: caseDeadline(context) })) seen.push(line.line)
    })().then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(JournalError.isInstance(failure) ? failure.reason : failure, `${name}: a reader from byte 0 refuses the rewritten journal`).toBe('journal-rewritten')
    expect(seen, `${name}: nothing of the rewritten journal is yielded`).toEqual([])
    await writeMarker(run.handle, go)
    while (!(await rawJournal(run)).toString('utf8').includes('"__exit":3') && Date.now() < deadline + 10_000) await new Promise((resolve) => setTimeout(resolve, 50))
    expect((await rawJournal(run)).toString('utf8'), `${name}: the shell still appends the real sentinel`).toContain('"__exit":3')
    expect(await probe(), `${name}: after the real exit the journal still cannot say how the run ended`).toEqual({ state: 'producing' })
  }
}

/**
 * The hostile run id of {@link checkJournalHostileRunId}: quotes, `$()`, backticks, `/`, `..`, a backslash,
 * `%0A` spelled out, `<>&`, non-ASCII, 300 characters. No control character: the run-id rule refuses those
 * before anything reaches the journal (see `runIdProblem`).
 */
export function hostileRunId(canary: string): string {
  const core = `q"u'o $(touch ${canary}) \`touch ${canary}\` ; touch ${canary} | /../.. \\ %0A <>& é日本🙂 \${HOME} *`
  return core + 'x'.repeat(300 - core.length)
}

/** A hostile run id round-trips through every command and executes nothing. */
export async function checkJournalHostileRunId(context: JournalConformanceContext): Promise<void> {
  const canary = `journal-canary-${randomBytes(4).toString('hex')}`
  const runId = hostileRunId(canary)
  expect(runId).toHaveLength(300)
  const run = await context.newRun('hostile', runId)
  const { handle, paths } = run
  expect(await statusOf(handle, `touch ${canary}-probe && test -f ${canary}-probe && rm ${canary}-probe`), 'the canary folder is writable, so a command that ran would leave the canary').toBe(0)

  await start(run, say('{"hostile":true}'))
  expect(await waitForExit(run), 'journalExitProbeCommand').toBe(0)
  expect(await statusOf(handle, journalExistsCommand(paths)), 'journalExistsCommand').toBe(0)
  const read = parseJournalRead(await handle.process.exec(journalReadCommand(paths)))
  expect(read.bytes.toString('utf8'), 'journalReadCommand').toContain('{"hostile":true}\n')
  expect(read.size, 'journalReadCommand reports the whole journal size').toBe(read.bytes.length)
  for (const strategy of [context.strategy, 'poll'] as const) {
    const { lines, exitCode } = await readAll(run, { strategy, pollMs: 50, signal: caseDeadline(context) })
    expect(texts(lines), `readJournal (${strategy})`).toEqual(['{"hostile":true}'])
    expect(exitCode).toBe(0)
  }

  const listed = parseJournalList((await handle.process.exec(journalListCommand(paths.dir))).stdout, paths.dir).filter((entry) => entry.path === paths.journal)
  expect(listed.map((entry) => entry.runId), 'journalListCommand + parseJournalList').toEqual([runId])
  expect(decodeJournalRunId(listed[0]!.name), 'decodeJournalRunId').toEqual({ ok: true, runId })
  const mtimes = parseJournalMtimeListing((await handle.process.exec(journalMtimeListCommand(paths.dir))).stdout, paths.dir)
  const entry = mtimes.entries.find((e) => e.path === paths.journal)
  expect(entry?.runId, 'journalMtimeListCommand + parseJournalMtimeListing').toBe(runId)
  expect(Math.abs(mtimes.nowMs - entry!.mtimeMs!), 'the journal was modified just now by the sandbox clock').toBeLessThan(120_000)

  expect(await statusOf(handle, journalCleanupCommand(paths)), 'journalCleanupCommand').toBe(0)
  expect(await statusOf(handle, journalExistsCommand(paths)), 'the journal is gone after cleanup').toBe(1)
  const gone = await handle.process.exec(journalReadCommand(paths))
  expect(gone.stdout.trim(), 'a read of no journal prints an empty base64 frame').toBe('')
  expect(parseJournalRead(gone), 'journalReadCommand + parseJournalRead tell no journal from an empty one').toEqual({ size: undefined, bytes: Buffer.alloc(0) })
  expect(await statusOf(handle, `test -e ${shellQuote(paths.stderr)}`), 'the .err sidecar is gone after cleanup').toBe(1)
  const firstFolder = `${paths.dir}/${encodeRunId(runId).split('/')[0]}`
  expect(await statusOf(handle, `test -e ${shellQuote(firstFolder)}`), 'the folders of the long id are gone after cleanup').toBe(1)
  expect(parseJournalList((await handle.process.exec(journalListCommand(paths.dir))).stdout, paths.dir).filter((e) => e.runId === runId)).toEqual([])

  expect(await statusOf(handle, `test -e ${canary}`), `nothing ran: no ${canary} in the working folder`).toBe(1)
  expect(await statusOf(handle, `test -e ${shellQuote(`${paths.dir}/${canary}`)}`), 'nor in the journal folder').toBe(1)
}

/** A journal written while no reader is attached is read completely later from byte 0, by one read and by many bounded ones. */
export async function checkJournalDetachedRead(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('detached')
  const count = 2500
  // About 190 KB: lines cross the 64 KiB blocks of the bounded read.
  await start(run, `i=0; while [ $i -lt ${count} ]; do printf '{"i":%d,"pad":"%s"}\\n' $i 'ééé日本語🙂-padding-padding-padding-padding'; i=$((i+1)); done; exit 5`)
  expect(await waitForExit(run), 'the agent finished with no reader attached').toBe(5)
  const whole = await readAll(run, { signal: caseDeadline(context) })
  expect(whole.lines).toHaveLength(count)
  expect(whole.exitCode).toBe(5)
  whole.lines.forEach((line, i) => {
    if ((JSON.parse(line.line) as { i: number }).i !== i) expect.unreachable(`line ${i} is ${line.line}`)
    if (i > 0 && startOf(line) !== whole.lines[i - 1]!.endPosition) expect.unreachable(`line ${i} starts at ${startOf(line)}, not at ${whole.lines[i - 1]!.endPosition}`)
  })
  const polled = await readAll(run, { strategy: 'poll', readBytes: 40_000, pollMs: 20, signal: caseDeadline(context) })
  expect(polled.lines, 'bounded reads of 40 000 bytes (cut mid-line and mid-character) give the same lines').toEqual(whole.lines)
  expect(polled.exitCode).toBe(5)
}

/** readJournalNdjson deletes both files once it read the sentinel; an observer (`deleteOnExit: false`) leaves them. */
export async function checkJournalDeletedAfterSentinel(context: JournalConformanceContext): Promise<void> {
  const observed = await context.newRun('observer')
  await start(observed, `${say('{"a":1}')}echo warn >&2`)
  const seen: unknown[] = []
  for await (const value of readJournalNdjson(observed.handle, { journal: { runId: observed.runId, dir: observed.paths.dir }, deleteOnExit: false, signal: caseDeadline(context) })) seen.push(value)
  expect(seen).toEqual([{ a: 1 }])
  expect(await statusOf(observed.handle, journalExistsCommand(observed.paths)), 'deleteOnExit: false keeps the journal').toBe(0)
  expect(await statusOf(observed.handle, `test -f ${shellQuote(observed.paths.stderr)}`), 'and the .err sidecar').toBe(0)

  const own = await context.newRun('own-reader')
  await start(own, `${say('{"a":1}')}echo warn >&2`)
  let exit: SpawnNdjsonExit | undefined
  const values: unknown[] = []
  for await (const value of readJournalNdjson(own.handle, { journal: { runId: own.runId, dir: own.paths.dir }, signal: caseDeadline(context), onExit: (e) => void (exit = e) })) values.push(value)
  expect(values).toEqual([{ a: 1 }])
  expect(exit).toEqual({ exitCode: 0, stderrTail: 'warn\n' })
  expect(await statusOf(own.handle, journalExistsCommand(own.paths)), 'the journal is deleted once its reader saw the sentinel').toBe(1)
  expect(await statusOf(own.handle, `test -e ${shellQuote(own.paths.stderr)}`), 'and so is the .err sidecar').toBe(1)
}

/** A follow whose stream ends without the sentinel (its `tail` killed from a second exec) is followed again: every line once, then the sentinel. */
export async function checkJournalRefollow(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('refollow')
  const go = markerName(run, 'go')
  await start(run, `${WAIT_FOR_MARKER}${say('{"n":1}')}w ${shellQuote(go)}; ${say('{"n":2}')}${say('{"n":3}')}`)
  const { handle, spawns } = countingSpawns(run.handle)
  const seen: string[] = []
  let exitCode: number | undefined
  for await (const line of readJournal(handle, { paths: run.paths, strategy: 'follow', pollMs: 50, signal: caseDeadline(context), onExit: (e) => (exitCode = e.exitCode) })) {
    seen.push(line.line)
    if (seen.length !== 1) continue
    const tails = await tailsUntil(run, (found) => found.length > 0)
    expect(tails.length, 'the follow runs one tail').toBe(1)
    expect(await statusOf(run.handle, `kill ${tails.map((tail) => tail.pid).join(' ')}`), 'killing the tail from a second exec').toBe(0)
    expect(await tailsUntil(run, (found) => !found.some((tail) => tail.pid === tails[0]!.pid)), 'the killed tail is gone').not.toContainEqual(tails[0])
    await writeMarker(run.handle, go)
  }
  expect(seen, 'every line exactly once, across the killed follow').toEqual(['{"n":1}', '{"n":2}', '{"n":3}'])
  expect(exitCode, 'and then the sentinel').toBe(0)
  expect(spawns(), 'the reader followed again after its stream ended').toBeGreaterThanOrEqual(2)
  expect(await tailsUntil(run, (found) => found.length === 0, 2_000)).toEqual([])
}

/** The poll strategy yields exactly the lines (and positions, and exit code) the follow strategy does. */
export async function checkJournalPollMatchesFollow(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('poll-vs-follow')
  const big = 'x'.repeat(100_000)
  // The long line is made inside the sandbox: a 100 KB argv entry is close to Linux's 128 KiB per-argument limit.
  await start(run, `${say('{"a":"é"}')}${say('')}b=$(printf '%100000s' '' | tr ' ' x); printf '{"big":"%s"}\\n' "$b"; ${say('{"__exit":0}')}${say('plain text, not JSON')}printf '%s' '{"last":"🙂"}'; exit 2`)
  expect(await waitForExit(run)).toBe(2)
  const followed = await readAll(run, { strategy: 'follow', signal: caseDeadline(context) })
  const polled = await readAll(run, { strategy: 'poll', readBytes: 7_777, pollMs: 20, signal: caseDeadline(context) })
  expect(texts(followed.lines)).toEqual(['{"a":"é"}', `{"big":"${big}"}`, '{"__exit":0}', 'plain text, not JSON', '{"last":"🙂"}'])
  expect(polled.lines, 'poll gives the same lines with the same positions').toEqual(followed.lines)
  expect([followed.exitCode, polled.exitCode]).toEqual([2, 2])
}

/** spawnNdjson's `stdin` on the journal path reaches the agent through a file beside the journal, deleted before the agent runs. */
export async function checkJournalStdinFile(context: JournalConformanceContext): Promise<void> {
  const run = await context.newRun('stdin')
  // Each launch names its stdin file `<journal>.stdin-<16 hex>`.
  const anyStdinFile = `set -- ${shellQuote(run.paths.journal)}.stdin-*; [ -e "$1" ]`
  const values: unknown[] = []
  const input = '{"from":"stdin","text":"é日本🙂"}\n{"n":2}\n'
  // The agent reports whether its stdin file still exists when it starts, then echoes stdin.
  const script = `if ${anyStdinFile}; then ${say('{"stdinFile":"present"}')}else ${say('{"stdinFile":"gone"}')}fi; cat`
  for await (const value of spawnNdjson(run.handle, script, { journal: { runId: run.runId, dir: run.paths.dir }, stdin: input, signal: caseDeadline(context) })) values.push(value)
  expect(values).toEqual([{ stdinFile: 'gone' }, { from: 'stdin', text: 'é日本🙂' }, { n: 2 }])
  expect(await statusOf(run.handle, anyStdinFile), 'the stdin file is gone').toBe(1)
}
