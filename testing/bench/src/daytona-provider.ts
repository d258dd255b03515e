/**
 * The Daytona provider beside the bare SDK, both against the Daytona
 * stand-in in the same run: sandbox create (to a usable handle), the exec
 * round trip of `true`, and a 10 MB file written and read back. The bare
 * calls are what a user of `@daytona/sdk` alone would write (`create`,
 * `process.executeCommand`, `fs.uploadFile`/`downloadFile`), so the ratio is
 * the provider's cost for stdout/stderr apart, kills, confinement and secret
 * handling. Owns the stand-in and every sandbox; alternates the pairs.
 */
import { randomBytes } from 'node:crypto'
import { Daytona } from '@daytona/sdk'
import { daytonaSandbox } from '@tanstack/ai-sandbox-daytona'
import { DAYTONA_IMAGE, startDaytonaStandin } from '@testing/daytona-standin'
import { BenchError, median } from './stats.js'

/** One figure of the table: the provider's median and the bare SDK's, in ms. */
export interface DaytonaProviderRow {
  readonly figure: string
  readonly samples: number
  readonly providerMs: number
  readonly sdkMs: number
}

/** Time `run` once, in ms. */
async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await run()
  return performance.now() - start
}

/**
 * Measure the three figures, provider and SDK alternating.
 *
 * @param sizes - `creates` (pairs of creates), `execs` (pairs of exec round trips), `files` (pairs of 10 MB write + read).
 * @throws BenchError `bench-failed` when a call returns something unexpected (a failed exec, different bytes).
 */
export async function benchDaytonaProvider(sizes: { creates: number; execs: number; files: number }): Promise<DaytonaProviderRow[]> {
  const standin = await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: { 'tanstack-bench.run': `daytona-${randomBytes(4).toString('hex')}` } })
  const provider = daytonaSandbox({ apiKey: 'test', apiUrl: standin.apiUrl })
  const daytona = new Daytona({ apiKey: 'test', apiUrl: standin.apiUrl, useDeprecatedPolling: true })
  const rows: DaytonaProviderRow[] = []
  try {
    const creates = { provider: [] as number[], sdk: [] as number[] }
    for (let i = 0; i < sizes.creates; i++) {
      let handle: Awaited<ReturnType<typeof provider.create>> | undefined
      creates.provider.push(await timed(async () => (handle = await provider.create())))
      await handle!.destroy()
      let sandbox: Awaited<ReturnType<typeof daytona.create>> | undefined
      creates.sdk.push(await timed(async () => (sandbox = await daytona.create())))
      await sandbox!.delete()
    }
    rows.push({ figure: 'create (to a usable sandbox)', samples: sizes.creates, providerMs: median(creates.provider), sdkMs: median(creates.sdk) })

    const handle = await provider.create()
    const sandbox = await daytona.get(handle.id)
    try {
      const execs = { provider: [] as number[], sdk: [] as number[] }
      for (let i = 0; i < sizes.execs + 3; i++) {
        const ours = await timed(async () => {
          const result = await handle.process.exec('true')
          if (result.exitCode !== 0) throw new BenchError(`exec('true') exited ${result.exitCode}: ${result.stderr}`)
        })
        const bare = await timed(async () => {
          const result = await sandbox.process.executeCommand('true')
          if (result.exitCode !== 0) throw new BenchError(`executeCommand('true') exited ${result.exitCode}`)
        })
        // The first three pairs warm the session pool and the connections.
        if (i >= 3) {
          execs.provider.push(ours)
          execs.sdk.push(bare)
        }
      }
      rows.push({ figure: "exec('true') round trip", samples: sizes.execs, providerMs: median(execs.provider), sdkMs: median(execs.sdk) })

      const bytes = randomBytes(10 * 1024 * 1024)
      const writes = { provider: [] as number[], sdk: [] as number[] }
      const reads = { provider: [] as number[], sdk: [] as number[] }
      for (let i = 0; i < sizes.files; i++) {
        writes.provider.push(await timed(() => handle.fs.write('bench.bin', bytes)))
        writes.sdk.push(await timed(() => sandbox.fs.uploadFile(bytes, `${handle.workspaceRoot}/bare.bin`)))
        let ours: Uint8Array | undefined
        reads.provider.push(await timed(async () => (ours = await handle.fs.readBytes('bench.bin'))))
        let bare: Buffer | undefined
        reads.sdk.push(await timed(async () => (bare = await sandbox.fs.downloadFile(`${handle.workspaceRoot}/bare.bin`))))
        if (!Buffer.from(ours!).equals(bytes) || !bare!.equals(bytes)) throw new BenchError('a 10 MB file did not come back byte for byte')
      }
      rows.push({ figure: '10 MB fs.write', samples: sizes.files, providerMs: median(writes.provider), sdkMs: median(writes.sdk) })
      rows.push({ figure: '10 MB fs.readBytes', samples: sizes.files, providerMs: median(reads.provider), sdkMs: median(reads.sdk) })
    } finally {
      await handle.destroy()
    }
    return rows
  } finally {
    await daytona[Symbol.asyncDispose]()
    await standin.close()
  }
}
