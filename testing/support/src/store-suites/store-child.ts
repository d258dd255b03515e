/**
 * The body of a store-child process: a separate OS process on a package's
 * shared place (a database file, a PostgreSQL schema) that the multi-process
 * and fencing suites start (see children.ts). A package's fixture only opens
 * its stores from the command and calls {@link runStoreChild}; the roles are
 * here, the same for every package. Argument: one JSON command. Every event
 * is one JSON line on stdout: { event, at (Date.now()), pid, ... }.
 * Imports no vitest: it runs under plain node.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import type { StreamChunk } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { defineSandbox, defineWorkspace, StaleEpochError, type SandboxCheckpointInput, type SandboxCheckpointLease } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import type { StoreErrorClass, SuiteStores } from './target.js'

/**
 * What a child is told to do. The package's fixture reads its own fields (the
 * place; `leaseMs` and `detectDeadHolders` for its lock store) to open the stores.
 *   contend: report `ready`, wait for `goFile`, then enter `key` `rounds` times, logging "enter <pid>" / "exit <pid>" to `logFile` inside.
 *            Turns are choreographed through `<logFile>.want` so the two really contend every round, however the
 *            machine schedules them: before each try a process logs "want <pid>"; inside, it stays until the other
 *            process is waiting for the key (or done); once out, it waits until the other has entered as often as it
 *            has (or is done) before trying again. The key itself is only ever taken through the lock.
 *   hold:    take `key`, report `acquired`, stay inside until the lease is lost (report `lost` with its reason) or killed.
 *   take:    report `ready`, wait for `goFile` (when given), report `waiting`, take `key`, report `acquired`, stay inside `holdMs`, then exit.
 *   append:  append `count` chunks to run `runId`, one every `intervalMs`, then close the log; with `holdFile`,
 *            after the first chunk wait until that file exists (the test writes it once the reader has that chunk).
 *   tail:    read run `runId` from the start, report each `chunk`, then `ended`.
 *   ensure:  report `ready`, wait for `goFile`, ensure the sandbox of `threadId` (local-process under
 *            `root`, a 300 ms setup step; each provider create() reported as `create`), report `ensured`
 *            with its id; `memoryLocks` uses a per-process lock. With `createBarrier` { dir, count }, each create()
 *            leaves a file in `dir` and waits until `count` processes have, so none records its sandbox before the
 *            others have looked for one. Then they record in turn (by pid): each create() returns only once every
 *            process before it has written its record (a file per record in `<dir>.recorded`). Without that order the
 *            two could write and read back in the window a get/upsert store cannot close (docs/lifecycle.md
 *            "Without a shared lock"), and each keep its own sandbox.
 *   worker:  read one JSON command per stdin line and answer each; used by the fencing proof:
 *            { op: 'drive', runId, key, appends? }: take `key`, bump the run's driverEpoch under it (the
 *            driver's claim), report `claimed` { epoch }, then append one chunk at a time through
 *            stream.atEpoch(epoch), reporting `appended` { offset, n }, IGNORING the lease's signal (a
 *            process that has not noticed it lost), until `appends` were stored (when given) or an append
 *            is refused with StaleEpochError; then report `refused` { storedEpoch } (when it was) and the
 *            result of updateAtEpoch(epoch, { status: 'completed' }) as `settled` { applied }.
 *            { op: 'exit' } ends the worker.
 *   snapshot-race: report `ready`, wait for `goFile`, then append each of `appends` ({ lease, checkpoint }) on the
 *            head `null`, or acquire the snapshot lease of each of `threadIds` for `owner`, one after the other;
 *            report `raced` { results: ('ok' | the refusal's reason)[] }.
 */
export interface StoreChildCommand {
  role: 'contend' | 'hold' | 'take' | 'append' | 'tail' | 'ensure' | 'worker' | 'snapshot-race'
  key?: string
  leaseMs?: number
  detectDeadHolders?: boolean
  rounds?: number
  logFile?: string
  goFile?: string
  holdMs?: number
  runId?: string
  count?: number
  intervalMs?: number
  holdFile?: string
  root?: string
  threadId?: string
  memoryLocks?: boolean
  createBarrier?: { dir: string; count: number }
  owner?: string
  appends?: { lease: SandboxCheckpointLease; checkpoint: SandboxCheckpointInput }[]
  threadIds?: string[]
}

