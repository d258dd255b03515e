/**
 * `pnpm --filter @tanstack/ai-sandbox-docker bench`: measures the Docker
 * provider on the local engine and prints one table per question, then
 * writes `bench-results/results.json`:
 * (a) exec round trip of `true`: the provider beside the `docker exec` CLI
 *     and a bare dockerode exec, on the same container;
 * (b) container create+start (the provider's create, with its setup exec);
 * (c) 10 MB write and read throughput (both stream through exec as the
 *     sandbox user; reads never use the archive API, which runs as root);
 * (d) snapshot (docker commit) time;
 * (e) time to a ready sandbox for a 5 s setup: fresh versus restored from snapshot.
 * Every container and image it makes carries a bench label and is removed.
 * Sizes: BENCH_EXEC_ITERATIONS (100), BENCH_CREATE_ITERATIONS (10), BENCH_IO_RUNS (5), BENCH_READY_RUNS (3).
 */
import { execFile } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import Docker from 'dockerode'
import { dockerSandbox, pruneDockerSandboxes } from '../src/index.js'
import { startExec } from '../src/exec-stream.js'
import { envInt, round, summary, timeEach } from './stats.js'
import { readyFromSnapshot } from './ready-from-snapshot.js'

const run = promisify(execFile)
const IMAGE = process.env.BENCH_DOCKER_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url))
const labels = { 'tanstack-bench.run': randomUUID().slice(0, 8) }
const MB = 1024 * 1024

async function main(): Promise<void> {
  const docker = new Docker()
  const execIterations = envInt('BENCH_EXEC_ITERATIONS', 100)
  const createIterations = envInt('BENCH_CREATE_ITERATIONS', 10)
  const ioRuns = envInt('BENCH_IO_RUNS', 5)
  const provider = dockerSandbox({ image: IMAGE, labels })
  try {
    const handle = await provider.create()
    const container = docker.getContainer(handle.id)

    // (a) exec round trip, warmed up, on one container.
    await timeEach(5, () => handle.process.exec('true'))
    const providerExec = await timeEach(execIterations, async () => {
      if ((await handle.process.exec('true')).exitCode !== 0) throw new Error('exec true failed')
    })
    const cliExec = await timeEach(execIterations, () => run('docker', ['exec', handle.id, 'true']))
    const bareExec = await timeEach(execIterations, async () => {
      const exec = await startExec(container, { cmd: ['true'] }, { stdout: () => undefined, stderr: () => undefined })
      if ((await exec.exit) !== 0) throw new Error('bare exec failed')
    })
    const exec = [
      { what: 'provider process.exec (job wrapper)', ...summary(providerExec) },
      { what: 'docker exec CLI', ...summary(cliExec) },
      { what: 'dockerode exec, no wrapper', ...summary(bareExec) },
    ]
    console.log(`\n(a) exec round trip of \`true\` on ${IMAGE}`)
    console.table(exec)

    // (b) create+start, each destroyed right after.
    const createSamples = await timeEach(createIterations, async () => {
      const created = await provider.create()
      await created.destroy()
    })
    const destroySamples: number[] = []
    const createOnly = await timeEach(createIterations, async () => {
      const created = await provider.create()
      const start = performance.now()
      await created.destroy()
      destroySamples.push(performance.now() - start)
    })
    const lifecycle = [
      { what: 'create (container create + start + setup exec)', ...summary(createOnly.map((total, index) => total - destroySamples[index]!)) },
      { what: 'destroy (remove -f -v)', ...summary(destroySamples) },
      { what: 'create + destroy', ...summary(createSamples) },
    ]
    console.log('\n(b) container lifecycle')
    console.table(lifecycle)

    // (c) 10 MB of random bytes.
    const data = randomBytes(10 * MB)
    const writes = await timeEach(ioRuns, (index) => handle.fs.write(`bench/file-${index}.bin`, data))
    const reads = await timeEach(ioRuns, async (index) => {
      if ((await handle.fs.readBytes(`bench/file-${index}.bin`)).length !== data.length) throw new Error('short read')
    })
    const throughput = (samples: number[]) => ({ ...summary(samples), mbPerSecond: round(10 / (summary(samples).medianMs / 1000), 1) })
    const io = [
      { what: 'fs.write 10 MB (exec stdin)', ...throughput(writes) },
      { what: 'fs.readBytes 10 MB (exec stdout)', ...throughput(reads) },
    ]
    console.log('\n(c) 10 MB file throughput')
    console.table(io)

    // (d) snapshot: docker commit of a container holding the files above, each deleted after.
    const snapshots = await timeEach(ioRuns, async () => {
      const ref = await handle.snapshot!()
      await provider.deleteSnapshot!({ snapshotId: ref.snapshotId })
    })
    const deleteSamples: number[] = []
    const snapshotOnly = await timeEach(ioRuns, async () => {
      const ref = await handle.snapshot!()
      const start = performance.now()
      await provider.deleteSnapshot!({ snapshotId: ref.snapshotId })
      deleteSamples.push(performance.now() - start)
    })
    const snapshot = [
      { what: 'snapshot (docker commit, paused)', ...summary(snapshotOnly.map((total, index) => total - deleteSamples[index]!)) },
      { what: 'snapshot + deleteSnapshot', ...summary(snapshots) },
    ]
    console.log('\n(d) snapshot')
    console.table(snapshot)
    await handle.destroy()

    // (e) ready time, fresh versus restored.
    const ready = await readyFromSnapshot(provider, envInt('BENCH_READY_RUNS', 3))
    console.log(`\n(e) time to a ready sandbox, setup of 5 s: restored is ${ready.ratio}x faster`)
    console.table([...ready])

    const results = {
      date: new Date().toISOString(),
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpus: cpus().length,
      engine: (await docker.version()).Version,
      image: IMAGE,
      execRoundTrip: exec,
      lifecycle,
      io10MB: io,
      snapshot,
      readyFromSnapshot: { rows: [...ready], freshOverRestored: ready.ratio },
    }
    await mkdir(resultsDir, { recursive: true })
    await writeFile(join(resultsDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`)
    console.log(`\nwrote ${join(resultsDir, 'results.json')}`)
  } finally {
    await pruneDockerSandboxes({ labels, docker })
  }
}

await main()
