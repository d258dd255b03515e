/**
 * Setup-shell state cases shared by the local-process and Docker suites: a
 * step's own `trap … EXIT` keeps the cwd/env carry-over (and still runs), an
 * `exit` keeps it, a redirect-only `exec` keeps it, and a step whose shell is
 * replaced before it can save (`exec prog`, or its own trap then `exit`)
 * fails with a typed error naming that step, unless it is the last step.
 * Registers one `it` per case in the caller's `describe`.
 */
import { expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, SetupStepFailedError, WorkspaceBootstrapError, type SandboxProvider, type SetupInput } from '@tanstack/ai-sandbox'

/** Register the cases for `provider`; `label` keeps sandbox ids apart. */
export function setupShellStateCases(label: string, provider: SandboxProvider): void {
  let n = 0
  const sandboxFor = (setup: SetupInput) => defineSandbox({ id: `setup-state-${label}-${++n}`, provider, workspace: defineWorkspace({ setup }), lifecycle: { reuse: 'none', snapshot: 'none' } })
  const run = { threadId: 't1', runId: 'r1' }

  /** Ensure a sandbox with `setup`, hand `read` its files, destroy it. */
  async function withSetup(setup: SetupInput, check: (read: (path: string) => Promise<string>, root: string) => Promise<void>): Promise<void> {
    const sandbox = sandboxFor(setup)
    const handle = await sandbox.ensure(run)
    try {
      await check(async (path) => (await handle.fs.read(path)).trim(), handle.workspaceRoot)
    } finally {
      await sandbox.destroy({ key: sandbox.key(run) })
    }
  }

  /** The error `ensure` throws for `setup`. */
  async function failure(setup: SetupInput): Promise<unknown> {
    return sandboxFor(setup).ensure(run).then(
      () => undefined,
      (error: unknown) => error,
    )
  }

  it(`${label}: a step with its own trap … EXIT still hands its cwd and env on, and its trap still runs`, async () => {
    await withSetup(['mkdir sub', "trap 'echo bye' EXIT; cd sub; export X=1", 'printf "%s %s\\n" "$(pwd)" "$X" > seen.txt'], async (read, root) => {
      expect(await read('sub/seen.txt')).toBe(`${root}/sub 1`)
    })
    await withSetup(['mkdir sub', "trap 'echo bye > trap.txt' EXIT; cd sub; export X=2", 'echo "$X" > x.txt'], async (read) => {
      expect(await read('sub/trap.txt'), 'the step\'s trap ran when its shell exited, in the directory it left').toBe('bye')
      expect(await read('sub/x.txt')).toBe('2')
    })
  })

  it(`${label}: a step that leaves with exit, or redirects its shell with exec, hands its state on`, async () => {
    await withSetup(['mkdir -p a b', 'cd a; export Y=3; exit 0', 'echo "$Y" > y.txt', 'exec >../b/log.txt 2>&1; cd ../b; echo logged', 'echo "$Y" > y.txt'], async (read) => {
      expect(await read('a/y.txt')).toBe('3')
      expect(await read('b/log.txt')).toBe('logged')
      expect(await read('b/y.txt')).toBe('3')
    })
  })

  it(`${label}: keeps a failing step's exit code and output with its own trap`, async () => {
    const error = await failure(['true', "trap 'echo bye' EXIT; echo failing; false", 'touch never'])
    expect(error).toBeInstanceOf(SetupStepFailedError)
    expect((error as SetupStepFailedError).step).toBe(2)
    expect((error as SetupStepFailedError).exitCode).toBe(1)
    expect((error as SetupStepFailedError).outputTail).toBe('failing\nbye')
  })

  it(`${label}: a step ending in exec prog, followed by another step, is a typed error naming it`, async () => {
    const error = await failure(['mkdir sub', "exec sh -c 'cd sub'", 'pwd > where.txt'])
    expect(WorkspaceBootstrapError.isInstance(error)).toBe(true)
    expect((error as WorkspaceBootstrapError).reason).toBe('setup')
    expect(SetupStepFailedError.isInstance(error), 'no step exited non-zero').toBe(false)
    expect((error as Error).message).toContain("Setup step 2 ended without handing its working directory and exported variables on to step 3: exec sh -c 'cd sub'")
    expect((error as Error).message).toContain('run the program without `exec`')
  })

  it(`${label}: also for its own trap then exit, and before a parallel group`, async () => {
    const trapped = await failure(["trap 'echo bye' EXIT; export Z=1; exit 0", 'echo "$Z"'])
    expect((trapped as Error).message).toContain("Setup step 1 ended without handing its working directory and exported variables on to step 2: trap 'echo bye' EXIT; export Z=1; exit 0")
    const parallel = await failure(({ serial, parallel }) => {
      serial('true')
      serial('exec true')
      parallel(['true', 'true'])
    })
    expect(WorkspaceBootstrapError.isInstance(parallel)).toBe(true)
    expect((parallel as Error).message).toMatch(/^Setup step 2 ended without handing .* on to step 3: exec true/)
  })

  it(`${label}: a last step may end in exec: nothing comes after it`, async () => {
    await withSetup(['mkdir sub', 'cd sub; export X=4', `exec sh -c 'echo "$X" > last.txt'`], async (read) => {
      expect(await read('sub/last.txt')).toBe('4')
    })
  })
}
