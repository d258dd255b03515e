/**
 * Benchmark `snapshots`: portable-snapshot capture and restore
 * (`captureSandboxWorkspace`, `restoreSandboxWorkspace`) of a generated
 * workspace tree (`snapshot-tree.ts`), beside `tar` of the same tree through
 * the same provider's process API: `tar -cf - .` with stdout drained on the
 * host (and `tar -cf - . | base64`, the engine's own transport), and
 * `tar -xf -` with a host tar of the tree written to its stdin. Every
 * measurement runs in a child Node process of its own (`snapshots-case.ts`),
 * so its peak RSS is its own. Blobs go to a folder on disk (putBlob writes
 * one file per blob, getBlob reads it), so the RSS is the engine's, not a
 * blob map's. Issue goals: within 2x `tar`; peak RSS bounded independently
 * of the tree's size (measured at two sizes on local-process).
 */
import { execFile, fork } from 'node:child_process'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { planSnapshotTree, writeSnapshotTree, type SnapshotTreePlan } from './snapshot-tree.js'
import { BenchError, median } from './stats.js'

const run = promisify(execFile)
const CASE_SCRIPT = fileURLToPath(new URL('./snapshots-case.ts', import.meta.url))
const MIB = 1024 * 1024

/** A tree size: files and MiB. */
export interface SnapshotTreeSize {
  readonly files: number
  readonly mib: number
}

/** One operation (capture or restore) on one provider at one tree size. */
export interface SnapshotRow {
  readonly provider: string
  readonly files: number
  /** Bytes of the tree's files, in MiB. */
  readonly mib: number
  readonly op: 'capture' | 'restore'
  readonly runs: number
  /** Median of the engine's runs. */
  readonly medianMs: number
  /** Median of `tar -cf - .` (capture) or `tar -xf -` (restore) through the same provider, same tree. */
  readonly tarMedianMs: number
  /** medianMs / tarMedianMs (goal: at most 2). */
  readonly ratio: number
  /** Capture only: median of `tar -cf - . | base64`, the transport the engine reads through. */
  readonly tarBase64MedianMs: number | null
  /** Highest peak RSS of the engine's child processes, MiB. */
  readonly peakRssMiB: number
  /** Highest peak RSS of the tar reference's child processes (the same stream through the process API), MiB. */
  readonly tarPeakRssMiB: number
  /** Peak RSS of a child that only loads the packages and resumes the sandbox, MiB. */
  readonly baselineRssMiB: number
  /** peakRssMiB - baselineRssMiB: what the engine itself held. */
  readonly overBaselineMiB: number
}

/** A provider row that could not run (the Docker engine or image missing). */
export interface SnapshotSkip {
  readonly provider: string
  readonly reason: string
}

interface CaseAnswer {
  /** One duration per run. */
  readonly ms: readonly number[]
  readonly maxRssBytes: number
  readonly bytes: number
  readonly files: number
}

/** How a child resumes a sandbox: `[kind, root]`. */
type ResumeArgs = readonly [kind: 'local-process' | 'docker', root: string]

