/**
 * Turns the root README's example into a program that runs offline. The
 * README's block defines the sandbox and calls `chat({ adapter, threadId,
 * messages, middleware: [withSandbox(sandbox)] })`; this module supplies what
 * the block leaves to the reader (a Claude Code adapter pointed at a local
 * aimock that asks for one Write, a thread id and the messages) before it,
 * and after it reads the stream, prints one line of JSON with what came back,
 * and destroys the sandbox. The README block itself is used as it is.
 */

/** The marker in front of the program's closing JSON line. */
export const RESULT_MARKER = 'README-EXAMPLE-RESULT '

/** What the program prints after {@link RESULT_MARKER}. */
export interface ReadmeRunResult {
  /** Chunk type → how many arrived. */
  readonly types: Record<string, number>
  /** Names of the `CUSTOM` chunks, in order. */
  readonly custom: string[]
  /** `value.path` of every `sandbox.file` chunk. */
  readonly filePaths: string[]
}

const PRELUDE = `// Supplied around the root README's example by testing/install: an offline adapter, a thread, messages.
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { LLMock } from '@copilotkit/aimock'
import { claudeCodeText } from '@tanstack/ai-claude-code'

const mock = new LLMock({ port: 0, host: '127.0.0.1' })
mock.on({ userMessage: 'notes', hasToolResult: false }, { toolCalls: [{ id: 'toolu_1', name: 'Write', arguments: JSON.stringify({ file_path: 'notes.txt', content: 'buy milk\\n' }) }] })
mock.on({ toolCallId: 'toolu_1' }, { content: 'Wrote notes.txt.' })
const url = await mock.start()
const cli = join(dirname(createRequire(import.meta.url).resolve('@anthropic-ai/claude-code/package.json')), 'bin', 'claude.exe')
const home = await mkdtemp(join(tmpdir(), 'claude-home-'))
const adapter = claudeCodeText('claude-sonnet-4-5', {
  executable: cli,
  env: {
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'offline',
    HOME: home,
    CLAUDE_CODE_TMPDIR: home,
    CLAUDE_CODE_MAX_RETRIES: '0',
    // As root Claude Code skips permissions only when told it is isolated; this throwaway workspace opts in.
    ...(process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}),
  },
})
const threadId = 'install-check'
const messages = [{ role: 'user' as const, content: 'Put "buy milk" in notes.txt' }]

// ---- the root README's example, unchanged ----
`

const EPILOGUE = `// ---- end of the README's example ----

const types: Record<string, number> = {}
const custom: string[] = []
const filePaths: string[] = []
try {
  for await (const chunk of stream) {
    types[chunk.type] = (types[chunk.type] ?? 0) + 1
    if (chunk.type === 'RUN_ERROR') throw new Error(\`\${chunk.code}: \${chunk.message}\`)
    if (chunk.type !== 'CUSTOM') continue
    custom.push(chunk.name)
    if (chunk.name === 'sandbox.file') filePaths.push(String((chunk.value as { path?: unknown }).path))
  }
  console.log(${JSON.stringify(RESULT_MARKER)} + JSON.stringify({ types, custom, filePaths }))
} finally {
  await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  await mock.stop()
  await rm(home, { recursive: true, force: true })
}
`

/**
 * The whole program: prelude, the README block, epilogue.
 * @param readmeBlock - The code of the root README's first ```ts block.
 */
export function readmeProgram(readmeBlock: string): string {
  return `${PRELUDE}${readmeBlock.trimEnd()}\n\n${EPILOGUE}`
}

/**
 * Find and parse the program's closing line.
 * @returns The result, or `undefined` when the program printed none.
 */
export function parseReadmeResult(stdout: string): ReadmeRunResult | undefined {
  const line = stdout.split('\n').find((candidate) => candidate.startsWith(RESULT_MARKER))
  return line ? (JSON.parse(line.slice(RESULT_MARKER.length)) as ReadmeRunResult) : undefined
}
