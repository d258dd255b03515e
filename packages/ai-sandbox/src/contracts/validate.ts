/**
 * The single path from a zod schema to a `SandboxConfigError`: the first issue
 * becomes a message that names the dotted field and says what was expected.
 * An unknown key also gets a "did you mean" (a key of that name one level or
 * more down, or a near spelling beside it) or the caller's own advice.
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import { SandboxConfigError } from './errors.js'

/** Extra advice for {@link parseOptions}. */
export interface ParseOptionsAdvice {
  /**
   * Advice for a key the schema does not know, by key name, used instead of
   * the automatic "did you mean" (e.g. `{ apiKey: 'Pass the key as …' }` for
   * an option users expect but the API takes elsewhere).
   */
  readonly unknownKeys?: Readonly<Record<string, string>>
}

/**
 * Parse `input` with `schema` or throw {@link SandboxConfigError} whose
 * `field` is the dotted path of the first problem. Providers use it to
 * validate their config objects the same way core does.
 *
 * For an unknown key (a `.strict()` object) the message adds, in order: the
 * caller's advice for that key name; or "Did you mean `<prefix>.a.b`?" when
 * an object below the one with the key has a key of that name (case
 * ignored), e.g. `dockerSandbox({ memory })` → `dockerSandbox.resources.memory`;
 * or a known key beside it within a small edit distance (`maxTurn` →
 * `maxTurns`); or else the known keys.
 * @param prefix - Dotted name of the option object, e.g. `dockerSandbox`.
 * @param advice - Optional advice for unknown keys (see {@link ParseOptionsAdvice}).
 * @returns The parsed value.
 * @throws SandboxConfigError naming the field.
 */
export function parseOptions<TSchema extends z.ZodType>(schema: TSchema, input: unknown, prefix: string, advice?: ParseOptionsAdvice): z.output<TSchema> {
  const result = schema.safeParse(input)
  if (result.success) return result.data
  const issue = firstIssue(result.error.issues, input)
  const path = issue.path.map(String)
  if (issue.code === 'unrecognized_keys') {
    // An unknown key is reported on its object; name the key itself.
    const key = issue.keys[0]!
    const field = [prefix, ...path, key].join('.')
    const hint = advice?.unknownKeys?.[key] ?? suggestKey(schema, path, key, [prefix, ...path].join('.'))
    throw new SandboxConfigError(field, `Invalid option ${field}: ${issue.message}.${hint ? ` ${hint}` : ''}`, { cause: result.error })
  }
  const field = [prefix, ...path].join('.')
  throw new SandboxConfigError(field, `Invalid option ${field}: ${messageOf(issue)}.`, { cause: result.error })
}

/** The issue's message; for a record key that failed its schema, the key schema's own message (zod says only "Invalid key in record"). */
function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key') {
    const inner = issue.issues[0]?.message
    if (inner) return `invalid key: ${inner}`
  }
  return issue.message
}

/**
 * The issue to report: the first, except that a missing field next to an
 * unknown key yields to the unknown key (`{ imgae }` is a misspelt `image`,
 * and "did you mean" says so where "expected string" would not).
 */
function firstIssue(issues: readonly z.core.$ZodIssue[], input: unknown): z.core.$ZodIssue {
  const first = issues[0]!
  if (first.code !== 'invalid_type' || first.path.length === 0 || valueAt(input, first.path) !== undefined) return first
  const parent = first.path.slice(0, -1).map(String).join('\0')
  return issues.find((issue) => issue.code === 'unrecognized_keys' && issue.path.map(String).join('\0') === parent) ?? first
}

/** The value at `path` in `input`, or `undefined`. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input
  for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key] : undefined
  return value
}

/** The parts of a zod 4 schema definition the key search reads. */
interface SchemaDef {
  type?: string
  shape?: Record<string, z.ZodType>
  innerType?: z.ZodType
  in?: z.ZodType
  out?: z.ZodType
  options?: readonly z.ZodType[]
  left?: z.ZodType
  right?: z.ZodType
  element?: z.ZodType
  getter?: () => z.ZodType
}

