/**
 * The repository every task works on: a small git repository the server
 * creates once in its data folder; each run's sandbox clones it
 * (`gitSource`), so the sample itself never changes.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The files of the sample repository, by path. */
export const SAMPLE_FILES: Readonly<Record<string, string>> = {
  'package.json': '{\n  "name": "sandbox-web-math",\n  "private": true,\n  "type": "module",\n  "scripts": { "test": "node --test" }\n}\n',
  'math.js': '/** The sum of two numbers. */\nexport function add(a, b) {\n  return a + b\n}\n',
  'math.test.js': "import { test } from 'node:test'\nimport assert from 'node:assert/strict'\nimport { add } from './math.js'\n\ntest('add', () => {\n  assert.equal(add(2, 3), 5)\n})\n",
  'README.md': '# sandbox-web-math\n\nA tiny library for the sandbox-web example.\n',
}

/**
 * Create the sample repository in `dir` unless it is there already.
 * @returns Its `file://` URL, for `gitSource({ url })`.
 * @throws the git error when git is missing (git 2.28 or newer is needed).
 */
export async function ensureSampleRepo(dir: string): Promise<string> {
  if (!existsSync(join(dir, '.git'))) {
    await mkdir(dir, { recursive: true })
    for (const [path, content] of Object.entries(SAMPLE_FILES)) await writeFile(join(dir, path), content)
    const identity = ['-c', 'user.name=sandbox-web', '-c', 'user.email=sandbox-web@example.com']
    await run('git', ['init', '-q', '-b', 'main'], { cwd: dir })
    await run('git', ['add', '-A'], { cwd: dir })
    await run('git', [...identity, 'commit', '-q', '-m', 'Add add() and its test'], { cwd: dir })
  }
  return pathToFileURL(dir).href
}
