/**
 * Confinement under races, counted: for each host operation (`read`, `write`,
 * `list`, `remove`, `mkdir`, `exec({ cwd })`) on local-process and Docker, a
 * loop inside the sandbox flips a directory between a real folder and a
 * symlink to an outside canary folder while the host makes N calls under it.
 * An escape is a call that returned canary data or changed the canary; a hang
 * is a call still pending after {@link CALL_BOUND_MS}. Both must be 0. A last
 * row per provider reads a planted FIFO N/10 times and counts hangs.
 * Owns its sandboxes (destroyed at the end, also on failure) and the canary
 * folders (removed with them); a Docker engine that is not answering is a
 * `skipped` row naming why.
 */
import { randomUUID } from 'node:crypto'
import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'
import { SandboxError } from '@tanstack/ai-sandbox'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { BenchError } from './stats.js'

/** The operations raced. */
const OPERATIONS = ['read', 'write', 'list', 'remove', 'mkdir', 'exec-cwd'] as const
type Operation = (typeof OPERATIONS)[number]

/** A call still pending after this long counts as a hang, ms. */
const CALL_BOUND_MS = 10_000

/** One row of the table. */
export interface ConfinementRaceRow {
  provider: string
  operation: Operation | 'fifo-read'
  races: number
  /** Calls that reached outside (goal 0). */
  escapes: number
  /** Calls that never settled within the bound (goal 0). */
  hangs: number
  succeeded: number
  refused: number
  skipped?: string
}

/**
 * Run the race table on `local` (a local-process provider) and, when the
 * engine answers, on Docker.
 *
 * @param races - Calls per operation and provider. Default 300.
 * @param dockerImage - Default `tanstack-sandbox-busybox:latest`.
 */
export async function benchConfinementRaces(local: SandboxProvider, races = 300, dockerImage = 'tanstack-sandbox-busybox:latest'): Promise<ConfinementRaceRow[]> {
  const rows: ConfinementRaceRow[] = []
  rows.push(...(await onProvider('local-process', local, races)))
  const docker = dockerSandbox({ image: dockerImage, labels: { 'tanstack-bench': 'confinement-races' }, killGraceMs: 500 })
  try {
    rows.push(...(await onProvider(`docker ${dockerImage}`, docker, races)))
  } catch (error) {
    rows.push({ provider: `docker ${dockerImage}`, operation: 'read', races: 0, escapes: NaN, hangs: NaN, succeeded: 0, refused: 0, skipped: (error as Error).message.split('\n')[0] })
  }
  return rows
}

async function onProvider(name: string, provider: SandboxProvider, races: number): Promise<ConfinementRaceRow[]> {
  const handle = await provider.create({ labels: { purpose: 'bench-confinement-races' } })
  const rows: ConfinementRaceRow[] = []
  try {
    for (const operation of OPERATIONS) rows.push({ provider: name, operation, races, ...(await race(handle, operation, races)) })
    rows.push({ provider: name, operation: 'fifo-read', races: Math.max(1, Math.round(races / 10)), ...(await fifoReads(handle, Math.max(1, Math.round(races / 10)))) })
  } finally {
    await handle.destroy()
  }
  return rows
}

