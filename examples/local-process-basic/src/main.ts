/**
 * Run with `pnpm demo` (or `pnpm --filter @example/local-process-basic start`).
 * Two chat() runs on one thread share a local-process sandbox: the first
 * writes a file, the second reads it back. Then the sandbox is destroyed.
 */
import { chat } from '@tanstack/ai'
import { defineSandbox, defineWorkspace, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { shellText } from './shell-adapter.js'

const sandbox = defineSandbox({
  id: 'local-demo',
  provider: localProcessSandbox(),
  workspace: defineWorkspace({ setup: ['git init -q', 'echo "# demo" > README.md'] }),
  lifecycle: { reuse: 'thread' },
})

async function run(threadId: string, command: string): Promise<string> {
  let text = ''
  for await (const chunk of chat({
    adapter: shellText(),
    threadId,
    messages: [{ role: 'user', content: command }],
    middleware: [withSandbox(sandbox)],
  })) {
    if (chunk.type === 'TEXT_MESSAGE_CONTENT') text += chunk.delta
    if (chunk.type === 'RUN_ERROR') throw new Error(chunk.message)
  }
  return text
}

const threadId = `demo-${process.pid}`
console.log('run 1 >', (await run(threadId, 'echo "hello from $(pwd)" && echo hi > note.txt && ls')).trim())
console.log('run 2 >', (await run(threadId, 'cat note.txt && git status --short')).trim())
await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
console.log('sandbox destroyed')
