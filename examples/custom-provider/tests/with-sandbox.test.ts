// The example provider under core as an app uses it: chat() with withSandbox and
// a harness-style adapter (the shell adapter of examples/local-process-basic).
// Proves the parts core drives through the provider: bootstrap through exec,
// resume by id on the next run of the thread, file events by polling (this
// provider has no fs.watch), file.changed against the run-start snapshot, and
// destroy by key.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { chat, type StreamChunk } from '@tanstack/ai'
import { defineSandbox, defineWorkspace, withSandbox } from '@tanstack/ai-sandbox'
import { shellText } from '@example/local-process-basic/shell-adapter'
import { directorySandbox } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'directory-with-sandbox-'))
afterAll(() => {
  expect(readdirSync(root), 'sandbox folders left behind').toEqual([])
  rmSync(root, { recursive: true, force: true })
})

const sandbox = defineSandbox({
  id: 'directory-example',
  provider: directorySandbox({ root }),
  workspace: defineWorkspace({ setup: ['git init -q', "printf 'one\\n' > notes.txt", 'git add -A && git -c user.name=t -c user.email=t@example.invalid commit -qm init'] }),
})

async function run(command: string): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = []
  const stream = chat({ adapter: shellText(), threadId: 'thread-1', messages: [{ role: 'user', content: command }], middleware: [withSandbox(sandbox)] })
  for await (const chunk of stream as AsyncIterable<StreamChunk>) chunks.push(chunk)
  return chunks
}

const custom = (chunks: StreamChunk[], name: string) =>
  chunks.flatMap((chunk) => (chunk.type === 'CUSTOM' && chunk.name === name ? [chunk.value as { type?: string; path: string; diff?: string }] : []))

describe('directorySandbox under withSandbox', () => {
  it('streams file events and this run\'s diff, and the next run of the thread resumes the same sandbox', async () => {
    const first = await run("printf 'two\\n' >> notes.txt && printf 'new\\n' > added.txt && pwd")
    const workspace = first.flatMap((c) => (c.type === 'TEXT_MESSAGE_CONTENT' ? [c.delta] : [])).join('').trim()
    expect(workspace.startsWith(root), 'the command ran in a directory sandbox').toBe(true)
    expect(custom(first, 'sandbox.file').map((e) => [e.type, e.path]).sort()).toEqual([
      ['change', `${workspace}/notes.txt`],
      ['create', `${workspace}/added.txt`],
    ])
    const changed = custom(first, 'file.changed')
    expect(changed.map((e) => e.path).sort()).toEqual([`${workspace}/added.txt`, `${workspace}/notes.txt`])
    expect(changed.find((e) => e.path.endsWith('notes.txt'))?.diff).toContain('+two')
    const types = first.map((c) => (c.type === 'CUSTOM' ? c.name : c.type))
    expect(types.at(-1), 'file.changed comes before the public RUN_FINISHED').toBe('RUN_FINISHED')

    const second = await run('cat added.txt && pwd')
    expect(second.flatMap((c) => (c.type === 'TEXT_MESSAGE_CONTENT' ? [c.delta] : [])).join(''), 'resumed: same folder, same files').toBe(`new\n${workspace}\n`)
    expect(custom(second, 'file.changed'), 'a run that changed nothing reports nothing').toEqual([])

    expect(await sandbox.destroy({ key: sandbox.key({ threadId: 'thread-1', runId: '' }) })).toMatchObject({ destroyed: true })
  })
})
