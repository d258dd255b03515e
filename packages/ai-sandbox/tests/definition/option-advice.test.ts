// parseOptions' advice for unknown keys (issue 30): a key that lives further
// down, a near spelling, the caller's own advice, or the known keys, through
// the wrappers real option schemas use (optional, default, refine, union,
// arrays).
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { SandboxConfigError, parseOptions } from '../../src/index.js'

const schema = z
  .object({
    image: z.string(),
    resources: z.object({ memory: z.number().optional(), cpus: z.number().optional() }).strict().optional(),
    source: z.union([z.object({ url: z.string(), branch: z.string().optional() }).strict(), z.object({ path: z.string() }).strict()]).optional(),
    mounts: z.array(z.object({ target: z.string(), readOnly: z.boolean().optional() }).strict()).default([]),
  })
  .strict()
  .refine(() => true)

/** The message of the SandboxConfigError `parseOptions` throws for `input`. */
function messageFor(input: unknown, advice?: Parameters<typeof parseOptions>[3]): { field: string; message: string } {
  try {
    parseOptions(schema, input, 'opts', advice)
  } catch (error) {
    expect(error).toBeInstanceOf(SandboxConfigError)
    return { field: (error as SandboxConfigError).field, message: (error as Error).message }
  }
  throw new Error('expected parseOptions to throw')
}

describe('parseOptions: unknown keys', () => {
  it('names a key of that name one level down', () => {
    expect(messageFor({ image: 'i', Memory: 1 })).toEqual({ field: 'opts.Memory', message: 'Invalid option opts.Memory: Unrecognized key: "Memory". Did you mean opts.resources.memory?' })
  })

  it('suggests a near spelling, a swap of two letters included', () => {
    expect(messageFor({ imgae: 'i' }).message).toMatch(/Did you mean opts\.image\?$/)
    expect(messageFor({ image: 'i', resources: { cpu: 1 } }).message).toMatch(/Did you mean opts\.resources\.cpus\?$/)
  })

  it('looks inside union members and array elements', () => {
    expect(messageFor({ image: 'i', source: { url: 'u', brnach: 'b' } }).message).toMatch(/Did you mean opts\.source\.branch\?$/)
    expect(messageFor({ image: 'i', mounts: [{ target: '/t', readonly: true }] })).toMatchObject({ field: 'opts.mounts.0.readonly', message: expect.stringMatching(/Did you mean opts\.mounts\.0\.readOnly\?$/) })
  })

  it('lists the known keys when nothing is close', () => {
    expect(messageFor({ image: 'i', zzzzzz: 1 }).message).toMatch(/Known options: image, resources, source, mounts\.$/)
  })

  it("prefers the caller's advice for that key", () => {
    expect(messageFor({ image: 'i', apiKey: 'secret-value' }, { unknownKeys: { apiKey: 'Use a workspace secret.' } }).message).toBe('Invalid option opts.apiKey: Unrecognized key: "apiKey". Use a workspace secret.')
  })

  it('leaves other problems as they were', () => {
    expect(messageFor({ image: 3 }).message).toBe('Invalid option opts.image: Invalid input: expected string, received number.')
  })
})
