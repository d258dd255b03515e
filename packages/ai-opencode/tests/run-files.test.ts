/**
 * The run files OpenCode runs keep outside the workspace (the prompt, the
 * system-prompt instruction file), written with core's writer through a real
 * local-process sandbox: byte for byte across base64 pieces, owner-only, and
 * gone after removal. Core tests the writer's details over a bare `sh`
 * handle (packages/ai-sandbox/tests/harness/sandbox-run-file.test.ts).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { removeSandboxRunFiles, sandboxRunFilePath, writeSandboxRunFile } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'

const root = mkdtempSync(join(tmpdir(), 'opencode-run-files-test-'))
const provider = localProcessSandbox({ root: join(root, 'sandboxes') })

afterAll(() => {
  const left = readdirSync(join(root, 'sandboxes'))
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
})

describe('run files on a local-process sandbox', () => {
  it('writes a prompt over 128 KiB of base64 owner-only and removes it with the system file', async () => {
    const handle = await provider.create()
    try {
      // Stands in for /tmp/tanstack-opencode, which the end-to-end suite watches for leftovers.
      const dir = join(root, 'tanstack-opencode')
      const prompt = `Fix the bug in "src/a.ts" — don't touch $PATH or \`ls\`.\n${'ünïcødé 🚀 line\n'.repeat(9_000)}`
      expect(Buffer.from(prompt, 'utf8').toString('base64').length).toBeGreaterThan(2 * 64 * 1024)
      const promptFile = await writeSandboxRunFile(handle, { file: sandboxRunFilePath(dir, 'run/1', 'prompt'), content: prompt, harness: 'opencode' })
      const systemFile = await writeSandboxRunFile(handle, { file: sandboxRunFilePath(dir, 'run/1', 'system.md'), content: 'Be brief.', harness: 'opencode' })
      expect(promptFile).toMatch(new RegExp(`^${dir}/run_1-[0-9a-f]{16}\\.prompt$`))
      expect(readFileSync(promptFile, 'utf8')).toBe(prompt)
      expect(readFileSync(systemFile, 'utf8')).toBe('Be brief.')
      expect(statSync(promptFile).mode & 0o777).toBe(0o600)
      expect(statSync(dir).mode & 0o777).toBe(0o700)
      expect((await handle.process.exec(`cat ${promptFile} | wc -c`)).stdout.trim()).toBe(String(Buffer.byteLength(prompt)))

      await removeSandboxRunFiles(handle, [promptFile, systemFile])
      expect([promptFile, systemFile].filter((file) => existsSync(file))).toEqual([])
    } finally {
      await handle.destroy()
    }
  })
})
