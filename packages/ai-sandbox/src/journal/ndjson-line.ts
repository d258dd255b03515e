/**
 * Parsing one line of an agent's NDJSON output, shared by the piped and the
 * journaled paths of `spawnNdjson`: the whole line as JSON, or a JSON object
 * after some text printed in front of it on the same line.
 */

/** What {@link parseNdjsonLine} returns as `value` for a line with no JSON in it. */
export const NOT_JSON = Symbol('not-json')

/** How many `{` positions a non-JSON line is tried from before it counts as text only. */
const MAX_RECOVERY_TRIES = 8

/**
 * Parse one line: the whole line as JSON, else a JSON object that starts
 * after some text on the same line (`noise` is that text), else only text.
 */
export function parseNdjsonLine(line: string): { value: unknown; noise?: string } {
  const whole = parseJson(line)
  if (whole !== NOT_JSON) return { value: whole }
  let from = line.indexOf('{', 1)
  for (let tries = 0; from > 0 && tries < MAX_RECOVERY_TRIES; tries++) {
    const value = parseJson(line.slice(from))
    if (value !== NOT_JSON && typeof value === 'object' && value !== null) return { value, noise: line.slice(0, from) }
    from = line.indexOf('{', from + 1)
  }
  return { value: NOT_JSON, noise: line }
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line)
  } catch {
    return NOT_JSON
  }
}
