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
import { envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { destroyedError, engineError, operationError, parseConfig } from './errors.js'
import { startExec } from './exec-stream.js'
import tar from 'tar-stream'

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
  /** Largest file `fs.read`/`fs.readBytes` return, in bytes. */
  readonly maxReadBytes: number
  /** `resources.pids` of the provider config, named when a job cannot start. */
  readonly pidsLimit: number | undefined
  /** Variables set with `env.set` (create-time env lives in the container config). */
  env: Readonly<Record<string, string>>
  envWrites: Promise<void>
  destroyed: boolean
  /** @throws SandboxOperationError `destroyed` once the sandbox is gone. */
  assertLive: (method: string) => void
}

/** The env file as older versions wrote it (any name without "=" or NUL; values as core's envVarsSchema), so existing sandboxes still resume. */
const storedEnvSchema = z.record(
  z.string().min(1).refine((name) => !name.includes('=') && !name.includes('\0'), 'variable names cannot contain "=" or NUL'),
  envVarsSchema.valueType,
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
 * Run a short script in the container and collect its output (setup, env file).
 * @param user - Who runs it: `'0'` for root (still without capabilities), `undefined` for the container's user.
 * @returns stdout; throws `SandboxOperationError` when it exits non-zero.
 */
export async function runScript(state: Pick<SandboxState, 'container' | 'id' | 'endpoint'>, what: string, script: string, args: string[], options: { user?: string; stdin?: string } = {}): Promise<string> {
  const stdout: Buffer[] = []
  const stderr: Buffer[] = []
  let exit: number | null
  try {
    const running = await startExec(state.container, { cmd: ['/bin/sh', '-c', script, 'tanstack-sandbox', ...args], user: options.user, stdin: options.stdin !== undefined }, { stdout: (b) => stdout.push(b), stderr: (b) => stderr.push(b) })
    if (options.stdin !== undefined) running.stdin.end(options.stdin)
    exit = await running.exit
  } catch (error) {
    throw engineError('exec-failed', what, error, { endpoint: state.endpoint, id: state.id })
  }
  if (exit !== 0) {
    throw operationError('exec-failed', `${what} failed in sandbox ${state.id} (exit ${exit}): ${Buffer.concat(stderr).toString().trim() || 'no output'}. The image needs a POSIX /bin/sh with id, grep, awk, stat, mkdir and cat.`)
  }
  return Buffer.concat(stdout).toString()
}

/** Run a short script as root (uid 0, which holds no capabilities in a hardened sandbox). */
export function runAsRoot(state: Pick<SandboxState, 'container' | 'id' | 'endpoint'>, what: string, script: string, args: string[], stdin?: string): Promise<string> {
  return runScript(state, what, script, args, { user: '0', ...(stdin !== undefined ? { stdin } : {}) })
}

/** HOME of a sandbox user the image does not know (it gets an /etc/passwd entry with it). */
export const FALLBACK_HOME = '/home/sandbox'

/** Who the sandbox user is, as the engine resolves it: run as that user. */
const PROBE_SCRIPT = 'id -u && id -g && printf "%s\\n" "$HOME"'

/**
 * Prepares (idempotently) and describes a sandbox container, as root but
 * without relying on any capability (root still owns `/` and `/etc/passwd`):
 * the workspace and the root-only state directory exist; a uid the image does
 * not know gets `/etc/passwd` and `/etc/group` entries (so `whoami`, git and
 * Node's `os.userInfo()` work) with HOME `/home/sandbox`. Prints the physical
 * workspace root, its `uid:gid:mode`, the user's HOME and whether it exists,
 * then the env file if any. Arguments: workspace, uid, gid, HOME as the probe
 * saw it (empty when no probe ran: then the passwd entry's).
 */
const SETUP_SCRIPT = [
  'set -e',
  `mkdir -p -- "$1" ${STATE_DIR}`,
  `chmod 0700 ${STATE_DIR}`,
  'home="$4"',
  'if [ "$2" != 0 ] && [ -f /etc/passwd ] && ! grep -q "^[^:]*:[^:]*:$2:" /etc/passwd; then',
  '  name=sandbox; if grep -q "^sandbox:" /etc/passwd; then name="sandbox$2"; fi',
  `  if echo "$name:x:$2:$3:sandbox user:${FALLBACK_HOME}:/bin/sh" >> /etc/passwd 2>/dev/null && [ "$home" = / ]; then home=${FALLBACK_HOME}; fi`,
  '  if [ -f /etc/group ] && ! grep -q "^[^:]*:[^:]*:$3:" /etc/group; then echo "$name:x:$3:" >> /etc/group 2>/dev/null || true; fi',
  'fi',
  // No probe ran (a numeric user): HOME is the passwd entry's, as runc sets it for each exec.
  'if [ -z "$home" ]; then home=$(awk -F: -v u="$2" \'$3 == u { print $6; exit }\' /etc/passwd 2>/dev/null) || true; [ -n "$home" ] || home=/; fi',
  'cd -P -- "$1"',
  'pwd -P',
  "stat -c '%u:%g:%a' .",
  'printf "%s\\n" "$home"',
  'if [ -d "$home" ]; then echo 1; else echo 0; fi',
  `cat ${STATE_DIR}/env 2>/dev/null || true`,
].join('\n')

/**
 * Prepare a new or resumed container and read what it keeps: the physical
 * workspace root and the `env.set` variables. The workspace, and a missing
 * HOME, are made the sandbox user's by a tar the engine extracts (with the
 * owner in its headers): with every capability dropped, root in the container
 * cannot `chown`.
 * @param user - The sandbox user (`undefined`: the image's).
 */
export async function prepareSandbox(state: Pick<SandboxState, 'container' | 'id' | 'endpoint'>, what: string, workspaceRoot: string, user: string | undefined): Promise<{ physicalRoot: string; env: Record<string, string> }> {
  // A numeric uid:gid (the default) needs no probe: it is what the engine runs as.
  const numeric = user !== undefined ? /^(\d+):(\d+)$/.exec(user) : null
  const probe = numeric ? [numeric[1]!, numeric[2]!, ''] : (await runScript(state, `${what} (who is the sandbox user)`, PROBE_SCRIPT, [], user !== undefined ? { user } : {})).split('\n')
  const uid = Number(probe[0])
  const gid = Number(probe[1])
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw operationError('exec-failed', `${what}: could not tell who the sandbox user ${user ?? '(the image\'s)'} is in sandbox ${state.id} (id printed ${JSON.stringify(probe.slice(0, 2))}).`)
  const out = await runAsRoot(state, what, SETUP_SCRIPT, [workspaceRoot, String(uid), String(gid), numeric ? '' : probe[2] || '/'])
  const [physicalRoot = '', owner = '', home = '', homeExists = '', ...rest] = out.split('\n')
  if (!physicalRoot.startsWith('/')) throw operationError('exec-failed', `${what}: could not prepare the workspace ${workspaceRoot} of sandbox ${state.id} (got ${JSON.stringify(out.slice(0, 200))}).`)
  if (uid !== 0) {
    const [ownerUid, ownerGid, mode] = owner.split(':')
    const dirs: { path: string; mode: number }[] = []
    if (Number(ownerUid) !== uid || Number(ownerGid) !== gid) dirs.push({ path: physicalRoot, mode: Number.parseInt(mode ?? '', 8) || 0o755 })
    if (home.startsWith('/') && home !== '/' && homeExists === '0') dirs.push({ path: home, mode: 0o755 })
    if (dirs.length > 0) await ownDirectories(state, what, dirs, uid, gid)
  }
  const text = rest.join('\n').trim()
  if (text === '') return { physicalRoot, env: {} }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new SandboxConfigError(`${STATE_DIR}/env`, `The env file ${STATE_DIR}/env in sandbox ${state.id} is not valid JSON; fix or delete it.`, { cause: error })
  }
  return { physicalRoot, env: parseConfig(storedEnvSchema, json, `${STATE_DIR}/env`) }
}

