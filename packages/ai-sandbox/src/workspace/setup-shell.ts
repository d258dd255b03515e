/**
 * Runs a setup plan as one persistent shell: the working directory and the
 * exported environment left by a serial step are restored before the next
 * step, and every command of a parallel group starts from that state. The
 * state lives in a private directory under /tmp inside the sandbox (mode 700,
 * its files 600 whatever umask a step sets), written by an EXIT trap, so it
 * works with any POSIX `sh` (dash, bash, BusyBox ash) over plain `exec`.
 * Secret values are filtered out of the saved state, and the directory is
 * removed when the plan ends, whatever the outcome.
 */
import { randomBytes } from 'node:crypto'
import type { SandboxHandle } from '../contracts/handle.js'
import { shellQuote } from '../shell/quote.js'
import { SetupStepFailedError, WorkspaceBootstrapError } from './errors.js'
import type { SetupStep } from './setup-plan.js'

/** Lines of output kept in {@link SetupStepFailedError.outputTail}. */
export const SETUP_OUTPUT_TAIL_LINES = 40

/** Inputs of {@link runSetupPlan}. */
export interface RunSetupPlanOptions {
  /** Names never written to the saved state (the workspace's secrets). */
  secretNames: readonly string[]
  /** Redacts secret values from output before it lands in an error. */
  redact: (text: string) => string
  signal?: AbortSignal
}

/**
 * Run `steps` in the sandbox's workspace root.
 * @throws SetupStepFailedError for the first step that exits non-zero (for a parallel group: the first failing command in group order, after the whole group ended).
 * @throws WorkspaceBootstrapError `aborted` when `signal` fired.
 */
export async function runSetupPlan(handle: SandboxHandle, steps: readonly SetupStep[], options: RunSetupPlanOptions): Promise<void> {
  if (steps.length === 0) return
  const state = await createStateDir(handle)
  try {
    let number = 0
    for (const step of steps) {
      throwIfAborted(options.signal)
      if (step.kind === 'serial') {
        number += 1
        await runOne(handle, wrap(step.command, state, options.secretNames, true), { step: number, command: step.command }, options)
      } else {
        const first = number + 1
        number += step.commands.length
        const results = await Promise.allSettled(step.commands.map((command, i) => runOne(handle, wrap(command, state, options.secretNames, false), { step: first + i, command }, options)))
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
        if (failed) throw failed.reason
      }
    }
  } finally {
    // A step's trap that still ran after this could not recreate anything: it writes only into this
    // directory, never makes it. Best effort: the sandbox may already be gone.
    await handle.process.exec(`rm -rf -- ${shellQuote(state.dir)}`).catch(() => undefined)
  }
}

/** The setup shell's state: a private directory and the files in it. */
interface StateFiles {
  readonly dir: string
  readonly cwd: string
  readonly env: string
}

/**
 * Make the state directory (mode 700; `mkdir` fails rather than reuse a path
 * that exists) with the starting directory and an empty environment in it.
 * @throws WorkspaceBootstrapError `setup` when it cannot be made.
 */
async function createStateDir(handle: SandboxHandle): Promise<StateFiles> {
  const dir = `/tmp/tanstack-setup-${randomBytes(9).toString('hex')}`
  const state = { dir, cwd: `${dir}/cwd`, env: `${dir}/env` }
  const [d, cwd, env] = [state.dir, state.cwd, state.env].map(shellQuote)
  const init = await handle.process.exec(`umask 077 && mkdir -m 700 ${d} || exit 1\n{ pwd > ${cwd} && : > ${env}; } || { rm -rf -- ${d}; exit 1; }`)
  if (init.exitCode !== 0) throw new WorkspaceBootstrapError('setup', `Could not create the setup shell state under /tmp in the sandbox (exit ${init.exitCode}): ${init.stderr.trim()}\nThe setup steps need a writable /tmp.`)
  return state
}

/**
 * A step's script: restore the state, (for serial steps) save it on exit, then
 * the user's command. The save sets `umask 077` itself, so a step that
 * loosened its umask still leaves owner-only files.
 */
function wrap(command: string, files: StateFiles, secretNames: readonly string[], save: boolean): string {
  const restore = `cd "$(cat ${shellQuote(files.cwd)})" && . ${shellQuote(files.env)}`
  if (!save) return `${restore}\n${command}`
  const skip = ['PWD', 'OLDPWD', 'SHLVL', '_', ...secretNames].join('|')
  const next = `${files.env}.next`
  const saveState = [
    '__tanstack_rc=$?',
    'umask 077',
    `pwd > ${shellQuote(files.cwd)}`,
    `export -p | grep -v -E ${shellQuote(`^(export|declare -x) (${skip})(=|$)`)} > ${shellQuote(next)}`,
    `mv ${shellQuote(next)} ${shellQuote(files.env)}`,
    'exit $__tanstack_rc',
  ].join('; ')
  return `${restore}\ntrap ${shellQuote(saveState)} EXIT\n${command}`
}

async function runOne(handle: SandboxHandle, script: string, step: { step: number; command: string }, options: RunSetupPlanOptions): Promise<void> {
  const result = await handle.process.exec(script, options.signal ? { signal: options.signal } : {}).catch((error: unknown) => {
    throwIfAborted(options.signal)
    throw error
  })
  throwIfAborted(options.signal)
  if (result.exitCode === 0) return
  const output = options.redact(`${result.stdout}${result.stderr}`)
  throw new SetupStepFailedError({
    step: step.step,
    command: options.redact(step.command),
    exitCode: result.exitCode,
    outputTail: output.trimEnd().split('\n').slice(-SETUP_OUTPUT_TAIL_LINES).join('\n'),
  })
}

/** @throws WorkspaceBootstrapError `aborted` when `signal` fired. */
export function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new WorkspaceBootstrapError('aborted', 'Workspace bootstrap stopped: the run was aborted before the sandbox was ready. The half-made sandbox was destroyed.', { cause: signal.reason })
}
