/**
 * The events `runDemo` reports while it works, for whoever watches: the
 * terminal (`terminal.ts`), the bench (nothing), a test. Every member is
 * optional and `at` is milliseconds since `runDemo` started. A reporter only
 * observes; it must not throw or change the run.
 */

/** What the run is about to do, reported once before anything starts. */
export interface DemoIntro {
  readonly mode: 'offline' | 'live'
  /** The aimock URL in offline mode. */
  readonly modelUrl?: string
  readonly model: string
  readonly repo: string
  readonly provider: string
  /** What the provider runs, e.g. the Docker image. */
  readonly providerDetail?: string
  readonly task: string
}

/** Observer of one demo run. */
export interface DemoReporter {
  /** The run's temp directory exists (sample repository, sandboxes, Claude Code's HOME); cleanup removes it. */
  tempCreated?: (at: number, path: string) => void
  intro?: (info: DemoIntro) => void
  /** The sandbox is being created, its repository cloned and its setup steps run. */
  sandboxCreating?: (at: number, info: { provider: string; source: string; setup: readonly string[] }) => void
  /** The `onReady` hook fired. */
  sandboxReady?: (at: number, info: { id: string; workspaceRoot: string }) => void
  /** The `claude-code.session-id` event. */
  session?: (at: number, sessionId: string) => void
  /** A streamed piece of the model's reasoning. */
  reasoning?: (at: number, delta: string) => void
  /** A streamed piece of the assistant's text. */
  text?: (at: number, delta: string) => void
  /** A text or reasoning message ended. */
  messageEnd?: (at: number) => void
  /** A tool call's arguments are complete (Claude Code runs the tool itself). */
  toolCall?: (at: number, call: { id: string; name: string; input: unknown }) => void
  /** The tool's result as Claude Code fed it back to the model. */
  toolResult?: (at: number, result: { id: string; name: string; content: string }) => void
  /** Cleanup started (sandbox destroy, mock stop, temp dirs), after success or failure. */
  cleanup?: (at: number) => void
}
