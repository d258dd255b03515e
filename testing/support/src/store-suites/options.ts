/**
 * The option checks a store package shares: a table of refused options, each
 * one a case that expects a SandboxConfigError naming the field, and the two
 * small catchers its own option cases use ({@link thrown} for a call that must
 * throw, {@link rejection} for a promise that must reject). The table's rows
 * and the package's other cases stay in its options.test.ts.
 */
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { expect, it } from 'vitest'

/** One refused option set: the options, the field the error names, a pattern of its message. */
export type RefusedOptions = [options: object, field: string, message: RegExp]

/** The error `fn` throws; fails when it returns. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

/** The reason `promise` rejects with; fails when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (e: unknown) => e,
  )
}

/**
 * Register one case per row of `refused` ('<options> is refused naming
 * <field>'): `create(options)` throws or rejects with a SandboxConfigError
 * whose `field` is the row's and whose message matches its pattern.
 * @param create The package's store factory (createSqliteStores, createPostgresStores).
 */
export function itRefusesOptions(create: (options: never) => unknown, refused: ReadonlyArray<RefusedOptions>): void {
  it.each(refused)('%j is refused naming %s', async (options, field, message) => {
    const error = await rejection((async () => create(options as never))())
    expect(SandboxConfigError.isInstance(error)).toBe(true)
    expect((error as SandboxConfigError).field).toBe(field)
    expect((error as Error).message).toMatch(message)
  })
}
