/**
 * The processes of one job on Linux (its process group, every process with
 * the job's marker `TANSTACK_SANDBOX_JOB=<id>`, and their descendants), plus
 * the sweep of a sandbox's processes by marker. Read from `/proc`.
 * Invariant: a process is identified by pid AND start time, so a reused pid is
 * never signalled, and zombies are never returned.
 * Design notes: docs/design/local-process.md
 */
import { readFile, readdir } from 'node:fs/promises'
import { errnoCode } from './errors.js'

/** Live processes of a job: pid -> start time (clock ticks since boot, as text). */
export type JobProcesses = ReadonlyMap<number, string>

interface ProcStat {
  readonly state: string
  readonly ppid: number
  readonly pgrp: number
  readonly start: string
}

/** Parse `/proc/<pid>/stat`: "pid (comm) state ppid pgrp ... starttime ..."; comm may hold spaces and ")". */
function parseStat(text: string): ProcStat | undefined {
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const start = fields[19]
  if (fields.length < 20 || start === undefined) return undefined
  return { state: fields[0]!, ppid: Number(fields[1]), pgrp: Number(fields[2]), start }
}

async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined // exited between listing and reading: already gone
  }
}

/** What a job is found by: its process group (`undefined` once the group is gone) and its marker entry (`NAME=value`). */
export interface JobKeys {
  readonly pgid: number | undefined
  readonly marker: string | undefined
}

/**
 * Collect a job: the members of its group, every process whose environment
 * holds its marker entry, the processes in `known` that still run (same pid
 * and start time), and every descendant of any of them.
 * @returns Live (non-zombie) processes of the job, never this process; empty without `/proc`.
 */
export async function scanJob(keys: JobKeys, known: JobProcesses = new Map()): Promise<Map<number, string>> {
  let names: string[]
  try {
    names = await readdir('/proc')
  } catch {
    return new Map() // no procfs: the group signal is the only reach
  }
  const procs = new Map<number, ProcStat>()
  await Promise.all(
    names.map(async (name) => {
      if (!/^\d+$/.test(name)) return
      const stat = await readStat(Number(name))
      if (stat) procs.set(Number(name), stat)
    }),
  )
  const children = new Map<number, number[]>()
  const job = new Set<number>()
  for (const [pid, stat] of procs) {
    children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), pid])
    if (stat.pgrp === keys.pgid || known.get(pid) === stat.start) job.add(pid)
  }
  if (keys.marker !== undefined) {
    const needle = markerNeedle(keys.marker)
    await Promise.all([...procs.keys()].filter((pid) => !job.has(pid)).map(async (pid) => (await hasEntry(pid, needle)) && job.add(pid)))
  }
  const queue = [...job]
  while (queue.length > 0) {
    for (const child of children.get(queue.pop()!) ?? []) {
      if (job.has(child)) continue
      job.add(child)
      queue.push(child)
    }
  }
  const live = new Map<number, string>()
  for (const pid of job) {
    const stat = procs.get(pid)!
    if (pid !== process.pid && stat.state !== 'Z' && stat.state !== 'X') live.set(pid, stat.start)
  }
  return live
}

/**
 * Live processes (never this one) whose environment holds `marker` (a whole
 * `NAME=value` entry), with their start times.
 * @returns Empty without `/proc`.
 */
export async function scanMarked(marker: string): Promise<Map<number, string>> {
  return scanJob({ pgid: undefined, marker })
}

/** `\0NAME=value\0`: the entry as it sits between others in `/proc/<pid>/environ` (read with a leading NUL). */
function markerNeedle(marker: string): Buffer {
  return Buffer.from(`\0${marker}\0`)
}

async function hasEntry(pid: number, needle: Buffer): Promise<boolean> {
  let environ: Buffer
  try {
    environ = await readFile(`/proc/${pid}/environ`)
  } catch {
    return false // exited, or another user's: not ours to signal anyway
  }
  // The first entry has no NUL before it; prepend one so it matches like the rest.
  return Buffer.concat([NUL, environ]).includes(needle)
}

const NUL = Buffer.from([0])

/**
 * Send `signal` to `pid` if it is still the process that started at `start`.
 * A process already gone, or one we may not signal (another user's), is skipped;
 * the caller's wait reports what survives.
 */
export function signalJobProcess(pid: number, start: string, signal: NodeJS.Signals): Promise<void> {
  return readStat(pid).then((stat) => {
    if (stat?.start !== start) return
    try {
      process.kill(pid, signal)
    } catch (error) {
      if (errnoCode(error) !== 'ESRCH' && errnoCode(error) !== 'EPERM') throw error
    }
  })
}
