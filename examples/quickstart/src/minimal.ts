/**
 * The quickstart in one screen (the code at the top of docs/quick-start.md;
 * keep the two identical). Claude Code runs in a local-process sandbox on a
 * one-file git repository; a local aimock plays the model and asks for one
 * Bash command. Run: `pnpm --filter @example/quickstart minimal`.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { LLMock } from '@copilotkit/aimock'
import { chat } from '@tanstack/ai'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { defineSandbox, defineWorkspace, withSandbox, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'

// 1. A scripted model: ask Claude Code to run one command, then say it is done.
const mock = new LLMock({ port: 0, host: '127.0.0.1' })
const command = "printf 'export const multiply = (a, b) => a * b\\n' >> math.js"
mock.on({ userMessage: 'multiply', hasToolResult: false }, { reasoning: 'One append is enough.', toolCalls: [{ id: 'toolu_1', name: 'Bash', arguments: JSON.stringify({ command }) }] })
mock.on({ toolCallId: 'toolu_1' }, { content: 'Added multiply to math.js.' })
const url = await mock.start()

// 2. A lazy sandbox: a git repository with one file, made when the run starts.
let handle: SandboxHandle | undefined
const sandbox = defineSandbox({
  id: 'quick-start',
  provider: localProcessSandbox(),
  workspace: defineWorkspace({
    setup: ['git init -q', "printf 'export const add = (a, b) => a + b\\n' > math.js", 'git add -A && git -c user.name=me -c user.email=me@example.com commit -qm init'],
  }),
  hooks: { onReady: (ready) => void (handle = ready) },
})

// 3. Claude Code as a chat() adapter: the CLI from node_modules, pointed at the mock.
const cli = join(dirname(createRequire(import.meta.url).resolve('@anthropic-ai/claude-code/package.json')), 'bin', 'claude.exe')
const home = await mkdtemp(join(tmpdir(), 'claude-home-'))
const adapter = claudeCodeText('claude-sonnet-4-5', {
  executable: cli,
  env: { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: 'offline', HOME: home, CLAUDE_CODE_TMPDIR: home, CLAUDE_CODE_MAX_RETRIES: '0' },
})

// 4. Run it, watch it, read the diff through the handle, clean up.
const threadId = 'quick-start'
try {
  for await (const chunk of chat({ adapter, threadId, messages: [{ role: 'user', content: 'Add multiply to math.js' }], middleware: [withSandbox(sandbox)] })) {
    if (chunk.type === 'TEXT_MESSAGE_CONTENT') process.stdout.write(chunk.delta)
    if (chunk.type === 'TOOL_CALL_START') console.log(`→ ${chunk.toolCallName}`)
    if (chunk.type === 'TOOL_CALL_RESULT') console.log(`← ${chunk.content.trim() || '(no output)'}`)
    if (chunk.type === 'RUN_ERROR') throw new Error(`${chunk.code}: ${chunk.message}`)
  }
  console.log(`\n\n${(await handle!.process.exec('git diff')).stdout}`)
} finally {
  await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  await mock.stop()
  await rm(home, { recursive: true, force: true })
}
