/**
 * The repository the agent works on: a small sample git repository made in a
 * temp directory (the default), or the one named by `--repo`. Owns only host
 * git calls made before the sandbox exists; the sandbox clones the result
 * through `gitSource`. Invariant: the returned URL is always a git URL
 * (`file://` for a local path), never a bare path.
 */
import { execFile } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { DemoError } from './errors.js'

const run = promisify(execFile)

/** The files of the sample repository, by path. The offline script edits `math.js` and `math.test.js`. */
export const SAMPLE_FILES: Readonly<Record<string, string>> = {
  'package.json': '{\n  "name": "quickstart-math",\n  "private": true,\n  "type": "module",\n  "scripts": { "test": "node --test" }\n}\n',
  'math.js': '/** The sum of two numbers. */\nexport function add(a, b) {\n  return a + b\n}\n',
  'math.test.js': "import { test } from 'node:test'\nimport assert from 'node:assert/strict'\nimport { add } from './math.js'\n\ntest('add', () => {\n  assert.equal(add(2, 3), 5)\n})\n",
  'README.md': '# quickstart-math\n\nA tiny library for the TanStack AI sandbox quickstart.\n',
}

/** Where the workspace comes from. */
export interface RepoSource {
  /** A git URL for `gitSource({ url })`. */
  readonly url: string
  /** What to print, e.g. the host path or the URL. */
  readonly label: string
  /** True for the generated sample repository. */
  readonly sample: boolean
  /** The host directory, for a local repository (a Docker sandbox mounts it to clone from). */
  readonly path?: string
}

/**
 * Create the sample repository (one commit) in `dir`.
 *
 * @param dir - An empty or missing host directory; created if needed.
 * @param signal - Stops the git commands (the caller reports the abort). Default: none.
 * @returns Its source, with a `file://` URL.
 * @throws DemoError `repo` when git is missing or a git command fails; `aborted` when `signal` fired.
 */
export async function createSampleRepo(dir: string, signal?: AbortSignal): Promise<RepoSource> {
  await mkdir(dir, { recursive: true })
  for (const [path, content] of Object.entries(SAMPLE_FILES)) await writeFile(join(dir, path), content)
  const identity = ['-c', 'user.name=Quickstart', '-c', 'user.email=quickstart@example.com']
  try {
    await run('git', ['init', '-q', '-b', 'main'], { cwd: dir, signal })
    await run('git', ['add', '-A'], { cwd: dir, signal })
    await run('git', [...identity, 'commit', '-q', '-m', 'Add add() and its test'], { cwd: dir, signal })
  } catch (cause) {
    // git killed by the same Ctrl-C (it shares the terminal's process group) is an abort, not a missing git.
    if (signal?.aborted) throw new DemoError('aborted', 'Interrupted while creating the sample repository.', { cause })
    throw new DemoError('repo', `Could not create the sample git repository in ${dir}: ${(cause as Error).message.trim()}. Is git (2.28 or newer) on the PATH?`, { cause })
  }
  return { url: pathToFileURL(dir).href, label: `${dir} (sample: math.js, math.test.js)`, sample: true, path: dir }
}

/**
 * Turn the `--repo` argument into a source: a git URL is used as is, a host
 * path must be a git repository with at least one commit.
 *
 * @param value - A git URL (`https://…`, `git@host:…`, `file://…`) or a host path.
 * @param signal - Stops the git command. Default: none.
 * @throws DemoError `repo` when the path does not exist or is not a git repository; `aborted` when `signal` fired.
 */
export async function resolveRepo(value: string, signal?: AbortSignal): Promise<RepoSource> {
  if (/^(?:[a-z]+:\/\/|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:)/.test(value)) return { url: value, label: value, sample: false, ...(value.startsWith('file://') ? { path: fileURLToPath(value) } : {}) }
  const path = resolve(value)
  if (!existsSync(path) || !statSync(path).isDirectory()) throw new DemoError('repo', `--repo ${value}: ${path} is not a directory. Pass a git repository path or a git URL.`)
  try {
    await run('git', ['rev-parse', '--verify', 'HEAD'], { cwd: path, signal })
  } catch (cause) {
    if (signal?.aborted) throw new DemoError('aborted', `Interrupted while checking --repo ${value}.`, { cause })
    throw new DemoError('repo', `--repo ${value}: ${path} is not a git repository with at least one commit (git rev-parse HEAD failed).`, { cause })
  }
  return { url: pathToFileURL(path).href, label: path, sample: false, path }
}