interface WorkerCommand {
  op: 'drive' | 'exit'
  runId?: string
  key?: string
  appends?: number
}

function report(event: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ event, at: Date.now(), pid: process.pid, ...fields }) + '\n')
}

function chunk(delta: string): StreamChunk {
  return { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta, timestamp: Date.now() } as StreamChunk
}

/**
 * Run the command of this process's argument (see {@link StoreChildCommand})
 * over the stores `open` returns, close them, and report `exit`.
 * @param open Opens the package's stores from the command (its own fields name the place).
 * @param lockLost The package's lock-lost error class, whose `reason` a lost holder reports.
 */
export async function runStoreChild<C extends object>(open: (command: StoreChildCommand & C) => SuiteStores | Promise<SuiteStores>, lockLost: StoreErrorClass): Promise<void> {
  const command = JSON.parse(process.argv[2]!) as StoreChildCommand & C
  const stores = await open(command)
  const key = command.key ?? 'key'
  const lostReason = (reason: unknown): string => (lockLost.isInstance(reason) ? reason.reason : String(reason))

  async function drive(input: WorkerCommand): Promise<void> {
    const runId = input.runId!
    await stores.locks.withLock(input.key!, async (signal) => {
      signal.addEventListener('abort', () => report('lease-lost', { reason: lostReason(signal.reason) }), { once: true })
      // The driver's claim: read-modify-write of driverEpoch under the lock.
      const record = await stores.runs.get(runId)
      const epoch = (record?.driverEpoch ?? 0) + 1
      await stores.runs.update(runId, { driverEpoch: epoch })
      report('claimed', { epoch })
      const log = stores.stream({ runId }).atEpoch(epoch)
      let stale: StaleEpochError | undefined
      for (let n = 0; input.appends === undefined || n < input.appends; n++) {
        try {
          const [offset] = await log.append([chunk(`${process.pid}:${epoch}:${n}`)])
          report('appended', { offset, n })
        } catch (error) {
          if (error instanceof StaleEpochError) {
            stale = error
            break
          }
          // Anything else (the server ended a transaction left idle while this process was stopped): nothing was stored; go on.
          report('append-failed', { n, message: (error as Error).message })
        }
        await sleep(2)
      }
      if (stale) report('refused', { epoch, storedEpoch: stale.storedEpoch })
      const applied = await stores.runs.updateAtEpoch(runId, epoch, { status: 'completed', finishedAt: Date.now() })
      report('settled', { epoch, applied })
    })
  }

  switch (command.role) {
    case 'contend': {
      // Start together: wait for the test's go file, so both processes contend from the first round.
      report('ready')
      while (!existsSync(command.goFile!)) await sleep(2)
      const wantFile = `${command.logFile!}.want`
      const me = String(process.pid)
      /** The other process: how often it asked for the key and entered, and whether it is done. */
      const other = () => {
        const lines = (name: string) => (existsSync(name) ? readFileSync(name, 'utf8').split('\n').filter(Boolean) : []).map((line) => line.split(' '))
        const wants = lines(wantFile).filter(([, pid]) => pid !== me)
        const count = (kind: string, rows: string[][]) => rows.filter(([what]) => what === kind).length
        return { wanted: count('want', wants), done: count('done', wants) > 0, entered: count('enter', lines(command.logFile!).filter(([, pid]) => pid !== me)) }
      }
      for (let i = 0; i < command.rounds!; i++) {
        appendFileSync(wantFile, `want ${me}\n`)
        await stores.locks.withLock(key, async () => {
          appendFileSync(command.logFile!, `enter ${me}\n`)
          // Stay inside until the other process is blocked on the key: an unsound lock would let it in now (and
          // the wait ends then too, leaving the overlap in the log for the test to find).
          const enteredBefore = other().entered
          for (let o = other(); !o.done && o.wanted <= o.entered && o.entered === enteredBefore; o = other()) await sleep(1)
          await sleep(Math.random() * 4)
          appendFileSync(command.logFile!, `exit ${me}\n`)
        })
        // Let the other process have its turn before trying again.
        for (let o = other(); !o.done && o.entered < i + 1; o = other()) await sleep(1)
      }
      appendFileSync(wantFile, `done ${me}\n`)
      break
    }
    case 'hold': {
      await stores.locks.withLock(key, async (signal) => {
        report('acquired')
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        report('lost', { reason: lostReason(signal.reason) })
      })
      break
    }
    case 'take': {
      // With a go file, try only once the test says so (after the holder has the key).
      report('ready')
      if (command.goFile !== undefined) while (!existsSync(command.goFile)) await sleep(2)
      report('waiting')
      await stores.locks.withLock(key, async () => {
        report('acquired')
        await sleep(command.holdMs ?? 0)
      })
      break
    }
    case 'append': {
      const log = stores.stream({ runId: command.runId! })
      for (let i = 0; i < command.count!; i++) {
        const [offset] = await log.append([chunk(`chunk ${i}`)])
        report('appended', { offset })
        if (i === 0 && command.holdFile !== undefined) while (!existsSync(command.holdFile)) await sleep(2)
        await sleep(command.intervalMs ?? 0)
      }
      // 'closing' is stamped before the close commits, so a reader that sees the end can never stamp its own 'ended'
      // earlier; 'closed', stamped after close() returned, can come after the reader's.
      report('closing')
      await log.close()
      report('closed')
      break
    }
    case 'tail': {
      report('reading')
      for await (const { offset, chunk: c } of stores.stream({ runId: command.runId! }).read('-1')) {
        report('chunk', { offset, delta: (c as { delta?: string }).delta })
      }
      report('ended')
      break
    }
    case 'ensure': {
      // The provider, with every create() reported.
      const base = localProcessSandbox({ root: command.root! })
      const provider = new Proxy(base, {
        get(target, name) {
          const value = Reflect.get(target, name) as unknown
          if (name === 'create')
            return async (...args: Parameters<typeof base.create>) => {
              report('create')
              const barrier = command.createBarrier
              if (barrier !== undefined) {
                mkdirSync(barrier.dir, { recursive: true })
                writeFileSync(join(barrier.dir, String(process.pid)), '')
                while (readdirSync(barrier.dir).length < barrier.count) await sleep(2)
                const turn = readdirSync(barrier.dir).map(Number).sort((a, b) => a - b).indexOf(process.pid)
                while (readdirSync(recordedDir!).length < turn) await sleep(2)
              }
              return base.create(...args)
            }
          return typeof value === 'function' ? value.bind(target) : value
        },
      })
      // With a barrier: a file per record written, beside the barrier's folder, so the processes record in turn.
      const recordedDir = command.createBarrier === undefined ? undefined : `${command.createBarrier.dir}.recorded`
      if (recordedDir !== undefined) mkdirSync(recordedDir, { recursive: true })
      const instances = {
        ...stores.instances,
        upsert: async (record: Parameters<typeof stores.instances.upsert>[0]) => {
          await stores.instances.upsert(record)
          if (recordedDir !== undefined) writeFileSync(join(recordedDir, String(process.pid)), '')
        },
      }
      const sandbox = defineSandbox({
        id: 'multi-process',
        provider,
        workspace: defineWorkspace({ setup: ['sleep 0.3'] }),
        lifecycle: { reuse: 'thread' },
      })
      report('ready')
      while (!existsSync(command.goFile!)) await sleep(2)
      const locks = command.memoryLocks ? new InMemoryLockStore() : stores.locks
      const handle = await sandbox.ensure({ threadId: command.threadId!, runId: `run-${process.pid}`, instances, locks })
      report('ensured', { id: handle.id })
      break
    }
    case 'worker': {
      report('ready')
      for await (const line of createInterface({ input: process.stdin })) {
        if (!line.trim()) continue
        const input = JSON.parse(line) as WorkerCommand
        if (input.op === 'exit') break
        try {
          await drive(input)
        } catch (error) {
          report('error', { message: (error as Error).message })
        }
        report('done', { runId: input.runId })
      }
      // Let go of stdin, or it would keep this process alive.
      process.stdin.destroy()
      break
    }
    case 'snapshot-race': {
      report('ready')
      while (!existsSync(command.goFile!)) await sleep(1)
      const { checkpoints } = stores.snapshots.stores
      const results: string[] = []
      for (const { lease, checkpoint } of command.appends ?? []) {
        const result = await checkpoints.append({ lease, expectedHead: null, checkpoint })
        results.push(result.ok ? 'ok' : result.reason)
      }
      for (const threadId of command.threadIds ?? []) results.push((await checkpoints.acquireLease(threadId, { owner: command.owner!, ttlMs: 60_000 })) === null ? 'held' : 'ok')
      report('raced', { results })
      break
    }
  }
  await stores.close()
  report('exit')
}
