/**
 * `instructions` against what the source already has, on the real
 * local-process provider: files named AGENTS.md, CLAUDE.md or GEMINI.md are
 * replaced, but a directory of that name fails the bootstrap with a typed
 * `WorkspaceBootstrapError` (reason `source`) naming the path and the fix,
 * never a raw EISDIR or a silently deleted tree, and nothing is left behind.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, fileSkill, localSource, SandboxConfigError, WorkspaceBootstrapError } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('instructions')
const provider = localProcessSandbox({ root: tmp.root })
const fixtures = mkdtempSync(join(tmpdir(), 'tsbx-e2e-instructions-'))

afterAll(() => {
  rmSync(fixtures, { recursive: true, force: true })
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'no sandbox directory is left behind').toEqual([])
})

/** A host directory to use as a local source, with `dir` as a directory holding a file. */
function sourceWithDirectory(name: string, dir: string): string {
  const src = join(fixtures, name)
  mkdirSync(join(src, dir), { recursive: true })
  writeFileSync(join(src, dir, 'notes.md'), 'keep me\n')
  writeFileSync(join(src, 'README.md'), '# app\n')
  return src
}

describe('instructions over a source', () => {
  it.each(['AGENTS.md', 'CLAUDE.md', 'GEMINI.md'])('fails with a typed error when the source has a directory named %s', async (dir) => {
    const src = sourceWithDirectory(`dir-${dir}`, dir)
    const sandbox = defineSandbox({ id: `instr-${dir.replace('.', '-')}`, provider, workspace: defineWorkspace({ source: localSource({ path: src }), instructions: 'Be brief.' }) })
    const error = await sandbox.ensure({ threadId: 't1', runId: 'r1' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WorkspaceBootstrapError)
    expect((error as WorkspaceBootstrapError).reason).toBe('source')
    const message = (error as Error).message
    expect(message).toMatch(new RegExp(`has a directory at /\\S+/workspace/${dir.replace('.', '\\.')}, where instructions write the file ${dir.replace('.', '\\.')}`))
    expect(message).toContain(`Remove or rename the ${dir} directory in the source, or drop defineWorkspace({ instructions })`)
    expect(message).not.toMatch(/EISDIR/)
    expect(tmp.entries(), 'the half-made sandbox was destroyed').toEqual([])
    expect(readFileSync(join(src, dir, 'notes.md'), 'utf8'), 'the host source is untouched').toBe('keep me\n')
  })

  it('replaces instruction files the source has, linking CLAUDE.md and GEMINI.md to AGENTS.md', async () => {
    const src = join(fixtures, 'files')
    mkdirSync(src, { recursive: true })
    for (const name of ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md']) writeFileSync(join(src, name), `old ${name}\n`)
    const sandbox = defineSandbox({ id: 'instr-files', provider, workspace: defineWorkspace({ source: localSource({ path: src }), instructions: 'Be brief.' }), lifecycle: { reuse: 'none' } })
    const run = { threadId: 't1', runId: 'r1' }
    const handle = await sandbox.ensure(run)
    try {
      for (const name of ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md']) expect(await handle.fs.read(name)).toBe('Be brief.\n')
      expect((await handle.fs.lstat!('CLAUDE.md')).type).toBe('symlink')
    } finally {
      await sandbox.destroy({ key: sandbox.key(run) })
    }
  })

  it('refuses a file skill that instructions would overwrite at definition time', () => {
    const error = (() => {
      try {
        defineWorkspace({ instructions: 'Be brief.', skills: [fileSkill({ path: 'CLAUDE.md', content: 'mine' })] })
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect((error as SandboxConfigError).field).toBe('workspace.skills.0')
  })

  it('turns a file skill that cannot be written (a source directory in the way) into a typed error', async () => {
    const src = sourceWithDirectory('dir-docs', 'docs')
    const sandbox = defineSandbox({ id: 'instr-fileskill', provider, workspace: defineWorkspace({ source: localSource({ path: src }), skills: [fileSkill({ path: 'docs', content: 'x' })] }) })
    const error = await sandbox.ensure({ threadId: 't1', runId: 'r1' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(WorkspaceBootstrapError)
    expect((error as WorkspaceBootstrapError).reason).toBe('source')
    expect((error as Error).message).toMatch(/^fileSkill "docs" could not be written into the workspace: /)
    expect(tmp.entries()).toEqual([])
  })
})
