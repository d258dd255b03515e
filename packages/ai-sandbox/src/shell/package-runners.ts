/**
 * What the policy judge knows about package managers that run another program
 * (`npx`, `pnpm exec`/`dlx`, `yarn exec`/`dlx`, `bunx`, `corepack <pm>`, …).
 * Knowledge only, like `known-commands.ts`: it only adds forms for deny and ask
 * rules; a command string makes the command opaque.
 * Design notes: docs/design/shell.md
 */
import { readOptions, type OptionSpec } from './known-commands.js'

/** Names pnpm takes as its own command rather than a script's or a program's (`pnpm publish` publishes). */
export const PNPM_COMMANDS: ReadonlySet<string> = new Set([
  'access', 'add', 'adduser', 'approve-builds', 'audit', 'bin', 'bugs', 'c', 'cat-file', 'cat-index', 'config', 'create', 'dedupe',
  'deploy', 'deprecate', 'dist-tag', 'dlx', 'docs', 'doctor', 'edit', 'env', 'exec', 'fetch', 'find-hash', 'i', 'ignored-builds',
  'import', 'info', 'init', 'install', 'install-test', 'it', 'la', 'licenses', 'link', 'list', 'll', 'ln', 'login', 'logout', 'ls',
  'outdated', 'owner', 'pack', 'patch', 'patch-commit', 'patch-remove', 'ping', 'pkg', 'prefix', 'profile', 'prune', 'publish',
  'rb', 'rebuild', 'recursive', 'remove', 'repo', 'rm', 'root', 'run', 's', 'search', 'self-update', 'server', 'setup', 'show',
  'star', 'stars', 'store', 'team', 'token', 'un', 'uninstall', 'unlink', 'unpublish', 'unstar', 'up', 'update', 'upgrade',
  'version', 'view', 'whoami', 'why',
])
/** Names yarn (classic and berry) takes as its own command rather than a script's or a program's. */
export const YARN_COMMANDS: ReadonlySet<string> = new Set([
  'access', 'add', 'audit', 'autoclean', 'bin', 'cache', 'check', 'config', 'constraints', 'create', 'dedupe', 'dlx', 'exec',
  'explain', 'generate-lock-entry', 'global', 'help', 'import', 'info', 'init', 'install', 'licenses', 'link', 'list', 'login',
  'logout', 'node', 'npm', 'outdated', 'owner', 'pack', 'patch', 'patch-commit', 'plugin', 'policies', 'publish', 'rebuild',
  'remove', 'run', 'search', 'set', 'stage', 'tag', 'team', 'unlink', 'unplug', 'up', 'upgrade', 'upgrade-interactive', 'version',
  'versions', 'why', 'workspace', 'workspaces',
])
/** bun's own commands; any other word is a script, file or program `bun` runs (like `bun run`). */
const BUN_COMMANDS = new Set([
  'a', 'add', 'audit', 'build', 'c', 'completions', 'create', 'discord', 'exec', 'help', 'i', 'info', 'init', 'install', 'link',
  'outdated', 'patch', 'patch-commit', 'pm', 'publish', 'remove', 'repl', 'rm', 'run', 'test', 'unlink', 'update', 'upgrade', 'why', 'x',
])

/** The package managers `corepack <name>[@version]` runs. */
const COREPACK_MANAGERS = new Set(['npm', 'npx', 'pnpm', 'pnpx', 'yarn', 'yarnpkg'])
/** npm's options that take a value (config keys read as `--key value`); `-c` is `--call`, `-w` `--workspace`. */
const NPM: OptionSpec = { short: 'cw', long: ['call', 'package', 'workspace', 'prefix', 'registry', 'cache', 'userconfig', 'globalconfig', 'loglevel', 'node-options', 'script-shell', 'before', 'tag', 'otp'] }
/** npx: npm's, plus `-p` for `--package`. */
const NPX: OptionSpec = { ...NPM, short: 'cpw' }
/** pnpm's options before its command (`pnpm -C dir --filter web -c exec …`); `-c`/`--shell-mode` is a flag. */
const PNPM: OptionSpec = {
  short: 'CF',
  long: ['dir', 'filter', 'filter-prod', 'test-pattern', 'changed-files-ignore-pattern', 'reporter', 'loglevel', 'workspace-concurrency', 'resume-from', 'package', 'allow-build', 'store-dir', 'virtual-store-dir', 'modules-dir', 'lockfile-dir', 'registry', 'cpu', 'os', 'libc'],
}
/** yarn's options before its command (`--cwd dir`). */
const YARN: OptionSpec = { long: ['cwd', 'modules-folder', 'cache-folder', 'global-folder', 'link-folder', 'mutex', 'network-timeout', 'registry'] }
/** `yarn dlx` and `bunx`: `-p`/`--package`. */
const PACKAGE_OPTION: OptionSpec = { short: 'p', long: ['package'] }
/** `yarn workspaces foreach` options with a value. */
const YARN_FOREACH: OptionSpec = { short: 'j', long: ['include', 'exclude', 'from', 'jobs'] }
/** bun's options before its command, and `bun run`'s. */
const BUN: OptionSpec = { short: 'F', long: ['cwd', 'filter', 'env-file', 'elide-lines', 'shell', 'config', 'preload', 'conditions', 'define', 'loader', 'port'] }

