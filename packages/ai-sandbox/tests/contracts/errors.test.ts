/**
 * `isInstance` on every error class checks that class: a subclass's
 * `isInstance` is false for its parent and siblings, the base's is true for
 * all, and both hold across two loaded copies of the module (where
 * `instanceof` is false).
 */
import { describe, expect, it, vi } from 'vitest'
import {
  SandboxConfigError,
  SandboxError,
  SandboxOperationError,
  SandboxPathError,
  SetupStepFailedError,
  ToolBridgeError,
  UnknownSecretError,
  UnsupportedCapabilityError,
  WorkspaceBootstrapError,
} from '../../src/index.js'

const config = new SandboxConfigError('defineSandbox.id', 'bad id')
const path = new SandboxPathError('escape', '../x', 'outside')
const setup = new SetupStepFailedError({ step: 1, command: 'false', exitCode: 1, outputTail: '' })

describe('isInstance checks its own class', () => {
  it('is false for an error of a sibling class (SandboxPathError.isInstance(aConfigError))', () => {
    expect(SandboxPathError.isInstance(config)).toBe(false)
    expect(SandboxConfigError.isInstance(path)).toBe(false)
    expect(SandboxOperationError.isInstance(config)).toBe(false)
    expect(UnsupportedCapabilityError.isInstance(path)).toBe(false)
    expect(ToolBridgeError.isInstance(config)).toBe(false)
    expect(UnknownSecretError.isInstance(setup)).toBe(false)
  })

  it('is true for the class itself and for subclasses, false for a parent', () => {
    expect(SandboxPathError.isInstance(path)).toBe(true)
    expect(SandboxConfigError.isInstance(config)).toBe(true)
    expect(SetupStepFailedError.isInstance(setup)).toBe(true)
    expect(WorkspaceBootstrapError.isInstance(setup), 'a subclass instance counts for its parent').toBe(true)
    expect(SetupStepFailedError.isInstance(new WorkspaceBootstrapError('source', 'clone failed')), 'a parent instance is not a subclass').toBe(false)
    for (const error of [config, path, setup]) expect(SandboxError.isInstance(error)).toBe(true)
  })

  it('is false for plain errors and non-errors', () => {
    for (const value of [new Error('x'), null, undefined, 'SandboxPathError', { reason: 'escape' }]) {
      expect(SandboxError.isInstance(value)).toBe(false)
      expect(SandboxPathError.isInstance(value)).toBe(false)
    }
  })

  it('narrows to the class it is called on', () => {
    const error: unknown = path
    if (SandboxPathError.isInstance(error)) expect(error.path).toBe('../x')
    else expect.fail('not recognised')
  })

  it('gives a subclass declared without its own brand its own check (branded by class name)', () => {
    class ThirdPartyError extends SandboxError<'third'> {}
    class OtherThirdPartyError extends SandboxError<'other'> {}
    const third = new ThirdPartyError('third', 'x')
    expect(ThirdPartyError.isInstance(third)).toBe(true)
    expect(SandboxError.isInstance(third)).toBe(true)
    expect(OtherThirdPartyError.isInstance(third)).toBe(false)
    expect(ThirdPartyError.isInstance(config)).toBe(false)
  })
})

describe('isInstance across two copies of the package', () => {
  it('recognises errors of another loaded copy, per class, where instanceof does not', async () => {
    vi.resetModules()
    const other = (await import('../../src/contracts/errors.js')) as typeof import('../../src/contracts/errors.js')
    expect(other.SandboxPathError, 'a second copy of the module was loaded').not.toBe(SandboxPathError)
    const foreignPath = new other.SandboxPathError('not-found', 'a.txt', 'missing')
    const foreignConfig = new other.SandboxConfigError('x', 'bad')
    expect(foreignPath instanceof SandboxPathError, 'instanceof fails across copies').toBe(false)
    expect(SandboxPathError.isInstance(foreignPath)).toBe(true)
    expect(SandboxError.isInstance(foreignPath)).toBe(true)
    expect(SandboxPathError.isInstance(foreignConfig)).toBe(false)
    expect(other.SandboxConfigError.isInstance(config), 'and the other way round').toBe(true)
    expect(other.SandboxPathError.isInstance(config)).toBe(false)
  })

  it('keys the brands on Symbol.for, so a look-alike built elsewhere matches only its own class', () => {
    const lookAlike = Object.assign(new Error('from another build'), {
      reason: 'escape',
      [Symbol.for('@tanstack/ai-sandbox/error')]: true,
      [Symbol.for('@tanstack/ai-sandbox/error/SandboxPathError')]: true,
    })
    expect(SandboxPathError.isInstance(lookAlike)).toBe(true)
    expect(SandboxError.isInstance(lookAlike)).toBe(true)
    expect(SandboxConfigError.isInstance(lookAlike)).toBe(false)
  })
})
