/**
 * Child OS processes for the store suites: a package's store-child fixture
 * (which opens its stores and hands them to `runStoreChild`) bundled once per
 * test file from the sources, with every package but the native ones
 * (`bundleScript`), so a child starts in a third of a second instead of
 * compiling the sources under tsx. Start one with a JSON command, read its
 * JSON-line events, send it stdin lines; every child left running after a
 * test is resumed, killed and reaped (checked gone).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import { bundleScript, type ScriptBundle } from '../script-bundle.js'

/** Maps our package names to their sources in the bundle, as the tests import them. */
const CHILD_TSCONFIG = fileURLToPath(new URL('./child.tsconfig.json', import.meta.url))
/** Packages that stay out of the bundle: the stores' native bindings (pg-native is optional and never loaded). */
const NATIVE_PACKAGES = ['better-sqlite3', 'pg-native']
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

/** Starts a child with one JSON command. */
export type StartChild = (command: Record<string, unknown>) => Child

/**
 * Children of the current test file (or describe block) running `fixture`,
 * bundled before its first test and removed after its last; every child left
 * running after a test is resumed (SIGCONT), killed and reaped.
 * @param fixture Absolute path of the package's store-child fixture.
 */
export function childProcesses(fixture: string): { start: StartChild } {
  const children: Child[] = []
  let bundle: ScriptBundle | undefined
  beforeAll(async () => {
    bundle = await bundleScript(fixture, CHILD_TSCONFIG, { inlinePackagesExcept: NATIVE_PACKAGES })
  })
  afterAll(() => {
    if (bundle === undefined) return
    bundle.dispose()
    expect(existsSync(dirname(bundle.file))).toBe(false)
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
    const child = spawn(process.execPath, [bundle!.file, JSON.stringify(command)], { stdio: ['pipe', 'pipe', 'pipe'] })
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