/** What a package-manager command runs: the program's words, and any command line it hands to a shell. */
export interface PackageRun {
  /** The command it runs (`npx prettier x` → `['prettier', 'x']`); empty when it runs only a command string. */
  command: string[]
  /** A command line it runs through a shell (`npx -c '…'`, `pnpm -c exec …`, `bun exec '…'`, `yarn exec '…'`). */
  script?: string
}

/**
 * The command a package manager runs, or undefined when `program` is none
 * of those above or runs none (`pnpm install`, `npm test`).
 * @example
 * ```ts
 * packageRun('pnpm', ['--filter', 'web', 'exec', 'git', 'push']) // { command: ['git', 'push'] }
 * packageRun('npx', ['-c', 'git push'])                           // { command: [], script: 'git push' }
 * ```
 */
export function packageRun(program: string, args: readonly string[]): PackageRun | undefined {
  switch (program) {
    case 'npx':
      return npmExec(args, NPX)
    case 'npm': {
      const { rest } = readOptions(args, NPM)
      return rest[0] === 'exec' || rest[0] === 'x' ? npmExec(rest.slice(1), NPM) : undefined
    }
    case 'pnpm':
      return pnpm(args)
    case 'pnpx':
      return pnpm(['dlx', ...args])
    case 'yarn':
    case 'yarnpkg':
      return yarn(args, 0)
    case 'bunx':
      return { command: readOptions(args, PACKAGE_OPTION).rest }
    case 'bun':
      return bun(args)
    case 'corepack': {
      // `corepack pnpm@9 exec …` runs that package manager, which the next reading sees.
      const manager = args[0]?.replace(/(.)@.*$/, '$1')
      return manager && COREPACK_MANAGERS.has(manager) ? { command: [manager, ...args.slice(1)] } : undefined
    }
    default:
      return undefined
  }
}

/** `npx`/`npm exec`: options, then the command; `-c`/`--call` is a command line. */
function npmExec(args: readonly string[], spec: OptionSpec): PackageRun {
  const { rest, values } = readOptions(args, spec)
  const call = values.find(([name]) => name === 'c' || name === 'call')
  return call ? { command: rest, script: call[1] } : { command: rest }
}

/** `pnpm [options] exec|dlx|<program> …`; `-c`/`--shell-mode` joins the words into one line for `/bin/sh -c`. */
function pnpm(args: readonly string[]): PackageRun | undefined {
  const global = readOptions(args, PNPM)
  const [name, ...after] = global.rest
  let shell = hasShellMode(global.flags)
  let command: string[]
  if (name === 'dlx') {
    const dlx = readOptions(after, PNPM)
    shell ||= hasShellMode(dlx.flags)
    command = dlx.rest
  } else if (name === 'exec') command = after[0] === '--' ? after.slice(1) : after
  else if (name === undefined || PNPM_COMMANDS.has(name)) return undefined
  // pnpm runs a word that is neither its command nor a script as `pnpm exec` (`pnpm eslint .`).
  else command = [name, ...after]
  return shell ? { command, script: command.join(' ') } : { command }
}

/** Whether pnpm's `-c`/`--shell-mode` was given. */
function hasShellMode(flags: readonly string[]): boolean {
  return flags.includes('c') || flags.includes('shell-mode')
}

/** `yarn [options] exec|dlx|run|workspace|workspaces foreach|<program> …`. */
function yarn(args: readonly string[], depth: number): PackageRun | undefined {
  const [name, ...rest] = readOptions(args, YARN).rest
  if (name === 'exec') {
    const { rest: command } = readOptions(rest, {})
    // yarn classic runs the program; berry runs its first word as a script of its portable shell.
    return command.length > 0 ? { command, script: command[0]! } : undefined
  }
  if (name === 'dlx') return { command: readOptions(rest, PACKAGE_OPTION).rest }
  if (name === 'run') return rest.length > 0 ? { command: rest } : undefined
  if (depth < 4 && name === 'workspace') return yarn(rest.slice(1), depth + 1)
  if (depth < 4 && name === 'workspaces' && rest[0] === 'foreach') return yarn(readOptions(rest.slice(1), YARN_FOREACH).rest, depth + 1)
  if (name === undefined || YARN_COMMANDS.has(name)) return undefined
  return { command: [name, ...rest] }
}

/** `bun [options] x|exec|run|<file or program> …`. */
function bun(args: readonly string[]): PackageRun | undefined {
  const [name, ...rest] = readOptions(args, BUN).rest
  if (name === 'x') return { command: readOptions(rest, PACKAGE_OPTION).rest }
  if (name === 'exec') return rest.length > 0 ? { command: [], script: rest.join(' ') } : undefined
  if (name === 'run') {
    const command = readOptions(rest, BUN).rest
    return command.length > 0 ? { command } : undefined
  }
  if (name === undefined || BUN_COMMANDS.has(name)) return undefined
  return { command: [name, ...rest] }
}
