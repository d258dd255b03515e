/**
 * A small seeded generator for the randomized tests of this package
 * (mulberry32): the same seed draws the same values again, so a failing case
 * that prints its seed replays.
 */
import { randomInt } from 'node:crypto'

/** A generator of numbers in [0, 1) drawn from `seed` (a 32-bit integer). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The seed named by the environment variable `name`, else a fresh one; printed with how to replay it. */
export function testSeed(name: string, what: string): number {
  const raw = process.env[name]
  const seed = raw === undefined || raw === '' ? randomInt(2 ** 30) : Number(raw)
  if (!Number.isInteger(seed)) throw new Error(`${name}=${raw} is not an integer seed; unset it or pass the seed a failing run printed.`)
  console.info(`[${what}] seed ${seed}: ${name}=${seed} replays it`)
  return seed
}
