/**
 * Small statistics and formatting helpers for the benchmarks, plus the one
 * error class the bench throws. Owns no measuring: the bench files time things
 * with tinybench and hand their samples here.
 * Invariant: percentiles never mutate the caller's sample array.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/** Thrown when a benchmark's own sanity check fails (wrong exit code, lost lines). */
export class BenchError extends SandboxError<'bench-failed'> {
  constructor(message: string, options?: { cause?: unknown }) {
    super('bench-failed', message, options)
  }
}

/**
 * The `p`-th percentile (0-100) of `samples`, linearly interpolated between
 * the two nearest ranks (numpy's default).
 *
 * @throws BenchError `bench-failed` when `samples` is empty.
 * @example
 * ```ts
 * percentile([1, 2, 3, 4], 50) // => 2.5
 * ```
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new BenchError('percentile() of an empty sample set: the benchmark recorded no samples.')
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = (Math.min(Math.max(p, 0), 100) / 100) * (sorted.length - 1)
  const low = Math.floor(rank)
  const high = Math.ceil(rank)
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low)
}

/** The median (50th percentile) of `samples`. */
export function median(samples: readonly number[]): number {
  return percentile(samples, 50)
}

/** Round to `digits` decimals for the printed table. */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}

/**
 * Read a positive integer from an environment variable, or use `fallback`.
 * With `{ zero: true }`, 0 is accepted too (a count where 0 skips the item).
 * @throws BenchError when the variable is set to anything else.
 */
export function envInt(name: string, fallback: number, options: { zero?: boolean } = {}): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  const least = options.zero ? 0 : 1
  if (!Number.isInteger(value) || value < least) {
    throw new BenchError(`${name}=${raw} is not a whole number of ${least} or more; unset it or pass e.g. ${name}=${fallback}.`)
  }
  return value
}
