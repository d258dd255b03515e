// The failure a conformance check reports for a deliberately broken store, for the tests proving each kit catches one.
import { expect } from 'vitest'

/** The message `check` rejects with, failing the test when it passes. */
export async function failureOf(check: () => Promise<void>): Promise<string> {
  const error = await check().then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error, 'the kit must fail the broken store').toBeDefined()
  return error instanceof Error ? error.message : String(error)
}
