/**
 * Runs a setup plan as one persistent shell: each serial step's directory and
 * exported environment carry to the next, and parallel commands start from
 * that state. Works with any POSIX `sh` over plain `exec`. Invariant: a step
 * whose state was not saved is reported; secrets are not saved; the state
 * directory is removed when the plan ends. Design notes: docs/design/workspace.md
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
 * @throws WorkspaceBootstrapError `setup` naming a serial step that exited 0 without saving its state (`exec prog`, or its own EXIT trap and then `exit`) when a later step would have started from it.
 * @throws WorkspaceBootstrapError `aborted` when `signal` fired.
 */
export async function runSetupPlan(handle: SandboxHandle, steps: readonly SetupStep[], options: RunSetupPlanOptions): Promise<void> {
  if (steps.length === 0) return
  const state = await createStateDir(handle)
  try {
    let number = 0
    // The last serial step: the one whose saved state the next step starts from.
    let saver: StepRef | undefined
    for (const step of steps) {
      throwIfAborted(options.signal)
      const check = saver && { saver, marker: state.lostMarker }
      if (step.kind === 'serial') {
        number += 1
        const current = { step: number, command: step.command }
        await runOne(handle, wrapSerial(step.command, state, options.secretNames, check !== undefined), current, check, options)
        saver = current
      } else {
        const first = number + 1
        number += step.commands.length
        const results = await Promise.allSettled(step.commands.map((command, i) => runOne(handle, wrapParallel(command, state, check !== undefined), { step: first + i, command }, check, options)))
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

/** A step by its number and command. */
interface StepRef {
  readonly step: number
  readonly command: string
}

/** The setup shell's state: a private directory and the files in it. */
interface StateFiles {
  readonly dir: string
  readonly cwd: string
  readonly env: string
  /** Exists while the state is current: removed when a serial step starts, made again when its state is saved. */
  readonly saved: string
  /** Written to stderr, and exit 125, by a step that finds the previous step's state unsaved. */
  readonly lostMarker: string
}

/**
 * Make the state directory (mode 700; `mkdir` fails rather than reuse a path
 * that exists) with the starting directory and an empty environment in it.
 * @throws WorkspaceBootstrapError `setup` when it cannot be made.
 */
async function createStateDir(handle: SandboxHandle): Promise<StateFiles> {
  const id = randomBytes(9).toString('hex')
  const dir = `/tmp/tanstack-setup-${id}`
  const state = { dir, cwd: `${dir}/cwd`, env: `${dir}/env`, saved: `${dir}/saved`, lostMarker: `tanstack-setup-state-not-saved-${id}` }
  const [d, cwd, env, saved] = [state.dir, state.cwd, state.env, state.saved].map(shellQuote)
  const init = await handle.process.exec(`umask 077 && mkdir -m 700 ${d} || exit 1\n{ pwd > ${cwd} && : > ${env} && : > ${saved}; } || { rm -rf -- ${d}; exit 1; }`)
  if (init.exitCode !== 0) throw new WorkspaceBootstrapError('setup', `Could not create the setup shell state under /tmp in the sandbox (exit ${init.exitCode}): ${init.stderr.trim()}\nThe setup steps need a writable /tmp.`)
  return state
}

/** Exit code of a step that found the previous step's state unsaved (with `lostMarker` on stderr). */
const STATE_NOT_SAVED_EXIT = 125

/** Check (after the first serial step) that the previous serial step saved its state, then restore it. */
function restore(files: StateFiles, check: boolean): string {
  const guard = check ? `[ -e ${shellQuote(files.saved)} ] || { printf '%s\\n' ${shellQuote(files.lostMarker)} >&2; exit ${STATE_NOT_SAVED_EXIT}; }\n` : ''
  return `${guard}cd "$(cat ${shellQuote(files.cwd)})" && . ${shellQuote(files.env)}`
}

/** A parallel command's script: restore the state, then the command. Its own changes are not saved. */
function wrapParallel(command: string, files: StateFiles, check: boolean): string {
  return `${restore(files, check)}\n${command}`
}

/**
 * A serial step's script: restore the state, run the command through `eval`
 * (in this shell, so `cd`, `export`, `trap` and `exit` act as written, and
 * nothing in the command can run into the lines after it), then save the
 * state. The save runs when the command returns, so a step that replaced the
 * EXIT trap with its own (which still runs, when the step's shell exits) keeps
 * its state, and from the EXIT trap for a step that ends in `exit`. It writes
 * in a subshell under `umask 077`, so a step that loosened its umask still
 * leaves owner-only files, and the step's own umask and options stay as they
 * were for its trap.
 */
function wrapSerial(command: string, files: StateFiles, secretNames: readonly string[], check: boolean): string {
  const skip = ['PWD', 'OLDPWD', 'SHLVL', '_', ...secretNames].join('|')
  const next = `${files.env}.next`
  const save = [
    'set +e',
    'umask 077',
    `pwd > ${shellQuote(files.cwd)}`,
    `export -p | grep -v -E ${shellQuote(`^(export|declare -x) (${skip})(=|$)`)} > ${shellQuote(next)}`,
    `mv ${shellQuote(next)} ${shellQuote(files.env)}`,
    `: > ${shellQuote(files.saved)}`,
  ].join('; ')
  return [
    restore(files, check),
    `rm -f ${shellQuote(files.saved)}`,
    `__tanstack_save() ( ${save} )`,
    `trap ${shellQuote('__tanstack_rc=$?; [ -n "${__tanstack_saved:-}" ] || __tanstack_save; exit $__tanstack_rc')} EXIT`,
    `eval ${shellQuote(command)}`,
    '__tanstack_rc=$?',
    '__tanstack_save',
    '__tanstack_saved=1',
    'exit $__tanstack_rc',
  ].join('\n')
}

/**
 * Run one step's script.
 * @param check - For a step that checks the previous step's state: that step, and the marker the check prints.
 */
async function runOne(handle: SandboxHandle, script: string, step: StepRef, check: { saver: StepRef; marker: string } | undefined, options: RunSetupPlanOptions): Promise<void> {
  const result = await handle.process.exec(script, options.signal ? { signal: options.signal } : {}).catch((error: unknown) => {
    throwIfAborted(options.signal)
    throw error
  })
  throwIfAborted(options.signal)
  if (result.exitCode === 0) return
  if (check && result.exitCode === STATE_NOT_SAVED_EXIT && result.stderr.includes(check.marker)) throw stateNotSaved(check.saver, step, options.redact)
  const output = options.redact(`${result.stdout}${result.stderr}`)
  throw new SetupStepFailedError({
    step: step.step,
    command: options.redact(step.command),
    exitCode: result.exitCode,
    outputTail: output.trimEnd().split('\n').slice(-SETUP_OUTPUT_TAIL_LINES).join('\n'),
  })
}

/** The error for a serial step whose shell was replaced before it saved its state. */
function stateNotSaved(saver: StepRef, next: StepRef, redact: (text: string) => string): WorkspaceBootstrapError {
  return new WorkspaceBootstrapError(
    'setup',
    `Setup step ${saver.step} ended without handing its working directory and exported variables on to step ${next.step}: ${redact(saver.command)}\n` +
      `Its shell was replaced before the state could be saved: the step ran \`exec <program>\` (the program takes the shell's place, so nothing runs after it), ` +
      `or it set its own \`trap … EXIT\` and then left with \`exit\`. Later steps would silently start from the state before step ${saver.step}, so setup stopped.\n` +
      `Fix step ${saver.step} in defineWorkspace({ setup }): run the program without \`exec\`, let the step end without \`exit\` after setting its trap, or make it the last step. The half-made sandbox was destroyed.`,
  )
}

/** @throws WorkspaceBootstrapError `aborted` when `signal` fired. */
export function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new WorkspaceBootstrapError('aborted', 'Workspace bootstrap stopped: the run was aborted before the sandbox was ready. The half-made sandbox was destroyed.', { cause: signal.reason })
}
