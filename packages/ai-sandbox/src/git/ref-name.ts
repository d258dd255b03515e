/**
 * Branch and tag names as `git check-ref-format` accepts them, checked when a
 * workspace is defined so a bad `ref` fails there and not in a half-made
 * sandbox. A name starting with `-` is refused too: git would read it as an
 * option. Pure; no git binary needed.
 */
import { z } from 'zod'

/**
 * What is wrong with `ref` as a branch or tag name.
 * @returns A sentence fragment (e.g. `must not start with "-"`), or `undefined` when it is fine.
 * @example
 * ```ts
 * gitRefProblem('v1.2') // undefined
 * gitRefProblem('--upload-pack=x') // 'must not start with "-" (git would read it as an option)'
 * ```
 */
export function gitRefProblem(ref: string): string | undefined {
  if (ref.startsWith('-')) return 'must not start with "-" (git would read it as an option)'
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(ref)) return 'must not contain control characters'
  const bad = /[ ~^:?*[\\]/.exec(ref)
  if (bad) return `must not contain ${JSON.stringify(bad[0])} (git refuses space, ~ ^ : ? * [ and \\ in ref names)`
  if (ref.includes('..')) return 'must not contain ".."'
  if (ref.includes('@{')) return 'must not contain "@{"'
  if (ref === '@') return 'must not be "@"'
  if (ref.startsWith('/') || ref.endsWith('/') || ref.includes('//')) return 'must not start or end with "/" or contain "//"'
  if (ref.endsWith('.')) return 'must not end with "."'
  for (const part of ref.split('/')) {
    if (part.startsWith('.')) return `must not have a part starting with "." (${JSON.stringify(part)})`
    if (part.endsWith('.lock')) return `must not have a part ending with ".lock" (${JSON.stringify(part)})`
  }
  return undefined
}

/** The zod schema of a `ref` option: a non-empty branch or tag name git accepts. */
export const gitRefSchema = z
  .string()
  .min(1, 'expected a branch or tag name')
  .superRefine((ref, ctx) => {
    const problem = gitRefProblem(ref)
    if (problem) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(ref)} is not a branch or tag name git accepts: it ${problem}` })
  })