/** Create (or re-own) `dirs` as `uid:gid` by a tar of directory entries the engine extracts at `/`. */
async function ownDirectories(state: Pick<SandboxState, 'container' | 'id' | 'endpoint'>, what: string, dirs: { path: string; mode: number }[], uid: number, gid: number): Promise<void> {
  const archive = tar.pack()
  for (const dir of dirs) archive.entry({ name: dir.path.replace(/^\/+/, ''), type: 'directory', mode: dir.mode, uid, gid, mtime: new Date() })
  archive.finalize()
  const chunks: Buffer[] = []
  for await (const chunk of archive) chunks.push(chunk as Buffer)
  try {
    await state.container.putArchive(Buffer.concat(chunks), { path: '/' })
  } catch (error) {
    throw engineError('exec-failed', `${what} (giving ${dirs.map((dir) => dir.path).join(' and ')} to uid ${uid})`, error, { endpoint: state.endpoint, id: state.id })
  }
}

const WRITE_ENV_SCRIPT = `umask 077 && mkdir -p ${STATE_DIR} && cat > ${STATE_DIR}/env.tmp && mv -f ${STATE_DIR}/env.tmp ${STATE_DIR}/env`

/**
 * Merge `vars` into the sandbox env and persist it. Calls run one after
 * another, each on top of the previous one's result.
 * @throws SandboxConfigError `env.set.<NAME>` for a bad name or value.
 */
export async function setEnv(state: SandboxState, vars: Record<string, string>): Promise<void> {
  state.assertLive('env.set')
  parseConfig(envVarsSchema, vars, 'env.set')
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