/** The object shapes a schema stands for, through optional, default, pipe, union, intersection and lazy wrappers. */
function shapesOf(schema: z.ZodType | undefined, depth = 0): Record<string, z.ZodType>[] {
  if (!schema || depth > 8) return []
  const def = (schema as unknown as { _zod?: { def?: SchemaDef } })._zod?.def
  if (!def) return []
  if (def.type === 'object' && def.shape) return [def.shape]
  const inner = [def.innerType, def.in, def.out, def.left, def.right, ...(def.options ?? []), def.type === 'lazy' ? def.getter?.() : undefined]
  return inner.flatMap((next) => shapesOf(next, depth + 1))
}

/** The array element schema (for a numeric path segment), through wrappers. */
function elementOf(schema: z.ZodType, depth = 0): z.ZodType | undefined {
  const def = (schema as unknown as { _zod?: { def?: SchemaDef } })._zod?.def
  if (!def || depth > 8) return undefined
  if (def.type === 'array') return def.element
  for (const next of [def.innerType, def.in, def.out]) {
    const element = next && elementOf(next, depth + 1)
    if (element) return element
  }
  return undefined
}

/** The schemas at `path` below `schema` (several when a union branches). */
function schemasAt(schema: z.ZodType, path: readonly string[]): z.ZodType[] {
  let current: z.ZodType[] = [schema]
  for (const segment of path) {
    current = current.flatMap((node) => {
      if (/^\d+$/.test(segment)) {
        const element = elementOf(node)
        return element ? [element] : []
      }
      return shapesOf(node).flatMap((shape) => (shape[segment] ? [shape[segment]] : []))
    })
  }
  return current
}

/** Edit distance between two short strings: insertions, deletions, substitutions and swaps of neighbours (optimal string alignment). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** "Did you mean …?" for unknown `key` of the object at `path`, or the known keys; `undefined` when nothing useful is known. */
function suggestKey(schema: z.ZodType, path: readonly string[], key: string, objectName: string): string | undefined {
  const shapes = schemasAt(schema, path).flatMap((node) => shapesOf(node))
  const known = [...new Set(shapes.flatMap((shape) => Object.keys(shape)))]
  if (known.length === 0) return undefined
  const wanted = key.toLowerCase()
  // A key of that name further down: the user put a nested option at the top.
  const nested: string[] = []
  const walk = (node: Record<string, z.ZodType>, trail: string[], depth: number) => {
    for (const [name, child] of Object.entries(node)) {
      const here = [...trail, name]
      if (depth > 0 && name.toLowerCase() === wanted) nested.push(here.join('.'))
      if (depth < 3) for (const shape of shapesOf(child)) walk(shape, here, depth + 1)
    }
  }
  for (const shape of shapes) walk(shape, [], 0)
  if (nested.length > 0) return `Did you mean ${nested.map((p) => `${objectName}.${p}`).join(' or ')}?`
  const near = known
    .map((name) => ({ name, d: name.toLowerCase() === wanted ? 0 : distance(name.toLowerCase(), wanted) }))
    .filter(({ d }) => d <= Math.max(1, Math.floor(key.length / 3)))
    .sort((a, b) => a.d - b.d)
  if (near.length > 0) return `Did you mean ${objectName}.${near[0]!.name}?`
  return `Known options: ${known.join(', ')}.`
}

/** The `logger` option of the durability entry points: chat()'s `InternalLogger` (anything with an `errors()` method), optional. */
export const loggerSchema = z
  .custom<InternalLogger>((v) => typeof v === 'object' && v !== null && typeof (v as { errors?: unknown }).errors === 'function', {
    message: "expected chat()'s InternalLogger (an object with an errors() method), e.g. resolveDebugOption(debug)",
  })
  .optional()