function runCase(resume: ResumeArgs, handle: SandboxHandle, work: string, mode: string, runs = 1): Promise<CaseAnswer> {
  return new Promise((resolve, reject) => {
    const child = fork(CASE_SCRIPT, [resume[0], handle.id, resume[1], work, String(runs), mode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    let got: CaseAnswer | undefined
    child.on('message', (message) => (got = message as CaseAnswer))
    child.on('error', reject)
    child.on('exit', (code) => (got ? resolve(got) : reject(new BenchError(`snapshots case ${mode} on ${handle.provider} exited ${code} without an answer`))))
  })
}

/** Run a command in the sandbox. @throws BenchError on a non-zero exit. */
async function sh(handle: SandboxHandle, command: string): Promise<string> {
  const result = await handle.process.exec(command)
  if (result.exitCode !== 0) throw new BenchError(`${command} exited ${result.exitCode} in ${handle.provider}: ${result.stderr.slice(-2000)}`)
  return result.stdout
}

/** Files and bytes under the workspace. */
async function census(handle: SandboxHandle): Promise<{ files: number; bytes: number }> {
  const [files = '0', bytes = '0'] = (await sh(handle, "find . -type f -printf '%s\\n' | awk '{ n++; s += $1 } END { print n + 0, s + 0 }'")).trim().split(' ')
  return { files: Number(files), bytes: Number(bytes) }
}

const mib = (bytes: number): number => Math.round((bytes / MIB) * 10) / 10

/** A generated tree on the host: the plan, a host folder holding it, and `work/tree.tar` of it. */
interface HostTree {
  readonly size: SnapshotTreeSize
  readonly plan: SnapshotTreePlan
  readonly dir: string
  /** Holds `tree.tar`, `blobs/` and `manifest.json`. */
  readonly work: string
}

async function hostTree(root: string, size: SnapshotTreeSize): Promise<HostTree> {
  const work = join(root, `snapshots-${size.files}-${size.mib}`)
  const dir = join(work, 'tree')
  const plan = planSnapshotTree(size.files, size.mib * MIB)
  await writeSnapshotTree(dir, plan)
  await run('tar', ['-cf', join(work, 'tree.tar'), '-C', dir, '.'])
  await mkdir(join(work, 'blobs'))
  return { size, plan, dir, work }
}

/**
 * Capture and restore `tree` on one provider, `runs` times each, beside
 * their tar references: a source sandbox holds the tree (written with one
 * `tar -xf -` through the process API), a target is emptied before every
 * restore. One child process per figure runs all of its runs (so the peak
 * RSS is the highest over them); the last restore is checked (file count
 * and bytes).
 */
async function measureProvider(name: string, provider: SandboxProvider, resume: ResumeArgs, tree: HostTree, runs: number): Promise<SnapshotRow[]> {
  const source = await provider.create()
  const target = await provider.create().catch(async (error: unknown) => {
    await source.destroy()
    throw error
  })
  try {
    // The tree goes in through the same path as the restore reference.
    await runCase(resume, source, tree.work, 'tar-restore')
    const sourceCensus = await census(source)
    if (sourceCensus.files !== tree.plan.files.length || sourceCensus.bytes !== tree.plan.bytes) throw new BenchError(`the ${name} source holds ${sourceCensus.files} files / ${sourceCensus.bytes} bytes, not ${tree.plan.files.length} / ${tree.plan.bytes}`)
    const baseline = await runCase(resume, source, tree.work, 'baseline')
    const files = tree.plan.files.length
    const tar = await runCase(resume, source, tree.work, 'tar-capture', runs)
    const tar64 = await runCase(resume, source, tree.work, 'tar-base64-capture', runs)
    const capture = await runCase(resume, source, tree.work, 'capture', runs)
    if (capture.files !== files || capture.bytes !== tree.plan.bytes) throw new BenchError(`the ${name} capture stored ${capture.files} files / ${capture.bytes} bytes, not ${files} / ${tree.plan.bytes}`)
    const tarRestore = await runCase(resume, target, tree.work, 'tar-restore', runs)
    const restore = await runCase(resume, target, tree.work, 'restore', runs)
    const restored = await census(target)
    if (restored.files !== files || restored.bytes !== tree.plan.bytes) throw new BenchError(`the ${name} restore wrote ${restored.files} files / ${restored.bytes} bytes, not ${files} / ${tree.plan.bytes}`)
    const row = (op: SnapshotRow['op'], engine: CaseAnswer, reference: CaseAnswer, base64: CaseAnswer | null): SnapshotRow => ({
      provider: name,
      files,
      mib: mib(tree.plan.bytes),
      op,
      runs,
      medianMs: Math.round(median(engine.ms)),
      tarMedianMs: Math.round(median(reference.ms)),
      ratio: Math.round((median(engine.ms) / median(reference.ms)) * 100) / 100,
      tarBase64MedianMs: base64 === null ? null : Math.round(median(base64.ms)),
      peakRssMiB: mib(engine.maxRssBytes),
      tarPeakRssMiB: mib(reference.maxRssBytes),
      baselineRssMiB: mib(baseline.maxRssBytes),
      overBaselineMiB: mib(engine.maxRssBytes - baseline.maxRssBytes),
    })
    return [row('capture', capture, tar, tar64), row('restore', restore, tarRestore, null)]
  } finally {
    await Promise.allSettled([source.destroy(), target.destroy()])
  }
}

/** Options of {@link benchSnapshots}. */
export interface SnapshotBenchOptions {
  /** The run's temp root: trees, tars and blob folders go under it. */
  readonly root: string
  /** A local-process provider over `root`. */
  readonly provider: SandboxProvider
  /** The timed tree (both providers). */
  readonly size: SnapshotTreeSize
  /** The second tree, local-process only, one run: the RSS at another size. */
  readonly secondSize: SnapshotTreeSize
  readonly runs: number
  /** Run the Docker row (tanstack-sandbox-debian:bookworm). */
  readonly docker: boolean
}

/** What {@link benchSnapshots} returns. */
export interface SnapshotBenchResult {
  readonly rows: SnapshotRow[]
  readonly skipped: SnapshotSkip[]
}

/**
 * The whole table: local-process and Docker at `size`, local-process again
 * at `secondSize`. A Docker engine or image that is missing skips its rows
 * with the reason.
 *
 * @throws BenchError when a capture or restore does not store or write every file.
 */
export async function benchSnapshots(options: SnapshotBenchOptions): Promise<SnapshotBenchResult> {
  const rows: SnapshotRow[] = []
  const skipped: SnapshotSkip[] = []
  const tree = await hostTree(options.root, options.size)
  try {
    rows.push(...(await measureProvider('local-process', options.provider, ['local-process', options.root], tree, options.runs)))
    if (options.docker) {
      const image = 'tanstack-sandbox-debian:bookworm'
      const docker = dockerSandbox({ image, labels: { 'tanstack-bench': 'snapshots' } })
      let probe: SandboxHandle | undefined
      try {
        probe = await docker.create()
      } catch (error) {
        skipped.push({ provider: `docker (${image})`, reason: (error as Error).message.split('\n')[0] ?? String(error) })
      }
      if (probe) {
        await probe.destroy()
        rows.push(...(await measureProvider(`docker (${image})`, docker, ['docker', ''], tree, options.runs)))
      }
    } else {
      skipped.push({ provider: 'docker', reason: 'BENCH_SNAPSHOT_DOCKER=0' })
    }
  } finally {
    await rm(tree.work, { recursive: true, force: true })
  }
  const second = await hostTree(options.root, options.secondSize)
  try {
    rows.push(...(await measureProvider('local-process', options.provider, ['local-process', options.root], second, 1)))
  } finally {
    await rm(second.work, { recursive: true, force: true })
  }
  return { rows, skipped }
}
