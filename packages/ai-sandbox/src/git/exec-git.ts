/**
 * `SandboxGit` over `process.exec`: every provider with a shell and `git`
 * gets git for free. Invariant: tokens never land in `.git/config`, a remote
 * URL, argv or an error, and `clone` never follows a symlink to its `dir`.
 * Design notes: docs/design/git.md
 */
import { SandboxConfigError, SandboxOperationError, SandboxPathError } from '../contracts/errors.js'
import type { GitAuth, GitCloneOptions, GitRemoteOptions, GitStatus, SandboxGit } from '../contracts/git.js'
import type { ExecResult, SandboxProcess } from '../contracts/process.js'
import { toSandboxPath, toWorkspaceRelative } from '../paths/workspace-path.js'
import { shellJoin } from '../shell/quote.js'
import { isSecretRef, resolveSecret } from '../contracts/secret-ref.js'

/** Where {@link createExecBackedGit} runs git. */
export interface ExecBackedGitOptions {
  /** Provider name for errors. */
  provider: string
  /** The handle's `workspaceRoot` (as processes in the sandbox see it). */
  workspaceRoot: string
}

/**
 * Build a {@link SandboxGit} that runs the sandbox's own `git` through `exec`.
 *
 * @throws SandboxOperationError `git-failed` from every method when git exits
 *   non-zero; the message carries git's stderr with any token removed.
 * @throws SandboxConfigError from `push`/`pull` for a remote or branch starting with `-`.
 * @throws SandboxPathError `symlink-escape` from `clone` when its `dir` goes
 *   through a symlink (any symlink, pointing inside or out) or leaves the workspace.
 */
