/**
 * Record ACP transcripts of the fake Grok Build agent, driven by the real
 * adapter in a local-process sandbox, into
 * `packages/ai-grok-build/tests/fixtures/grok-build/<fake version>/<scenario>.ndjson`
 * (one `{ from, message }` per line, both directions in wire order). Host
 * paths become `/workspace` and `/home/grok`, and the tool bridge's token and
 * port are masked, so recordings are stable and hold no secret. A new fake
 * version records into a new folder; old folders are never edited.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chat, type ModelMessage } from '@tanstack/ai'
import { GROK_BUILD_SESSION_EVENT, grokBuildText, type GrokAcpTranscriptEntry, type GrokBuildOptions } from '@tanstack/ai-grok-build'
import { defineSandbox, defineSandboxPolicy, withSandbox, type SandboxPolicyInput } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { ensureFakeAgent } from './build-fake.js'
import { FAKE_GROK_VERSION } from './fake-agent/version.js'
import { makeGrokHome } from './grok-home.js'

const out = fileURLToPath(new URL(`../../../packages/ai-grok-build/tests/fixtures/grok-build/${FAKE_GROK_VERSION}/`, import.meta.url))

interface Scenario {
  name: string
  prompt: string
  policy?: SandboxPolicyInput
  apiKey?: boolean
  tools?: boolean
  /** Record a first turn under this name, then this scenario resumes its session. */
  resumeFrom?: { name: string; prompt: string }
  /** Resume this session id, one the agent's HOME does not have. */
  resumeId?: string
}

const scenarios: Scenario[] = [
  { name: 'text', prompt: 'Say hello' },
  { name: 'reasoning', prompt: 'Think first, then answer: A or B?' },
  { name: 'tools', prompt: 'Create notes.txt, then show it.', policy: { commands: { deny: ['cat *'] } } },
  { name: 'tools-auto-approved', prompt: 'Create notes.txt, then show it.' },
  { name: 'resume', prompt: 'What did I ask first?', resumeFrom: { name: 'resume-first-turn', prompt: 'Remember the word pelican.' } },
  { name: 'api-error', prompt: 'Trigger a server error' },
  { name: 'auth-required', prompt: 'Say hello', apiKey: false },
  { name: 'host-tool', prompt: 'Use the host tool get_weather', tools: true },
  { name: 'resume-unknown', prompt: 'What did I ask first?', resumeId: 'ses_gone' },
]

const weather = { name: 'get_weather', description: 'Weather for a city', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, execute: async ({ city }: { city: string }) => `Sunny in ${city}` }

/** Record every scenario (or only those named); returns the files written. */
export async function recordAll(names: readonly string[] = []): Promise<string[]> {
  const unknown = names.filter((name) => !scenarios.some((s) => s.name === name))
  if (unknown.length > 0) throw new Error(`Unknown scenario ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}`)
  const fake = await ensureFakeAgent()
  const root = mkdtempSync(join(tmpdir(), 'grok-record-'))
  mkdirSync(out, { recursive: true })
  const written: string[] = []
  try {
    for (const scenario of scenarios.filter((s) => names.length === 0 || names.includes(s.name))) {
      const home = makeGrokHome(fake, 'grok-record-home')
      const sandbox = defineSandbox({ id: `record-${scenario.name}`, provider: localProcessSandbox({ root }), policy: defineSandboxPolicy(scenario.policy ?? {}) })
      try {
        const turn = async (name: string, prompt: string, sessionId?: string) => {
          const entries: GrokAcpTranscriptEntry[] = []
          const options: GrokBuildOptions = { env: home.env({ apiKey: scenario.apiKey !== false }), onAcpMessage: (entry) => entries.push(structuredClone(entry)) }
          let session: string | undefined
          let workspace = ''
          const messages: ModelMessage[] = [{ role: 'user', content: prompt }]
          const stream = chat({
            adapter: grokBuildText('grok-4.5', options),
            threadId: `record-${scenario.name}`,
            messages,
            middleware: [withSandbox(sandbox)],
            ...(sessionId ? { modelOptions: { sessionId } } : {}),
            ...(scenario.tools ? { tools: [weather] } : {}),
          } as never) as AsyncIterable<{ type: string; name?: string; value?: { sessionId?: string } }>
          for await (const chunk of stream) if (chunk.type === 'CUSTOM' && chunk.name === GROK_BUILD_SESSION_EVENT) session = chunk.value?.sessionId
          const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: `record-${scenario.name}`, runId: '' }))
          if (record) workspace = join(root, record.providerSandboxId, 'workspace')
          const file = join(out, `${name}.ndjson`)
          writeFileSync(file, entries.map((e) => sanitize(JSON.stringify(e), workspace, home.dir)).join('\n') + '\n')
          written.push(file)
          return session
        }
        const first = scenario.resumeFrom ? await turn(scenario.resumeFrom.name, scenario.resumeFrom.prompt) : undefined
        await turn(scenario.name, scenario.prompt, first ?? scenario.resumeId)
      } finally {
        await sandbox.destroy({ key: sandbox.key({ threadId: `record-${scenario.name}`, runId: '' }) })
        home.cleanup()
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
  return written
}

/** Stable, secret-free text: host paths replaced, the bridge's bearer token and port masked. */
function sanitize(line: string, workspace: string, home: string): string {
  let text = workspace ? line.split(workspace).join('/workspace') : line
  text = text.split(home).join('/home/grok')
  text = text.replace(/Bearer [A-Za-z0-9_-]+/g, 'Bearer [token]').replace(/http:\/\/127\.0\.0\.1:\d+\/mcp/g, 'http://127.0.0.1:0/mcp')
  return text
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const file of await recordAll(process.argv.slice(2))) console.log(`recorded ${file}`)
}