/** One single-quoted shell word. */
function q(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

/** Must-succeed setup command. */
async function sh(handle: SandboxHandle, command: string): Promise<string> {
  const result = await handle.process.exec(command)
  if (result.exitCode !== 0) throw new BenchError(`bench setup failed (exit ${result.exitCode}): ${command}\n${result.stderr}`)
  return result.stdout
}

type Counts = Pick<ConfinementRaceRow, 'escapes' | 'hangs' | 'succeeded' | 'refused'>

async function race(handle: SandboxHandle, operation: Operation, races: number): Promise<Counts> {
  const dir = `race-${randomUUID().slice(0, 8)}`
  const canary = `/tmp/bench-canary-${randomUUID().slice(0, 8)}`
  await sh(
    handle,
    `mkdir -p ${q(`${dir}/d`)} ${q(canary)} && printf inside > ${q(`${dir}/d/f.txt`)} && printf outside > ${q(`${canary}/f.txt`)} && : > ${q(`${canary}/canary-only`)} && ` +
      `i=0; while [ "$i" -lt ${races} ]; do : > ${q(`${dir}/d`)}/v$i; : > ${q(canary)}/v$i; i=$((i + 1)); done`,
  )
  const snapshot = () => sh(handle, `cd ${q(canary)} && ls -A | sort && cat f.txt`)
  const counts = { escapes: 0, hangs: 0, succeeded: 0, refused: 0 }
  try {
    const before = await snapshot()
    const swapper = await handle.process.spawn(swapLoop(dir, canary))
    try {
      for (let i = 0; i < races; i++) {
        const outcome = await bounded(call(handle, operation, `${dir}/d`, i))
        if (outcome === 'hang') counts.hangs++
        else if (outcome === 'refused') counts.refused++
        else {
          counts.succeeded++
          if (outcome === 'escaped') counts.escapes++
        }
      }
    } finally {
      await swapper.kill('SIGKILL').catch(() => undefined)
    }
    const after = await snapshot()
    const a = new Set(before.split('\n'))
    const b = new Set(after.split('\n'))
    for (const line of a) if (!b.has(line)) counts.escapes++
    for (const line of b) if (!a.has(line)) counts.escapes++
  } finally {
    await handle.process.exec(`rm -rf ${q(dir)} ${q(canary)}`).catch(() => undefined)
  }
  return counts
}

/** One host call; `escaped` when its result shows the outside canary. */
async function call(handle: SandboxHandle, operation: Operation, dir: string, i: number): Promise<'ok' | 'escaped'> {
  switch (operation) {
    case 'read':
      return (await handle.fs.read(`${dir}/f.txt`)) === 'outside' ? 'escaped' : 'ok'
    case 'write':
      await handle.fs.write(`${dir}/w${i}.txt`, 'written by the host')
      return 'ok'
    case 'list':
      return (await handle.fs.list(dir)).some((entry) => entry.name === 'canary-only') ? 'escaped' : 'ok'
    case 'remove':
      await handle.fs.remove(`${dir}/v${i}`)
      return 'ok'
    case 'mkdir':
      await handle.fs.mkdir(`${dir}/m${i}`)
      return 'ok'
    case 'exec-cwd': {
      const result = await handle.process.exec(`touch e${i} && ls -A`, { cwd: dir })
      return result.stdout.split('\n').includes('canary-only') ? 'escaped' : 'ok'
    }
  }
}

/** Await `promise` up to {@link CALL_BOUND_MS}; a typed sandbox error is a refusal, anything else a bench failure. */
async function bounded(promise: Promise<'ok' | 'escaped'>): Promise<'ok' | 'escaped' | 'refused' | 'hang'> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const hang = new Promise<'hang'>((resolve) => (timer = setTimeout(() => resolve('hang'), CALL_BOUND_MS)))
  try {
    return await Promise.race([
      promise.catch((error: unknown) => {
        if (SandboxError.isInstance(error)) return 'refused' as const
        throw new BenchError(`a raced call failed with a non-sandbox error: ${String(error)}`, { cause: error })
      }),
      hang,
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** Read a planted FIFO `times` times (four at once, as a stalled thread pool needs); count hangs. */
async function fifoReads(handle: SandboxHandle, times: number): Promise<Counts> {
  const dir = `fifo-${randomUUID().slice(0, 8)}`
  await sh(handle, `mkdir -p ${q(dir)} && mkfifo ${q(`${dir}/pipe`)}`)
  const counts = { escapes: 0, hangs: 0, succeeded: 0, refused: 0 }
  for (let i = 0; i < times; i += 4) {
    const batch = Array.from({ length: Math.min(4, times - i) }, () => bounded(handle.fs.read(`${dir}/pipe`).then(() => 'ok' as const)))
    for (const outcome of await Promise.all(batch)) {
      if (outcome === 'hang') counts.hangs++
      else if (outcome === 'refused') counts.refused++
      else counts.succeeded++
    }
  }
  await sh(handle, `rm -rf ${q(dir)}`)
  return counts
}

/**
 * The swapper: flips `<dir>/d` between the real folder and a symlink to
 * `canary`, forever. A host call that creates `d` while it is briefly missing
 * (write and mkdir create parents) would jam a plain `mv` loop, so such a
 * folder is moved aside (`stray<n>`) and the flipping goes on. Each state is
 * held for a short builtin-only spin, so the link and the folder are each in
 * place about a third of the time (the rest, `d` is briefly missing).
 */
const SPIN = 'i=0; while [ "$i" -lt 300 ]; do i=$((i + 1)); done;'

function swapLoop(dir: string, canary: string): string {
  return (
    `cd ${q(dir)} && n=0; while :; do n=$((n + 1)); mv -T d real 2>/dev/null; ln -s ${q(canary)} d 2>/dev/null; ${SPIN} rm d 2>/dev/null; ` +
    `if ! mv -T real d 2>/dev/null; then mv -T d stray$n 2>/dev/null; mv -T real d 2>/dev/null; fi; ${SPIN} done`
  )
}
