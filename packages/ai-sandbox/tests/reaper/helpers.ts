/**
 * What the reaper tests share: the processes of a naive host provider still
 * alive (found by its environment tag through /proc), and a logger that keeps
 * its lines. It asserts nothing itself.
 */
import { readdirSync, readFileSync } from 'node:fs'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { NAIVE_TAG_ENV } from '../testkit/naive-host-provider.js'

/** Pids of live processes carrying `NAIVE_HOST_RUN=<tag>`, after waiting up to 1 s for them to go. */
export async function taggedProcesses(tag: string): Promise<string[]> {
  if (process.platform !== 'linux') return []
  const needle = Buffer.from(`\0${NAIVE_TAG_ENV}=${tag}\0`)
  const tagged = () =>
    readdirSync('/proc').filter((name) => {
      try {
        return /^\d+$/.test(name) && Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`)]).includes(needle)
      } catch {
        return false
      }
    })
  for (let i = 0; i < 50 && tagged().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  return tagged()
}

/** An InternalLogger whose `errors` and `warn` lines are kept. */
export function capturingLogger(): { logger: InternalLogger; errors: string[]; warnings: string[] } {
  const errors: string[] = []
  const warnings: string[] = []
  const noop = () => undefined
  const logger = new Proxy({} as InternalLogger, {
    get: (_, name) => (name === 'errors' ? (message: string) => void errors.push(message) : name === 'warn' ? (message: string) => void warnings.push(message) : noop),
  })
  return { logger, errors, warnings }
}
