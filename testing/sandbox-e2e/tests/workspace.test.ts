/**
 * Workspace bootstrap over the real local-process provider and system git:
 * git sources (shallow by default, full, private with a token), local and
 * empty sources, setup steps, secrets in the environment, and bad input that
 * must fail with a typed error and leave nothing behind.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createSecrets,
  defineSandbox,
  defineWorkspace,
  gitSource,
  githubRepo,
  localSource,
  SandboxConfigError,
  SandboxError,
  SandboxPathError,
  SetupStepFailedError,
  UnknownSecretError,
  withSandbox,
  WorkspaceBootstrapError,
  type SandboxDefinition,
} from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('workspace')
const provider = localProcessSandbox({ root: tmp.root })
const fixtures = mkdtempSync(join(tmpdir(), 'tsbx-e2e-fixtures-'))
let repoUrl = ''

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } })
}

beforeAll(() => {
  const work = join(fixtures, 'work')
  mkdirSync(work)
  git(work, 'init', '-q', '-b', 'main')
  for (const n of [1, 2, 3]) {
    writeFileSync(join(work, 'file.txt'), `version ${n}\n`)
    git(work, 'add', '-A')
    git(work, 'commit', '-q', '-m', `commit ${n}`)
  }
  git(work, 'checkout', '-q', '-b', 'feature')
  writeFileSync(join(work, 'feature.txt'), 'on feature\n')
  git(work, 'add', '-A')
  git(work, 'commit', '-q', '-m', 'feature')
  git(work, 'checkout', '-q', 'main')
  git(fixtures, 'clone', '-q', '--bare', work, 'repo.git')
  repoUrl = `file://${join(fixtures, 'repo.git')}`
})

afterAll(() => {
  rmSync(fixtures, { recursive: true, force: true })
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'no sandbox directory is left behind').toEqual([])
})

async function inSandbox(sandbox: SandboxDefinition, command: string): Promise<string> {
  const out = await runShell({ command, threadId: `t-${sandbox.id}`, middleware: [withSandbox(sandbox)] })
  if (out.error) throw new Error(out.error)
  return out.text
}

describe('git sources', () => {
  it('clones shallow (--depth 1 --single-branch) by default', async () => {
    const sandbox = defineSandbox({ id: 'ws-shallow', provider, workspace: defineWorkspace({ source: gitSource({ url: repoUrl }) }), lifecycle: { reuse: 'none' } })
    const out = await inSandbox(sandbox, 'cat file.txt; git rev-list --count HEAD; git branch -r')
    expect(out).toContain('version 3')
    const [, count, remotes] = out.trim().split('\n')
    expect(count).toBe('1')
    expect(remotes).not.toContain('feature')
  })

  it("takes depth N, 'full' and a ref", async () => {
    const full = defineSandbox({ id: 'ws-full', provider, workspace: defineWorkspace({ source: gitSource({ url: repoUrl, depth: 'full', ref: 'feature' }) }), lifecycle: { reuse: 'none' } })
    expect((await inSandbox(full, 'git rev-list --count HEAD; cat feature.txt')).trim().split('\n')).toEqual(['4', 'on feature'])
    const two = defineSandbox({ id: 'ws-two', provider, workspace: defineWorkspace({ source: gitSource({ url: repoUrl, depth: 2 }) }), lifecycle: { reuse: 'none' } })
    expect((await inSandbox(two, 'git rev-list --count HEAD')).trim()).toBe('2')
  })

  it('builds GitHub URLs from owner/name', () => {
    expect(githubRepo({ repo: 'tanstack/ai' }).url).toBe('https://github.com/tanstack/ai.git')
  })

  it('rejects an invalid git URL with a typed error naming the field', () => {
    const error = (() => {
      try {
        defineWorkspace({ source: { type: 'git', url: 'not a url' } })
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect((error as SandboxConfigError).field).toBe('workspace.source.url')
    expect((error as Error).message).toMatch(/git URL/)
    expect(() => githubRepo({ repo: 'no-slash' })).toThrow(/owner\/name/)
  })

  it('fails a clone of a missing repository with a source error and leaves nothing', async () => {
    const before = tmp.entries().length
    const sandbox = defineSandbox({ id: 'ws-missing', provider, workspace: defineWorkspace({ source: gitSource({ url: `file://${join(fixtures, 'nope.git')}` }) }) })
    const error = await inSandbox(sandbox, 'true').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WorkspaceBootstrapError)
    expect((error as WorkspaceBootstrapError).reason).toBe('source')
    expect(tmp.entries().length).toBe(before)
  })

  it('never leaves a clone token in .git/config, the remote URL or an error message', async () => {
    const token = `tok-${Date.now()}-secretvalue`
    const secrets = createSecrets({ GH_TOKEN: token })
    const sandbox = defineSandbox({
      id: 'ws-token',
      provider,
      workspace: defineWorkspace({ source: gitSource({ url: repoUrl, secret: secrets.GH_TOKEN }), secrets }),
      lifecycle: { reuse: 'none' },
    })
    const out = await inSandbox(sandbox, 'cat .git/config; git remote -v; echo "env=$GH_TOKEN"')
    // Secrets reach the sandbox env on purpose; the stream names them (withSandbox scrubs every chunk).
    expect(out).toContain('env=[secret GH_TOKEN]')
    expect(out).not.toContain(token)
    const failing = defineSandbox({
      id: 'ws-token-fail',
      provider,
      workspace: defineWorkspace({ source: gitSource({ url: `file://${join(fixtures, 'nope.git')}`, secret: secrets.GH_TOKEN }), secrets }),
    })
    const error = (await inSandbox(failing, 'true').catch((e: unknown) => e)) as Error
    expect(error).toBeInstanceOf(WorkspaceBootstrapError)
    expect(`${error.message}${String(error.cause ?? '')}`).not.toContain(token)
  })
})

describe('local and empty sources', () => {
  it('copies a host directory, keeps executables runnable and skips node_modules', async () => {
    const src = join(fixtures, 'local-src')
    mkdirSync(join(src, 'bin'), { recursive: true })
    mkdirSync(join(src, 'node_modules', 'x'), { recursive: true })
    writeFileSync(join(src, 'hello.txt'), 'héllo\n')
    writeFileSync(join(src, 'bin', 'run.sh'), '#!/bin/sh\necho ran\n')
    chmodSync(join(src, 'bin', 'run.sh'), 0o755)
    writeFileSync(join(src, 'node_modules', 'x', 'index.js'), '')
    const sandbox = defineSandbox({ id: 'ws-local', provider, workspace: defineWorkspace({ source: localSource({ path: src }) }), lifecycle: { reuse: 'none' } })
    const out = await inSandbox(sandbox, 'cat hello.txt && ./bin/run.sh && ls -a')
    expect(out).toContain('héllo')
    expect(out).toContain('ran')
    expect(out).not.toContain('node_modules')
  })

  it('starts empty by default', async () => {
    const sandbox = defineSandbox({ id: 'ws-empty', provider, lifecycle: { reuse: 'none' } })
    expect((await inSandbox(sandbox, 'ls -A | wc -l')).trim()).toBe('0')
  })
})

describe('setup, secrets and bad input', () => {
  it('runs setup steps in order in the workspace root', async () => {
    const sandbox = defineSandbox({ id: 'ws-setup', provider, workspace: defineWorkspace({ setup: ['mkdir -p a', 'echo one > a/1', 'cat a/1 > a/2'] }), lifecycle: { reuse: 'none' } })
    expect((await inSandbox(sandbox, 'cat a/2')).trim()).toBe('one')
  })

  it('fails a setup step with step, command, exit code and output tail, and destroys the half-made sandbox', async () => {
    const secrets = createSecrets({ API_KEY: 'sk-very-secret-value' })
    const before = tmp.entries().length
    const sandbox = defineSandbox({
      id: 'ws-setup-fail',
      provider,
      workspace: defineWorkspace({ secrets, setup: ['echo ok', 'echo "about to fail with $API_KEY"; echo oops >&2; exit 7', 'echo never'] }),
    })
    const error = (await inSandbox(sandbox, 'true').catch((e: unknown) => e)) as SetupStepFailedError
    expect(error).toBeInstanceOf(SetupStepFailedError)
    expect(error.step).toBe(2)
    expect(error.exitCode).toBe(7)
    expect(error.command).toContain('exit 7')
    expect(error.outputTail).toContain('oops')
    expect(error.outputTail).toContain('[secret API_KEY]')
    expect(error.message).not.toContain('sk-very-secret-value')
    expect(error.message).toMatch(/step 2/)
    expect(tmp.entries().length).toBe(before)
    expect(await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-ws-setup-fail', runId: '' }))).toBeNull()
  })

  it('puts secrets into the sandbox env but never into the instance store', async () => {
    const secrets = createSecrets({ SERVICE_TOKEN: 'svc-123456789' })
    const sandbox = defineSandbox({ id: 'ws-secret-env', provider, workspace: defineWorkspace({ secrets }) })
    expect((await inSandbox(sandbox, 'echo $SERVICE_TOKEN')).trim(), 'the value is in the env; the stream names it').toBe('[secret SERVICE_TOKEN]')
    const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-ws-secret-env', runId: '' }))
    expect(JSON.stringify(record)).not.toContain('svc-123456789')
    expect(JSON.stringify(sandbox.workspace)).not.toContain('svc-123456789')
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-ws-secret-env', runId: '' }) })
  })

  it('never writes secret values to the sandbox directory (only into process environments)', async () => {
    const value = `disk-check-${Date.now()}-secretvalue`
    const secrets = createSecrets({ DISK_TOKEN: value })
    const sandbox = defineSandbox({ id: 'ws-secret-disk', provider, workspace: defineWorkspace({ secrets, setup: ['test -n "$DISK_TOKEN"'] }) })
    const pwd = (await inSandbox(sandbox, 'echo "$DISK_TOKEN" > /dev/null; pwd')).trim()
    const grep = spawnSync('grep', ['-rl', '--', value, join(pwd, '..')], { encoding: 'utf8' })
    expect(grep.status, 'grep finds nothing (exit 1), rather than failing (exit 2)').toBe(1)
    expect(grep.stdout).toBe('')
    // and a resumed run still sees it
    expect((await inSandbox(sandbox, 'echo "$DISK_TOKEN"')).trim(), 'the stream names the value it printed').toBe('[secret DISK_TOKEN]')
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-ws-secret-disk', runId: '' }) })
  })

  it('refuses credentials embedded in a git URL', () => {
    expect(() => gitSource({ url: 'https://user:hunter2@example.com/a.git' })).toThrow(/credentials in the URL/)
  })

  it('refuses a definition without a provider, naming the field', () => {
    const error = (() => {
      try {
        defineSandbox({ id: 'x' } as never)
      } catch (e) {
        return e
      }
    })() as SandboxConfigError
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect(error.field).toBe('defineSandbox.provider')
    expect(error.message).toMatch(/localProcessSandbox\(\)/)
  })

  it('refuses an unknown secret', () => {
    const mine = createSecrets({ A: 'a-value' })
    const theirs = createSecrets({ B: 'b-value' })
    expect(() => defineWorkspace({ secrets: mine, source: gitSource({ url: repoUrl, secret: theirs.B }) })).toThrow(UnknownSecretError)
    const forged = { name: 'A', format: 'raw', toJSON: () => ({ $secret: 'A' }) }
    expect(() => defineWorkspace({ secrets: { A: forged as never } })).toThrow(/string or a reference/)
  })

  it('refuses a path that escapes the sandbox', async () => {
    const handle = await provider.create()
    try {
      const error = await handle.fs.read('../../etc/passwd').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(SandboxPathError)
      expect(SandboxError.isInstance(error)).toBe(true)
      expect((error as SandboxPathError).reason).toBe('escape')
    } finally {
      await handle.destroy()
    }
  })

  it('reads a file written by setup from the host side too', async () => {
    const sandbox = defineSandbox({ id: 'ws-host-read', provider, workspace: defineWorkspace({ setup: ['printf data > out.bin'] }) })
    const pwd = (await inSandbox(sandbox, 'pwd')).trim()
    expect(readFileSync(join(pwd, 'out.bin'), 'utf8')).toBe('data')
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-ws-host-read', runId: '' }) })
  })
})
