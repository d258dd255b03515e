/**
 * The four harness adapters as the lifecycle suite drives them: each bound to
 * a fake CLI (a POSIX sh script in `tests/fixtures/bin`, or the fake ACP agent
 * of testing/grok-build-e2e), a scenario picked through the CLI's environment,
 * and a tag (`LIFECYCLE_TAG=<uuid>` in that environment) by which every
 * process of one run, and every child it started, is found from the host, on
 * local-process and inside containers alike. It runs no CLI itself.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { StreamChunk } from '@tanstack/ai'
import { CLAUDE_CODE_SESSION_EVENT, claudeCodeText } from '@tanstack/ai-claude-code'
import { CODEX_SESSION_EVENT, codexText } from '@tanstack/ai-codex'
import { GROK_BUILD_SESSION_EVENT, grokBuildText } from '@tanstack/ai-grok-build'
import { OPENCODE_SESSION_EVENT, opencodeText } from '@tanstack/ai-opencode'
import { processesWithEnv, runHarness, type HarnessRunInput, type Outcome } from '@testing/support/harness-run'

export { custom, ofType, waitFor, type Outcome } from '@testing/support/harness-run'

/** The folder of the fake NDJSON CLIs on the host. */
export const FAKE_BIN = fileURLToPath(new URL('../fixtures/bin/', import.meta.url))

export type HarnessName = 'claude-code' | 'codex' | 'opencode' | 'grok-build'
/** The scenarios the fake NDJSON CLIs play (see each script). */
export type Scenario = 'plain' | 'final-then-linger' | 'background-holds-stdout' | 'stderr-only' | 'open-tool' | 'banner' | 'bridge-failed' | 'hang' | 'background-no-final' | 'escapes'

/** How one run's adapter is made. */
export interface AdapterInput {
  /** Absolute path of the fake CLI, as the sandbox sees it. */
  executable: string
  /** The CLI's environment (scenario, tag, …). */
  env: Record<string, string>
  exitGraceMs?: number
  timeoutMs?: number
}

/** One harness under test. */
export interface Harness {
  readonly name: HarnessName
  /** The CUSTOM event carrying the CLI session id. */
  readonly sessionEvent: string
  /** The fake CLI's file name in `tests/fixtures/bin` (NDJSON CLIs only). */
  readonly fake?: string
  /** A session id of the form the adapter accepts for a resume. */
  readonly sessionId: string
  readonly adapter: (input: AdapterInput) => unknown
}

export const CLAUDE: Harness = {
  name: 'claude-code',
  sessionEvent: CLAUDE_CODE_SESSION_EVENT,
  fake: 'fake-claude',
  sessionId: '6a0f5c3e-1b2d-4e5f-8a9b-0c1d2e3f4a5b',
  adapter: (input) => claudeCodeText('sonnet', input),
}
export const CODEX: Harness = {
  name: 'codex',
  sessionEvent: CODEX_SESSION_EVENT,
  fake: 'fake-codex',
  sessionId: 'e4482726-f573-4934-8e3a-01ca9f094759',
  adapter: (input) => codexText('gpt-5.5', input),
}
export const OPENCODE: Harness = {
  name: 'opencode',
  sessionEvent: OPENCODE_SESSION_EVENT,
  fake: 'fake-opencode',
  sessionId: 'ses_0123456789abcdefGoneGone',
  adapter: (input) => opencodeText('fake/model-1', input),
}
export const GROK: Harness = {
  name: 'grok-build',
  sessionEvent: GROK_BUILD_SESSION_EVENT,
  sessionId: 'ses_00000000-0000-4000-8000-000000000000',
  adapter: (input) => grokBuildText('grok-4.5', input),
}

/** The three CLIs that print NDJSON on stdout. */
export const NDJSON_HARNESSES = [CLAUDE, CODEX, OPENCODE] as const
export const ALL_HARNESSES = [CLAUDE, CODEX, OPENCODE, GROK] as const

/** Tags handed out in this file, for the leftover check. */
const tags: string[] = []

/** A fresh tag, and the environment entry that carries it. */
export function newTag(): { tag: string; env: Record<string, string> } {
  const tag = randomUUID()
  tags.push(tag)
  return { tag, env: { LIFECYCLE_TAG: tag } }
}

/** Live processes (CLI and children) of the run that got `tag`. */
export const processesOf = (tag: string): number[] => processesWithEnv(`LIFECYCLE_TAG=${tag}`)

/**
 * Every process still carrying a tag of this file; each is SIGKILLed so a
 * failure leaks nothing, and returned so the caller can report it.
 */
export function killLeftovers(): number[] {
  const left = tags.flatMap(processesOf)
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  return left
}

/** A hang guard, not a timing claim: far above anything a fake CLI run needs. */
export const HANG_BOUND_MS = 30_000

/**
 * One chat() run that cannot hang the suite: after `boundMs` the request is
 * aborted and the run fails, saying that the stream never ended.
 * @throws Error when the stream was still open after `boundMs`.
 */
export async function runBounded(harness: Harness, input: Omit<HarnessRunInput<unknown>, 'abortController'> & { abortController?: AbortController; boundMs?: number }): Promise<Outcome> {
  const controller = input.abortController ?? new AbortController()
  const boundMs = input.boundMs ?? HANG_BOUND_MS
  let hung = false
  const timer = setTimeout(() => {
    hung = true
    controller.abort()
  }, boundMs)
  try {
    const out = await runHarness({ ...input, abortController: controller, sessionEvent: harness.sessionEvent })
    if (hung) throw new Error(`${harness.name}: the chat() stream was still open ${boundMs} ms after the run started, so the test aborted it (hang guard). Chunks seen: ${out.chunks.map((c) => c.type).join(', ')}`)
    return out
  } finally {
    clearTimeout(timer)
  }
}

/** The chunk types of a run, in order. */
export const typesOf = (chunks: StreamChunk[]): string[] => chunks.map((c) => c.type)
