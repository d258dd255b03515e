/**
 * Run files over real `sh -c` children (tests/helpers/fake-handle.ts, whose
 * `fs` is unsupported, so only exec is used): paths, contents byte for byte
 * across base64 pieces, owner-only modes, the error for a failed write, and
 * removal that never throws. The same writer through a real local-process
 * sandbox is covered in packages/ai-opencode/tests/run-files.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { removeSandboxRunFiles, SandboxOperationError, sandboxRunFilePath, writeSandboxRunFile, type SandboxHandle } from '../../src/index.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const root = mkdtempSync(join(tmpdir(), 'sandbox-run-file-test-'))
const handle = createFakeHandle(root)

afterAll(async () => {
  await handle.destroy()
  rmSync(root, { recursive: true, force: true })
})

/** The handle with every exec command recorded. */
function recording(): { handle: SandboxHandle; commands: string[] } {
  const commands: string[] = []
  return { handle: { ...handle, process: { ...handle.process, exec: (command, options) => (commands.push(command), handle.process.exec(command, options)) } }, commands }
}

describe('sandboxRunFilePath', () => {
  it('is <dir>/<runId>.<suffix> with the run id made safe for a file name', () => {
    expect(sandboxRunFilePath('/tmp/tanstack-codex', 'run-7.a_b', 'prompt')).toBe('/tmp/tanstack-codex/run-7.a_b.prompt')
    expect(sandboxRunFilePath('/tmp/tanstack-opencode', '../run 7/$(x)', 'system.md')).toMatch(/^\/tmp\/tanstack-opencode\/\.\._run_7___x_-[0-9a-f]{16}\.system\.md$/)
  })

  it('gives every valid run id a name of its own that fits a file name: 512 characters, and ids that differ only in replaced characters', () => {
    const long = sandboxRunFilePath('/tmp/tanstack-codex', 'é'.repeat(512), 'prompt')
    expect(Buffer.byteLength(posix.basename(long))).toBeLessThanOrEqual(255)
    const names = ['run:1', 'run/1', 'run_1', 'run 1'].map((id) => sandboxRunFilePath('/tmp/tanstack-codex', id, 'prompt'))
    expect(new Set(names).size).toBe(4)
    expect(sandboxRunFilePath('/tmp/tanstack-codex', 'r'.repeat(96), 'prompt')).toBe(`/tmp/tanstack-codex/${'r'.repeat(96)}.prompt`)
    expect(posix.basename(sandboxRunFilePath('/tmp/tanstack-codex', 'r'.repeat(97), 'prompt'))).toMatch(/^r{64}-[0-9a-f]{16}\.prompt$/)
  })
})

describe('writeSandboxRunFile', () => {
  it('writes content larger than two pieces byte for byte, owner-only, in a folder it creates', async () => {
    const dir = join(root, 'new/tanstack-test')
    const file = sandboxRunFilePath(dir, 'run-big', 'prompt')
    // Multi-byte characters and shell syntax, about 300 KiB: 400 KiB of base64, so 7 pieces of 64 KiB.
    const content = `line one 'quoted' "double" $(echo no) \`no\` \\ %s\n${'é€𝄞 $HOME; rm -rf / # '.repeat(12_000)}\nlast line without newline`
    const { handle: spy, commands } = recording()
    expect(await writeSandboxRunFile(spy, { file, content, harness: 'codex', what: 'the prompt file' })).toBe(file)
    expect(readFileSync(file)).toEqual(Buffer.from(content, 'utf8'))
    const pieces = Math.ceil(Buffer.from(content, 'utf8').toString('base64').length / (64 * 1024))
    expect(pieces).toBeGreaterThan(2)
    expect(commands).toHaveLength(pieces)
    expect(commands[0]).toMatch(/^umask 077 && mkdir -p /)
    expect(commands.slice(1).every((c) => c.startsWith("printf '%s' ") && c.includes(' >> '))).toBe(true)
    expect(commands.every((c) => Buffer.byteLength(c) < 128 * 1024)).toBe(true)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
  })

  it('replaces an existing file, and writes an empty one for empty content', async () => {
    const file = sandboxRunFilePath(root, 'run-replace', 'prompt')
    await writeSandboxRunFile(handle, { file, content: 'x'.repeat(200_000), harness: 'claude-code' })
    await writeSandboxRunFile(handle, { file, content: 'short', harness: 'claude-code' })
    expect(readFileSync(file, 'utf8')).toBe('short')
    await writeSandboxRunFile(handle, { file, content: '', harness: 'claude-code' })
    expect(readFileSync(file, 'utf8')).toBe('')
    expect(statSync(file).mode & 0o777).toBe(0o600)
  })

  it('throws SandboxOperationError exec-failed naming the harness, the file, the exit code and stderr', async () => {
    const blocker = join(root, 'a-file')
    writeFileSync(blocker, 'not a folder')
    const file = sandboxRunFilePath(blocker, 'run-1', 'prompt')
    const error = await writeSandboxRunFile(handle, { file, content: 'hi', harness: 'claude-code', what: 'the prompt file' }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error).toMatchObject({ reason: 'exec-failed', provider: 'fake' })
    expect((error as Error).message).toMatch(new RegExp(`^claude-code: could not write the prompt file ${file} in the sandbox \\(exit 1\\): .*mkdir.*\\. The sandbox needs mkdir, printf and base64\\.$`, 's'))
    const bare = await writeSandboxRunFile(handle, { file, content: 'hi', harness: 'opencode' }).catch((e: Error) => e.message)
    expect(bare).toMatch(new RegExp(`^opencode: could not write ${file} in the sandbox \\(exit 1\\)`))
  })
})

describe('removeSandboxRunFiles', () => {
  it('removes the files, a missing one included, and runs nothing for an empty list', async () => {
    const files = ['one', 'two'].map((id) => sandboxRunFilePath(root, id, 'prompt'))
    for (const file of files) await writeSandboxRunFile(handle, { file, content: file, harness: 'opencode' })
    await removeSandboxRunFiles(handle, [...files, sandboxRunFilePath(root, 'never-written', 'prompt')])
    expect(files.filter((file) => existsSync(file))).toEqual([])
    const { handle: spy, commands } = recording()
    await removeSandboxRunFiles(spy, [])
    expect(commands).toEqual([])
  })

  it('does not throw when the sandbox is already gone', async () => {
    const gone: SandboxHandle = {
      ...handle,
      process: {
        ...handle.process,
        exec: async () => {
          throw new SandboxOperationError('not-found', 'fake', 'the sandbox was destroyed')
        },
      },
    }
    await expect(removeSandboxRunFiles(gone, ['/tmp/tanstack-test/x.prompt'])).resolves.toBeUndefined()
  })
})
