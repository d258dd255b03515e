/**
 * The projection seam on a real sandbox: a harness's `write` runs once per
 * workspace (marker at the root, kept out of git status), again when a secret
 * value changes, and never when nothing is declared.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { agentSkill, bearer, createSecrets, defineWorkspace, mcpSkill, PROJECTION_MARKER, projectWorkspace, type HarnessProjection, type McpSkill } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('projection')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left).toEqual([])
})

/** A harness that writes the resolved MCP header to a file and counts its writes. */
function recorder(): HarnessProjection & { writes: number } {
  const projection = {
    harness: 'test-harness',
    paths: ['header.txt'],
    writes: 0,
    async write(ctx: Parameters<HarnessProjection['write']>[0]) {
      projection.writes += 1
      const mcp = ctx.workspace.skills.find((s): s is McpSkill => s.kind === 'mcp')
      await ctx.handle.fs.write('header.txt', mcp && mcp.transport === 'http' ? ctx.resolve(mcp.headers.Authorization!) : 'none')
    },
    args: async () => ['--from-projection'],
  }
  return projection
}

describe('projectWorkspace', () => {
  it('writes once per workspace, again after a secret rotates, and keeps its files out of git status', async () => {
    const handle = await provider.create()
    try {
      await handle.process.exec('git init -q')
      const workspaceWith = (token: string) => {
        const secrets = createSecrets({ TOKEN: token })
        return defineWorkspace({ secrets, skills: [mcpSkill('svc', { url: 'https://svc.example/mcp', headers: { Authorization: bearer(secrets.TOKEN) } })] })
      }
      const projection = recorder()
      const first = workspaceWith('token-one')
      expect(await projectWorkspace(handle, first, projection)).toEqual({ args: ['--from-projection'] })
      await projectWorkspace(handle, first, projection)
      expect(projection.writes, 'the second run finds the marker').toBe(1)
      expect(readFileSync(join(handle.workspaceRoot, 'header.txt'), 'utf8')).toBe('Bearer token-one')

      const rotated = workspaceWith('token-two')
      expect(rotated.hash, 'same names, same workspace hash').toBe(first.hash)
      await projectWorkspace(handle, rotated, projection)
      expect(projection.writes, 'a rotated secret is projected again').toBe(2)
      expect(readFileSync(join(handle.workspaceRoot, 'header.txt'), 'utf8')).toBe('Bearer token-two')

      const status = await handle.process.exec('git status --porcelain')
      expect(status.stdout, 'the marker and the harness files stay out of git status').toBe('')
      expect(readFileSync(join(handle.workspaceRoot, PROJECTION_MARKER), 'utf8')).not.toContain('token-')
    } finally {
      await handle.destroy()
    }
  })

  it('writes nothing for a workspace that declares no skills or plugins', async () => {
    const handle = await provider.create()
    try {
      const projection = recorder()
      await projectWorkspace(handle, defineWorkspace({}), projection)
      expect(projection.writes).toBe(0)
      expect(await handle.fs.exists(PROJECTION_MARKER)).toBe(false)
      await projectWorkspace(handle, defineWorkspace({ skills: [agentSkill('x')] }), projection)
      expect(projection.writes).toBe(1)
    } finally {
      await handle.destroy()
    }
  })
})