export function createExecBackedGit(process: SandboxProcess, options: ExecBackedGitOptions): SandboxGit {
  const { provider, workspaceRoot } = options
  const dirOf = (dir?: string) => toSandboxPath(dir ?? '.', workspaceRoot)

  async function git(args: string[], dir: string, auth?: GitAuth, what = args[0], command = shellJoin(['git', ...args])): Promise<ExecResult> {
    const { env, secret } = gitAuthEnv(auth)
    const result = await process.exec(command, {
      cwd: dir,
      env: { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', ...env },
    })
    if (result.exitCode !== 0) {
      const refused = CLONE_REFUSAL.exec(result.stderr)
      if (refused) throw new CloneRefusal(refused[1] === 'symlink' ? 'symlink' : 'outside', refused[2] ?? '')
      const detail = scrub(`${result.stderr}\n${result.stdout}`.trim(), secret)
      throw new SandboxOperationError('git-failed', provider, `git ${what} failed with exit code ${result.exitCode}: ${detail || '(no output)'}`)
    }
    return result
  }

  return {
    async clone(input: GitCloneOptions) {
      const dir = input.dir ?? '.'
      const relative = toWorkspaceRelative(dir, workspaceRoot)
      const args = ['clone', '--quiet']
      const depth = input.depth ?? 1
      if (depth !== 'full') args.push('--depth', String(depth), '--single-branch')
      // `--branch=<ref>` and `--` before the URL: neither can be read as an option, whatever they hold.
      if (input.ref) args.push(`--branch=${input.ref}`)
      args.push('--', input.url, '.')
      // The components travel as positional parameters of the walk, the clone runs in the directory it entered.
      const parts = relative === '' ? [] : relative.split('/')
      const local = localRepositoryPath(input.url)
      const command = `set -- ${shellJoin(parts)}\n${CLONE_WALK}\n${local === undefined ? `exec ${shellJoin(['git', ...args])}` : trustedLocalClone(local, args)}`
      try {
        await git(args, workspaceRoot, input.auth, `clone ${redactUrl(input.url)}`, command)
      } catch (error) {
        if (error instanceof CloneRefusal) throw error.toPathError(dir)
        throw error
      }
    },
    async status(input) {
      // -z: paths as they are (no C-style quoting of spaces, quotes, non-ASCII, tabs or newlines), NUL-terminated.
      const result = await git(['status', '--porcelain=v1', '-z', '--branch'], dirOf(input?.dir))
      return parseStatus(result.stdout)
    },
    async add(paths, input) {
      await git(paths && paths.length > 0 ? ['add', '--', ...paths] : ['add', '-A'], dirOf(input?.dir))
    },
    async commit(message, input) {
      const dir = dirOf(input?.dir)
      const args = ['commit', '--quiet', '-m', message]
      if (input?.allowEmpty) args.push('--allow-empty')
      const author = input?.author ?? { name: 'TanStack AI Sandbox', email: 'sandbox@tanstack.invalid' }
      await git(['-c', `user.name=${author.name}`, '-c', `user.email=${author.email}`, ...args], dir, undefined, 'commit')
      const sha = await git(['rev-parse', 'HEAD'], dir)
      return { sha: sha.stdout.trim() }
    },
    // git reads options after positionals too, so a remote or branch like `--receive-pack=...` would run a command:
    // refuse a leading "-" (`git pull` does not pass `--` on to the fetch it runs), and put `--` first where git honours it.
    async push(input?: GitRemoteOptions) {
      const args = ['push', '--quiet', '--', notAnOption(input?.remote ?? 'origin', 'git.push.remote')]
      if (input?.branch) args.push(notAnOption(input.branch, 'git.push.branch'))
      await git(args, dirOf(input?.dir), input?.auth)
    },
    async pull(input?: GitRemoteOptions) {
      const args = ['pull', '--quiet', '--ff-only', notAnOption(input?.remote ?? 'origin', 'git.pull.remote')]
      if (input?.branch) args.push(notAnOption(input.branch, 'git.pull.branch'))
      await git(args, dirOf(input?.dir), input?.auth)
    },
    async branch(name, input) {
      const dir = dirOf(input?.dir)
      if (name !== undefined) {
        await git(input?.checkout === false ? ['branch', '--', name] : ['checkout', '--quiet', '-b', name], dir)
        if (input?.checkout === false) return { name }
      }
      const current = await process.exec('git symbolic-ref --quiet --short HEAD', { cwd: dir })
      return { name: current.exitCode === 0 ? current.stdout.trim() : null }
    },
  }
}

/**
 * The clone of a repository on the sandbox's own disk (a bind mount, a host
 * folder), which often belongs to another uid than the one the clone runs as:
 * git then refuses it ("dubious ownership") unless it is a `safe.directory`,
 * which git reads only from system or global config (not from `-c` before
 * git 2.45, which Debian bookworm's 2.39 is). So the clone runs with a global
 * config of its own (`GIT_CONFIG_GLOBAL`, a temp file removed after) that
 * includes the user's and names exactly that source as safe: no other
 * repository is trusted, and nothing is written to the user's config.
 */
function trustedLocalClone(source: string, args: readonly string[]): string {
  const trimmed = source.replace(/\/+$/, '') || '/'
  const add = (key: string, value: string): string => `git config --file "$cfg" --add ${shellJoin([key, value])}`
  return [
    'cfg=$(mktemp) || exit 1',
    `{ ${add('include.path', '~/.gitconfig')} && ${add('include.path', '~/.config/git/config')} && ${add('safe.directory', trimmed)} && ${add('safe.directory', `${trimmed}/.git`)}; } || { rm -f "$cfg"; exit 1; }`,
    `GIT_CONFIG_GLOBAL="$cfg" ${shellJoin(['git', ...args])}`,
    'rc=$?',
    'rm -f "$cfg"',
    'exit $rc',
  ].join('\n')
}

/**
 * The path of a clone source on the sandbox's own filesystem: a `file://` URL
 * (percent-decoded) or an absolute path; `undefined` for a network URL or a
 * relative path. Git compares `safe.directory` with the repository's path as
 * given, so the value is the path itself.
 */
export function localRepositoryPath(url: string): string | undefined {
  if (url.startsWith('/')) return url
  if (!url.startsWith('file://')) return undefined
  try {
    const path = decodeURIComponent(new URL(url).pathname)
    return path.startsWith('/') ? path : undefined
  } catch {
    return undefined
  }
}

/**
 * The no-follow walk `clone` runs before git, over the path components in
 * `$@`: a component that is a symlink is refused, a missing one is created,
 * and after each `cd -P` the physical cwd must still be under the workspace
 * (the exec's cwd). A refusal is one marked stderr line and exit 3.
 */
const CLONE_WALK = [
  'ws=$(pwd -P) || exit 1',
  'for c do',
  "  case $c in ''|.) continue ;; esac",
  `  if [ -L "$c" ]; then printf '\\001tanstack-git-clone symlink %s\\n' "$c" >&2; exit 3; fi`,
  '  if [ ! -e "$c" ]; then mkdir -- "$c" || exit 1; fi',
  '  cd -P -- "$c" || exit 1',
  `  case "$(pwd -P)/" in "$ws"/*) ;; *) printf '\\001tanstack-git-clone outside %s\\n' "$c" >&2; exit 3 ;; esac`,
  'done',
].join('\n')

const CLONE_REFUSAL = new RegExp(`${String.fromCharCode(1)}tanstack-git-clone (symlink|outside) ([^\\n]*)`)

/** The walk refused a component; turned into a `SandboxPathError` naming the caller's `dir`. */
class CloneRefusal extends Error {
  constructor(
    readonly kind: 'symlink' | 'outside',
    readonly component: string,
  ) {
    super(`git clone refused ${component}`)
  }

  toPathError(dir: string): SandboxPathError {
    const why = this.kind === 'symlink' ? `its component ${JSON.stringify(this.component)} is a symlink` : `it left the workspace at ${JSON.stringify(this.component)}`
    return new SandboxPathError(
      'symlink-escape',
      dir,
      `git.clone refuses dir ${JSON.stringify(dir)}: ${why}. A clone never goes through symlinks (git would follow them and could write outside the workspace); clone into a real directory and link to it afterwards if needed.`,
    )
  }
}

/** `value`, unless git could read it as an option. @throws SandboxConfigError naming `field`. */
function notAnOption(value: string, field: string): string {
  if (!value.startsWith('-')) return value
  throw new SandboxConfigError(field, `Invalid option ${field}: ${JSON.stringify(value)} starts with "-", which git would read as an option. Pass a remote or branch name.`)
}

/**
 * Environment that makes one git command send `Authorization: Basic ...`
 * without storing it (`GIT_CONFIG_COUNT`/`KEY`/`VALUE`, never argv or config).
 * @returns `env` to merge into the command's environment, and the raw `secret` to scrub from output.
 */
export function gitAuthEnv(auth?: GitAuth): { env: Record<string, string>; secret?: string } {
  if (!auth) return { env: {} }
  const token = isSecretRef(auth.token) ? resolveSecret(auth.token) : auth.token
  const basic = Buffer.from(`${auth.username ?? 'x-access-token'}:${token}`).toString('base64')
  return {
    env: {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    },
    secret: token,
  }
}

function scrub(text: string, secret?: string): string {
  let out = redactUrl(text)
  if (secret && secret.length > 0) {
    out = out.split(secret).join('[redacted]')
    out = out.split(Buffer.from(secret).toString('base64')).join('[redacted]')
  }
  return out.replace(/(Authorization: Basic )\S+/gi, '$1[redacted]')
}

/** Remove `user:password@` from any URL in the text. */
export function redactUrl(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, '$1[redacted]@')
}

/**
 * Read `git status --porcelain=v1 -z --branch`: NUL-terminated fields, a
 * `## <branch>` header first, then `XY <path>` per entry; a rename or copy
 * (`R`/`C` in either column) is followed by a field holding its source path.
 * Paths are returned exactly as they are on disk.
 */
function parseStatus(stdout: string): GitStatus {
  let branch: string | null = null
  const entries: { path: string; code: string }[] = []
  const fields = stdout.split('\0')
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!
    if (field.startsWith('## ')) {
      const head = field.slice(3)
      if (head.startsWith('HEAD (no branch)')) branch = null
      else branch = (head.startsWith('No commits yet on ') ? head.slice('No commits yet on '.length) : head).split('...')[0]!.trim()
    } else if (field.length > 3) {
      const code = field.slice(0, 2)
      entries.push({ code, path: field.slice(3) })
      // The source of a rename or copy; the contract's entry has one path, the one in the working tree now.
      if (/[RC]/.test(code)) i++
    }
  }
  return { branch, clean: entries.length === 0, entries }
}
