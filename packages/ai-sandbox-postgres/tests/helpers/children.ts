// Child OS processes running tests/fixtures/store-child.ts: bundled once per
// test file from the sources (esbuild, into a temp folder, so a child starts
// in a fraction of a second instead of compiling the sources under tsx);
// start one with a JSON command, read its JSON-line events, send it stdin
// lines, and kill and reap every child after each test (checked gone).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'

const CHILD = fileURLToPath(new URL('../fixtures/store-child.ts', import.meta.url))
const CORE = fileURLToPath(new URL('../../../ai-sandbox/src/index.ts', import.meta.url))
/** Child startup can take seconds on a loaded 2-core machine. */
const EVENT_TIMEOUT_MS = 30_000

/** One event a child reported. */
export interface ChildEvent {
  event: string
  at: number
  pid: number
  [field: string]: unknown
}

/** A running child. */
export interface Child {
  readonly process: ChildProcess
  readonly events: ChildEvent[]
  /** The first event named `event` at index `from` (default 0) or later, already seen or still to come. */
  next: (event: string, from?: number) => Promise<ChildEvent>
  /** Send one JSON command line on stdin. */
  send: (command: Record<string, unknown>) => void
  readonly exited: Promise<number | null>
}

/**
 * Children started by the current test file; every one left running after a
 * test is resumed (SIGCONT), killed and reaped.
 */
export function childProcesses(): { start: (command: Record<string, unknown>) => Child } {
  const children: Child[] = []
  const dir = mkdtempSync(join(tmpdir(), 'pg-child-'))
  const bundle = join(dir, 'store-child.mjs')
  beforeAll(async () => {
    await build({
      entryPoints: [CHILD],
      outfile: bundle,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      // The child uses core from the sources, like the tests; pg's optional native binding is never loaded.
      alias: { '@tanstack/ai-sandbox': CORE },
      external: ['pg-native'],
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      logLevel: 'silent',
    })
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
    expect(existsSync(dir)).toBe(false)
  })
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.process.exitCode === null && child.process.signalCode === null) {
        child.process.kill('SIGCONT')
        child.process.kill('SIGKILL')
      }
      await child.exited
      expect(child.process.exitCode !== null || child.process.signalCode !== null).toBe(true)
    }
  })
  const start = (command: Record<string, unknown>): Child => {
    const child = spawn(process.execPath, [bundle, JSON.stringify(command)], { stdio: ['pipe', 'pipe', 'pipe'] })
    const events: ChildEvent[] = []
    const listeners = new Set<() => void>()
    let buffered = ''
    let stderr = ''
    child.stdout!.setEncoding('utf8').on('data', (data: string) => {
      buffered += data
      const lines = buffered.split('\n')
      buffered = lines.pop()!
      for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as ChildEvent)
      for (const listener of [...listeners]) listener()
    })
    child.stderr!.setEncoding('utf8').on('data', (data: string) => (stderr += data))
    child.stdin!.on('error', () => undefined)
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    const next = (event: string, from = 0): Promise<ChildEvent> =>
      new Promise((resolve, reject) => {
        const find = (): ChildEvent | undefined => events.slice(from).find((e) => e.event === event)
        const check = (): boolean => {
          const found = find()
          if (found) {
            cleanup()
            resolve(found)
          }
          return found !== undefined
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`child ${JSON.stringify(command)} reported no "${event}" within ${EVENT_TIMEOUT_MS} ms; events ${JSON.stringify(events.slice(-20))}; stderr: ${stderr}`))
        }, EVENT_TIMEOUT_MS)
        const onExit = (): void => {
          if (!check()) {
            cleanup()
            reject(new Error(`child exited before "${event}"; events ${JSON.stringify(events.slice(-20))}; stderr: ${stderr}`))
          }
        }
        const cleanup = (): void => {
          clearTimeout(timer)
          listeners.delete(listener)
          child.off('close', onExit)
        }
        const listener = (): void => void check()
        listeners.add(listener)
        child.once('close', onExit)
        check()
      })
    const handle: Child = { process: child, events, next, send: (line) => child.stdin!.write(JSON.stringify(line) + '\n'), exited }
    children.push(handle)
    return handle
  }
  return { start }
}
