/**
 * Bootstrap: turn a freshly created, empty sandbox into the workspace its
 * definition describes. One step per concern, in order: secrets into the
 * environment, the source into the root, then the setup steps.
 * Invariant: every error leaving here is typed and has secret values redacted;
 * destroying the half-made sandbox is the caller's job (`ensure`).
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, relative, resolve } from 'node:path'
import { SandboxError } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import { shellJoin } from '../shell/quote.js'
import { resolveSecretEnv, type ResolvedWorkspace } from './define-workspace.js'
import { WorkspaceBootstrapError } from './errors.js'
import { runSetupPlan, throwIfAborted } from './setup-shell.js'
import { provisionedPaths, provisionWorkspace } from './provision.js'
import { excludeFromGit } from './projection.js'
import { redactSecrets } from '../secrets/secret-values.js'
import { withSecretEnv } from './secret-env.js'
import { redactUrl } from '../git/exec-git.js'
import type { GitWorkspaceSource, LocalWorkspaceSource } from './sources.js'

/**
 * Bootstrap `handle` according to `workspace`. Pass a handle wrapped with
 * {@link withWorkspaceSecrets} so setup steps see the secrets.
 *
 * @param signal - Aborting stops the running setup step and skips the rest.
 * @throws WorkspaceBootstrapError `source` when the clone or copy fails, `aborted` when `signal` fired.
 * @throws SetupStepFailedError when a setup step exits non-zero (step number, command, exit code, output tail).
 */
export async function bootstrapWorkspace(handle: SandboxHandle, workspace: ResolvedWorkspace, signal?: AbortSignal): Promise<void> {
  throwIfAborted(signal)
  await placeSource(handle, workspace)
  await provisionWorkspace(handle, workspace)
  const refs = Object.values(workspace.secrets)
  await runSetupPlan(handle, workspace.setup, { secretNames: Object.keys(workspace.secrets), redact: (text) => redactSecrets(text, refs), ...(signal ? { signal } : {}) })
  // After setup, which may be what creates the git repository.
  const generated = provisionedPaths(workspace)
  if (generated.length > 0) await excludeFromGit(handle, generated)
}

/**
 * Whether bootstrapping `workspace` leaves anything in the sandbox: a source
 * to clone or copy, setup steps, git or file skills, or instructions. When it
 * does not, an after-setup snapshot would hold nothing a fresh sandbox lacks.
 */
export function bootstrapWritesAnything(workspace: ResolvedWorkspace): boolean {
  return workspace.source.type !== 'empty' || workspace.setup.length > 0 || workspace.instructions !== undefined || workspace.skills.some((skill) => skill.kind === 'git' || skill.kind === 'file')
}

/**
 * The workspace's non-empty secrets as an in-memory environment overlay on
 * `handle` (see `withSecretEnv`): resolved at each exec/spawn, never written
 * to the provider. Empty values count as unset.
 */
export function withWorkspaceSecrets(handle: SandboxHandle, workspace: ResolvedWorkspace): SandboxHandle {
  if (Object.keys(workspace.secrets).length === 0) return handle
  return withSecretEnv(handle, () => Object.fromEntries(Object.entries(resolveSecretEnv(workspace)).filter(([, value]) => value !== '')))
}


async function placeSource(handle: SandboxHandle, workspace: ResolvedWorkspace): Promise<void> {
  const { source } = workspace
  try {
    if (source.type === 'git') await cloneSource(handle, source)
    else if (source.type === 'local') await copyLocalSource(handle, source)
  } catch (error) {
    const detail = redactSecrets(error instanceof Error ? error.message : String(error), Object.values(workspace.secrets))
    const where = source.type === 'git' ? `clone ${redactUrl(source.url)}` : `copy ${source.type === 'local' ? source.path : ''}`
    // A repository inside the sandbox (a bind mount, a file:// URL) that its user cannot read looks to git like no repository at all.
    const unreadable = source.type === 'git' && /^(file:\/\/|\/)/.test(source.url) && /does not appear to be a git repository|Permission denied|could not read/i.test(detail)
    const hint = unreadable ? ` A local repository must be readable by the sandbox's user (uid 1000 by default on Docker): check the folder and its parents (e.g. chmod -R a+rX on a bind-mounted copy).` : ''
    throw new WorkspaceBootstrapError('source', `Workspace source failed (${where}): ${detail}\nCheck defineWorkspace({ source }): the URL, ref and secret, or the local path.${hint}`, {
      cause: SandboxError.isInstance(error) ? error : undefined,
    })
  }
}

async function cloneSource(handle: SandboxHandle, source: GitWorkspaceSource): Promise<void> {
  await handle.git.clone({
    url: source.url,
    dir: '.',
    ...(source.ref ? { ref: source.ref } : {}),
    depth: source.depth ?? 1,
    ...(source.secret ? { auth: { token: source.secret } } : {}),
  })
}

async function copyLocalSource(handle: SandboxHandle, source: LocalWorkspaceSource): Promise<void> {
  const root = resolve(source.path)
  const info = await stat(root).catch(() => null)
  if (!info?.isDirectory()) throw new WorkspaceBootstrapError('source', `localSource path ${root} is not a directory.`)
  const ignore = new Set(source.ignore ?? ['node_modules'])
  const executables: string[] = []
  for await (const file of walk(root, ignore)) {
    const rel = relative(root, file.path).split('\\').join('/')
    await handle.fs.write(rel, await readFile(file.path))
    if (file.mode & 0o111) executables.push(rel)
  }
  if (executables.length > 0) {
    const result = await handle.process.exec(shellJoin(['chmod', '+x', '--', ...executables]))
    if (result.exitCode !== 0) throw new WorkspaceBootstrapError('source', `chmod +x failed while copying ${root}: ${result.stderr.trim()}`)
  }
}

async function* walk(dir: string, ignore: Set<string>): AsyncGenerator<{ path: string; mode: number }> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (ignore.has(entry.name)) continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* walk(path, ignore)
    else if (entry.isFile()) yield { path, mode: (await stat(path)).mode }
  }
}
