/**
 * Setup plans: what `defineWorkspace({ setup })` records. An array is a list
 * of serial steps; a callback `({ serial, parallel }) => { ... }` records
 * serial steps and parallel groups in order. The plan is recorded once, at
 * definition time, so it joins the workspace hash and never runs user code
 * during bootstrap. Source: spec 000, "Fast init".
 */
import { SandboxConfigError } from '../contracts/errors.js'

/** One recorded step: a serial command, or commands that run concurrently. */
export type SetupStep = { readonly kind: 'serial'; readonly command: string } | { readonly kind: 'parallel'; readonly commands: readonly string[] }

/** The recorder handed to a setup callback. */
export interface SetupRecorder {
  /** Run `command` after everything recorded before; its cwd and env changes carry over to later steps. */
  serial: (command: string) => void
  /** Run `commands` at the same time, each starting from the shell state so far; their own changes do not carry over. */
  parallel: (commands: readonly string[]) => void
}

/** What `setup` accepts. */
export type SetupInput = readonly string[] | ((recorder: SetupRecorder) => void)

/**
 * Record a setup plan.
 * @throws SandboxConfigError `workspace.setup` for an empty command, an empty parallel group, a callback that throws or returns a promise, and (later) for `serial`/`parallel` called after the callback returned.
 */
export function recordSetupPlan(input: SetupInput): readonly SetupStep[] {
  const steps: SetupStep[] = []
  let recording = true
  const open = (what: string) => {
    if (!recording) {
      throw new SandboxConfigError(
        'workspace.setup',
        `Invalid option workspace.setup: ${what}() was called after the setup callback returned. Steps must be recorded synchronously inside the callback ({ serial, parallel }) => { ... }: defineWorkspace records the plan once and it cannot change afterwards. Call ${what}() in the callback itself, not later or after an await.`,
      )
    }
  }
  const command = (value: unknown, where: string): string => {
    if (typeof value !== 'string' || value.trim() === '') throw new SandboxConfigError('workspace.setup', `Invalid option workspace.setup: ${where} must be a non-empty shell command.`)
    return value
  }
  if (Array.isArray(input)) {
    input.forEach((value, i) => steps.push({ kind: 'serial', command: command(value, `step ${i + 1}`) }))
    return Object.freeze(steps)
  }
  if (typeof input !== 'function') throw new SandboxConfigError('workspace.setup', 'Invalid option workspace.setup: expected an array of shell commands or a callback ({ serial, parallel }) => { ... }.')
  const recorder: SetupRecorder = {
    serial: (value) => {
      open('serial')
      steps.push({ kind: 'serial', command: command(value, `serial step ${steps.length + 1}`) })
    },
    parallel: (values) => {
      open('parallel')
      if (!Array.isArray(values) || values.length === 0) throw new SandboxConfigError('workspace.setup', `Invalid option workspace.setup: parallel() at step ${steps.length + 1} needs a non-empty array of commands.`)
      steps.push({ kind: 'parallel', commands: Object.freeze(values.map((v, i) => command(v, `parallel step ${steps.length + 1}, command ${i + 1}`))) })
    },
  }
  let result: unknown
  try {
    result = (input as (r: SetupRecorder) => unknown)(recorder)
  } catch (error) {
    if (SandboxConfigError.isInstance(error)) throw error
    throw new SandboxConfigError('workspace.setup', `Invalid option workspace.setup: the setup callback threw: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  } finally {
    recording = false // a recorder kept past this point throws instead of touching the frozen plan
  }
  if (result && typeof (result as Promise<unknown>).then === 'function') {
    // Its later serial()/parallel() calls reject it; that is reported by the throw below, not as an unhandled rejection.
    void Promise.resolve(result).catch(() => undefined)
    throw new SandboxConfigError('workspace.setup', 'Invalid option workspace.setup: the setup callback must record steps synchronously (do not make it async); it runs once when the workspace is defined.')
  }
  return Object.freeze(steps)
}

/** The commands of a plan in run order, numbered from 1 (a parallel group's commands share nothing but their place). */
export function flattenSetupPlan(steps: readonly SetupStep[]): { step: number; command: string; parallel: boolean }[] {
  const out: { step: number; command: string; parallel: boolean }[] = []
  for (const s of steps) {
    if (s.kind === 'serial') out.push({ step: out.length + 1, command: s.command, parallel: false })
    else for (const c of s.commands) out.push({ step: out.length + 1, command: c, parallel: true })
  }
  return out
}
