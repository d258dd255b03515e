/**
 * Durations in options: a number of ms or a string like `'30m'`, `'24h'`,
 * `'90s'`, `'500ms'`, `'7d'`.
 */

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** The pattern a duration string must match. */
export const DURATION_PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/

/**
 * Parse a duration to milliseconds.
 * @returns ms, or `undefined` when the string does not match {@link DURATION_PATTERN}.
 */
export function parseDuration(value: number | string): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined
  const match = DURATION_PATTERN.exec(value.trim())
  if (!match) return undefined
  return Number(match[1]) * UNITS[match[2]!]!
}
