/**
 * What an adapter hands `runHarness` and gets back: its options, the launch
 * `prepare` returns (a command, or an ACP-style event source), the translator
 * the loop feeds, how a CLI ended, and the loop's timing constants.
 * Types and constants only. Source: docs/harnesses.md "Run lifecycle".
 */
import type { ModelMessage, StreamChunk, TextOptions } from '@tanstack/ai'
import type { SandboxHandle } from '../contracts/handle.js'
import type { GuardHarnessRunOptions, HarnessRunContext } from './guard-harness-run.js'
import type { RunToolBridge } from './open-run-tool-bridge.js'

/** How long a CLI may take to exit by itself after its final event before its process tree is stopped, in ms. */
export const DEFAULT_EXIT_GRACE_MS = 3000

/**
 * How long a final event (one the translator turns into `RUN_FINISHED` or
 * `RUN_ERROR`) is held before it ends the stream while the CLI neither exits
 * nor prints another event, in ms (capped at `exitGraceMs`). A CLI that exits
 * ends the hold at once. An event printed during the hold means the held one
 * was not the CLI's last word (a script in the sandbox can write lines into
 * the CLI's stdout): the hold goes on and a later final event replaces it.
 */
export const FINAL_EVENT_HOLD_MS = 250

/**
 * `CUSTOM` event of a harness run whose event stream looks tampered with:
 * `value` is `{ kind, message, ... }`, `kind` one of `events-after-final`
 * (the CLI printed more events after a final event, which therefore did not
 * end the run), `usage-decreased` (a later final event reports fewer tokens
 * than an earlier one: running totals never go down) and
 * `duplicate-tool-result` (a second result for one tool call, dropped). Also
 * logged as a warning. Source: docs/harnesses.md "What the stream can be trusted with".
 */
export const HARNESS_INTEGRITY_EVENT = 'harness.integrity'

/** How the CLI of a run ended. */
export interface HarnessExit {
  /** Exit code; 128+N when the process died of signal N. */
  readonly exitCode: number
  /** The signal name when the process was killed by one. */
  readonly signal?: string
  /** The end of its stderr (64 KiB at most). */
  readonly stderrTail: string
}

/** A CLI's event translator as the loop drives it: pure, fed in order. */
export interface HarnessTranslator {
  /** The run's opening chunks (`RUN_STARTED`). */
  start: () => readonly StreamChunk[]
  /** The chunks for one CLI event (a parsed NDJSON line, an ACP message). */
  push: (event: unknown) => readonly StreamChunk[]
  /** The closing chunks when the CLI exited before a terminal chunk; empty once one was emitted. */
  finish: (exit: HarnessExit) => readonly StreamChunk[]
}

/** A CLI that is not an NDJSON writer (ACP over stdio): the adapter drives it and hands the loop its events. */
export interface HarnessEventSource {
  /** The CLI's events in order. Ends once the CLI exited, or was stopped because `signal` aborted. */
  readonly events: AsyncIterable<unknown>
  /** How the CLI ended; read once `events` ended. */
  readonly exit: () => HarnessExit | undefined
}

/** What an adapter's `prepare` returns: the CLI to start, or a `RUN_ERROR` to end the run with. */
export type HarnessLaunch =
  | {
      /** POSIX shell command (for `source` runs, what the logs show). */
      readonly command: string
      /** Absolute working directory inside the sandbox. */
      readonly cwd: string
      readonly env: Record<string, string>
      /** Text for the CLI's stdin (only on providers with `writableStdin`). */
      readonly stdin?: string
      /** The run's tool bridge; the loop merges its chunks and closes it. */
      readonly bridge?: RunToolBridge
      /**
       * When the CLI reaches its MCP servers: `'at-start'` (default; Claude
       * Code, Codex, OpenCode list the tools when they start), so a run that
       * finished without the bridge ever contacted is reported as
       * `tool-bridge.unavailable`; or `'on-call'`, when only a tool call
       * contacts it, so silence proves nothing and is not reported.
       */
      readonly bridgeContact?: 'at-start' | 'on-call'
      /** Drive the CLI yourself instead of reading NDJSON from its stdout. Aborting `signal` must stop it; start it with `env` (the launch's, plus the run's process tag). */
      readonly source?: (signal: AbortSignal, env: Record<string, string>) => HarnessEventSource
      /** Look at each raw event before it is translated; a chunk returned ends the run with it and stops the CLI at once. */
      readonly inspect?: (event: unknown) => StreamChunk | undefined
      /** Runs after the CLI settled or was stopped (remove run files). Errors are logged. */
      readonly cleanup?: () => Promise<void>
    }
  | { readonly end: StreamChunk }

/** What `prepare` gets. */
export interface HarnessPrepareContext extends HarnessRunContext {
  readonly handle: SandboxHandle
  /** The prompt text for the CLI (the latest user turn, or the transcript when starting fresh). */
  readonly prompt: string
  /** `modelOptions.sessionId` when the run resumes a CLI session (already validated). */
  readonly sessionId?: string
  /** Aborts with the request or the timeout: stop preparing. */
  readonly signal: AbortSignal
}

/** Options of {@link runHarness}. */
export interface RunHarnessOptions extends Omit<GuardHarnessRunOptions, 'run' | 'options'> {
  /** `chatStream`'s options. */
  options: TextOptions
  /** The model id, for the request log. */
  model: string
  /** The translator for this run. */
  translator: (ids: { runId: string; threadId: string; genId: () => string; sessionId?: string }) => HarnessTranslator
  /** Accepts a `modelOptions.sessionId`; a refused one ends the run with `RUN_ERROR` `invalid_session_id` and this message. */
  sessionId?: { pattern: RegExp; refused: (sessionId: string) => string }
  /** When a resumed run's CLI printed nothing, read its stderr: a message when it says the session does not exist (the run ends with `RUN_ERROR` `session_not_found`). */
  sessionGone?: (stderrTail: string) => string | undefined
  /** The prompt; default `buildHarnessPrompt(messages, resumed)`. An empty one ends the run with `RUN_ERROR` `no_prompt`. */
  prompt?: (messages: ModelMessage[], resumed: boolean) => string
  /** Write the CLI's files and build its command. */
  prepare: (context: HarnessPrepareContext) => Promise<HarnessLaunch>
  /** Stop the run after this many ms with `RUN_ERROR` `timeout`. Default: no limit. */
  timeoutMs?: number
  /** See {@link DEFAULT_EXIT_GRACE_MS}. */
  exitGraceMs?: number
  /** Longest stdout line accepted, in bytes. Default `DEFAULT_MAX_LINE_BYTES` (spawnNdjson's). */
  maxLineBytes?: number
  /**
   * The adapter's CLI writes NDJSON to stdout and can run journaled: on a
   * durable run (`getSandboxDurability` set by `withSandbox`) its stdout goes
   * to the run journal, and an attaching run tails that journal instead of
   * starting the CLI. Adapters that cannot (an ACP conversation) leave it
   * unset: their durable runs work as before, and an attach throws
   * `DurableAttachNotSupportedError`. Default `false`.
   */
  journal?: boolean
}
