/**
 * Sample statistics for the Docker benchmarks: percentiles (linear between
 * the nearest ranks), a timer, and rounding for the printed tables.
 * Invariant: percentiles never mutate the caller's sample array.
 */
import { performance } from 'node:perf_hooks'

/** The `p`-th percentile (0-100) of `samples`; NaN for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = (p / 100) * (sorted.length - 1)
  const low = Math.floor(rank)
  const high = Math.ceil(rank)
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low)
}

/** Run `body` `times` times one after another and return each duration in ms. */
export async function timeEach(times: number, body: (index: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = []
  for (let index = 0; index < times; index++) {
    const start = performance.now()
    await body(index)
    samples.push(performance.now() - start)
  }
  return samples
}

/** Median and p95 of `samples`, rounded to 0.1 ms. */
export function summary(samples: readonly number[]): { medianMs: number; p95Ms: number; runs: number } {
  return { medianMs: round(percentile(samples, 50), 1), p95Ms: round(percentile(samples, 95), 1), runs: samples.length }
}

/** Round to `digits` decimals. */
export function round(value: number, digits: number): number {
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}

/** A positive integer from the environment, or `fallback`. */
export function envInt(name: string, fallback: number): number {
  const value = Number(process.env[name])
  return Number.isInteger(value) && value > 0 ? value : fallback
}
