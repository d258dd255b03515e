/**
 * The live state of one sandbox (one container) shared by every handle this
 * provider instance made for it, and the sandbox-wide environment that
 * `env.set` keeps inside the container (`/.tanstack-sandbox/env`, root-only),
 * so a fresh provider instance that resumes the sandbox sees it too.
 * Invariant: `env` is replaced, never mutated, and only after the file write
 * succeeded; concurrent `env.set` calls apply in call order.
 */
import type Docker from 'dockerode'
import { z } from 'zod'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { destroyedError, engineError, operationError, parseConfig } from './errors.js'
import { startExec } from './exec-stream.js'

/** Where the provider keeps its own files inside the container (root-owned). */
export const STATE_DIR = '/.tanstack-sandbox'

/** Live state of one sandbox. */
export interface SandboxState {
  /** The full container id (also `handle.id`). */
  readonly id: string
  readonly container: Docker.Container
  readonly docker: Docker
  /** Engine endpoint for messages, e.g. `unix:///var/run/docker.sock`. */
  readonly endpoint: string
  /** The workspace as processes see it, e.g. `/workspace` (`handle.workspaceRoot`). */
  readonly workspaceRoot: string
  /** The same directory with symlinks resolved; confinement compares against it. */
  readonly physicalRoot: string
  /** The user processes and fs calls run as; `undefined` = the image's user. */
  readonly user: string | undefined
  readonly labels: Readonly<Record<string, string>>
  readonly killGraceMs: number
  readonly maxExecOutputBytes: number
  /** `resources.pids` of the provider config, named when a job cannot start. */
  readonly pidsLimit: number | undefined
  /** Variables set with `env.set` (create-time env lives in the container config). */
  env: Readonly<Record<string, string>>
  envWrites: Promise<void>
  destroyed: boolean
  /** @throws SandboxOperationError `destroyed` once the sandbox is gone. */
  assertLive: (method: string) => void
}

/** What a variable name must look like: a portable shell identifier. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

const envValue = z.string().refine((value) => !value.includes('\0'), 'values cannot contain NUL')

/** Validation of env names and values (config, create, restore, exec, env.set). */
export const envSchema = z.record(
  z.string().regex(ENV_NAME, 'variable names must be letters, digits and "_", not starting with a digit (e.g. MY_VAR)'),
  envValue,
)

/** The env file as older versions wrote it (any name without "=" or NUL), so existing sandboxes still resume. */
const storedEnvSchema = z.record(
  z.string().min(1).refine((name) => !name.includes('=') && !name.includes('\0'), 'variable names cannot contain "=" or NUL'),
  envValue,
)

/** Build a state object (not yet live in any map). */
export function makeState(input: Omit<SandboxState, 'envWrites' | 'destroyed' | 'assertLive'>): SandboxState {
  const state: SandboxState = {
    ...input,
    envWrites: Promise.resolve(),
    destroyed: false,
    assertLive: (method) => {
      if (state.destroyed) throw destroyedError(state.id, method)
    },
  }
  return state
}

/** `NAME=value` entries for the Docker API. */
export function envList(env: Readonly<Record<string, string>>): string[] {
  return Object.entries(env).map(([name, value]) => `${name}=${value}`)
}

/**
 * Run a short script as root and collect its output (setup, env file).
 * @returns stdout; throws `SandboxOperationError` when it exits non-zero.
 */
export async function runAsRoot(state: Pick<SandboxState, 'container' | 'id' | 'endpoint'>, what: string, script: string, args: string[], stdin?: string): Promise<string> {
  const stdout: Buffer[] = []
  const stderr: Buffer[] = []
  let exit: number | null
  try {
    const running = await startExec(state.container, { cmd: ['/bin/sh', '-c', script, 'tanstack-sandbox', ...args], user: '0', stdin: stdin !== undefined }, { stdout: (b) => stdout.push(b), stderr: (b) => stderr.push(b) })
    if (stdin !== undefined) running.stdin.end(stdin)
    exit = await running.exit
  } catch (error) {
    throw engineError('exec-failed', what, error, { endpoint: state.endpoint, id: state.id })
  }
  if (exit !== 0) {
    throw operationError('exec-failed', `${what} failed in sandbox ${state.id} (exit ${exit}): ${Buffer.concat(stderr).toString().trim() || 'no output'}. The image needs a POSIX /bin/sh with mkdir, chown and cat.`)
  }
  return Buffer.concat(stdout).toString()
}

/**
 * Prepares (idempotently) and describes a sandbox container, as root: the
 * workspace exists and belongs to the sandbox user, the state directory is
 * root-only; prints the physical workspace root, then the env file if any.
 */
const SETUP_SCRIPT = [
  'set -e',
  `mkdir -p -- "$1" ${STATE_DIR}`,
  `chmod 0700 ${STATE_DIR}`,
  'if [ -n "$2" ]; then chown -- "$2" "$1"; fi',
  'cd -P -- "$1"',
  'pwd -P',
  `cat ${STATE_DIR}/env 2>/dev/null || true`,
].join('\n')

/**
 * Prepare a new or resumed container and read what it keeps: the physical
 * workspace root and the `env.set` variables.
 * @param user - The sandbox user to own the workspace, `undefined` for the image's.
 */
export async function prepareSandbox(state: Pick<SandboxState, 'container' | 'id' | 'endpoint'>, what: string, workspaceRoot: string, user: string | undefined): Promise<{ physicalRoot: string; env: Record<string, string> }> {
  const out = await runAsRoot(state, what, SETUP_SCRIPT, [workspaceRoot, user ?? ''])
  const newline = out.indexOf('\n')
  const physicalRoot = newline === -1 ? '' : out.slice(0, newline)
  if (!physicalRoot.startsWith('/')) throw operationError('exec-failed', `${what}: could not prepare the workspace ${workspaceRoot} of sandbox ${state.id} (got ${JSON.stringify(out.slice(0, 200))}).`)
  const text = out.slice(newline + 1).trim()
  if (text === '') return { physicalRoot, env: {} }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new SandboxConfigError(`${STATE_DIR}/env`, `The env file ${STATE_DIR}/env in sandbox ${state.id} is not valid JSON; fix or delete it.`, { cause: error })
  }
  return { physicalRoot, env: parseConfig(storedEnvSchema, json, `${STATE_DIR}/env`) }
}

const WRITE_ENV_SCRIPT = `umask 077 && mkdir -p ${STATE_DIR} && cat > ${STATE_DIR}/env.tmp && mv -f ${STATE_DIR}/env.tmp ${STATE_DIR}/env`

/**
 * Merge `vars` into the sandbox env and persist it. Calls run one after
 * another, each on top of the previous one's result.
 * @throws SandboxConfigError `env.set.<NAME>` for a bad name or value.
 */
export async function setEnv(state: SandboxState, vars: Record<string, string>): Promise<void> {
  state.assertLive('env.set')
  parseConfig(envSchema, vars, 'env.set')
  const run = state.envWrites.then(async () => {
    state.assertLive('env.set')
    const env = Object.freeze({ ...state.env, ...vars })
    await runAsRoot(state, 'env.set', WRITE_ENV_SCRIPT, [], JSON.stringify(env))
    state.env = env
  })
  // The queue continues after a failed write; this caller still gets the error.
  state.envWrites = run.catch(() => undefined)
  return run
}
