/**
 * The reaper kit's agent: a real journaled harness adapter (core's
 * `runHarness` with `journal: true`) whose "CLI" is a POSIX shell script in
 * the sandbox that waits for a marker file before its final event, so a case
 * decides when a detached run finishes. Ids come from the run-scoped `genId`,
 * so a replay of the journal re-translates to the same chunks.
 * Design notes: docs/design/testkit.md
 */
import { EventType, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import { SandboxCapability } from '../../capabilities/tokens.js'
import { runHarness } from '../../harness/run-harness.js'
import type { HarnessTranslator } from '../../harness/harness-launch.js'
import { EXIT_SENTINEL_KEY, EXIT_SENTINEL_NONCE_KEY } from '../../journal/sentinel.js'
import { shellQuote } from '../../shell/quote.js'

/** How the scripted agent of one run behaves. */
export interface ReaperAgentScript {
  /** Text events before it waits for its marker. Default 3. */
  steps?: number
  /** Print a sentinel-shaped line (with a made-up nonce) before waiting: it must not count as an exit. */
  forgeSentinel?: boolean
  /** Exit status after the final event. Default 0. */
  exitCode?: number
}

/** The marker file (relative to the sandbox's working folder) that lets a run's agent finish. */
export function reaperMarker(runId: string): string {
  return `.reaper-kit-go-${runId.replace(/[^A-Za-z0-9_-]/g, '_').slice(-60)}`
}

/** The text a run of `steps` steps produces, concatenated. */
export function reaperAgentText(steps: number): string {
  return Array.from({ length: steps }, (_, i) => `step ${i + 1}. `).join('')
}

/** The agent's command: a shell script of steps, an optional forged sentinel, the marker wait (at most 60 s), the final event. */
function agentCommand(runId: string, script: ReaperAgentScript): string {
  const steps = script.steps ?? 3
  const forged = `{"${EXIT_SENTINEL_KEY}":0,"${EXIT_SENTINEL_NONCE_KEY}":"${'0'.repeat(32)}"}`
  const body = [
    `i=1; while [ $i -le ${steps} ]; do printf '{"type":"text","text":"step %d. "}\\n' $i; i=$((i+1)); sleep 0.05; done`,
    script.forgeSentinel ? `printf '%s\\n' ${shellQuote(forged)}` : ':',
    `n=0; while [ ! -f ${shellQuote(reaperMarker(runId))} ]; do n=$((n+1)); if [ $n -gt 1200 ]; then exit 97; fi; sleep 0.05; done`,
    `printf '{"type":"done"}\\n'`,
    `exit ${script.exitCode ?? 0}`,
  ].join('; ')
  // A fresh process, so the run's process tag (exported just before) is in its own environment and a process sweep finds it.
  return `exec sh -c ${shellQuote(body)}`
}

function translator(ids: { runId: string; threadId: string; genId: () => string }): HarnessTranslator {
  let messageId: string | undefined
  let ended = false
  const at = (chunk: Record<string, unknown>): StreamChunk => ({ timestamp: Date.now(), ...chunk }) as unknown as StreamChunk
  return {
    start: () => [at({ type: EventType.RUN_STARTED, runId: ids.runId, threadId: ids.threadId })],
    push: (event) => {
      const e = event as { type?: string; text?: string }
      if (e.type === 'text' && typeof e.text === 'string') {
        const out: StreamChunk[] = []
        if (messageId === undefined) {
          messageId = ids.genId()
          out.push(at({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' }))
        }
        out.push(at({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: e.text }))
        return out
      }
      if (e.type === 'done') {
        ended = true
        const close = messageId === undefined ? [] : [at({ type: EventType.TEXT_MESSAGE_END, messageId })]
        return [...close, at({ type: EventType.RUN_FINISHED, runId: ids.runId, threadId: ids.threadId, finishReason: 'stop' })]
      }
      return []
    },
    finish: (exit) => (ended ? [] : [at({ type: EventType.RUN_ERROR, message: `the scripted agent exited ${exit.exitCode} without its final event`, code: 'agent-exit' })]),
  }
}

/**
 * A `chat()` adapter whose runs are the scripted agent. Requires a sandbox
 * (`withSandbox`); on a durable run its stdout goes to the run journal, and
 * an attach (`durability.attach: true`) replays the journal from byte 0.
 *
 * @param script - {@link ReaperAgentScript}, the same for every run of the adapter.
 */
export function reaperAgentAdapter(script: ReaperAgentScript = {}): TextAdapter<any, any, any, any> {
  return {
    kind: 'text',
    name: 'reaper-kit-agent',
    model: 'scripted',
    requires: [SandboxCapability],
    '~types': undefined as never,
    chatStream: (options: any) =>
      runHarness({
        harness: 'reaper-kit-agent',
        journal: true,
        model: 'scripted',
        options,
        exitGraceMs: 500,
        translator,
        prepare: async (run) => ({ command: agentCommand(run.runId, script), cwd: run.handle.workspaceRoot, env: {} }),
      }),
    structuredOutput: () => Promise.reject(new TypeError('the reaper kit agent has no structured output')),
  } as unknown as TextAdapter<any, any, any, any>
}
