/**
 * The offline model: aimock on 127.0.0.1 answering Claude Code's Messages API
 * requests from a scripted fixture. The template (`fixtures/demo.json`) names
 * files as `{{workspace}}/…` because Claude Code's file tools need absolute
 * paths and the sandbox's workspace root is only known once it exists;
 * `useWorkspace(root)` loads the script with the root filled in.
 * Invariant: the mock listens on loopback unless told otherwise (a Docker
 * sandbox needs the bridge's address), and `stop()` is idempotent.
 */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { LLMock, type FixtureFileEntry } from '@copilotkit/aimock'

/** The checked-in script: Read, Edit, Read, Write, Bash, then a closing message. */
export const DEMO_FIXTURE_PATH = fileURLToPath(new URL('../fixtures/demo.json', import.meta.url))

/** The task the script answers (its first fixture matches on the word `multiply`). */
export const OFFLINE_TASK = 'Add a multiply(a, b) function to math.js and a test for it in math.test.js, then run the tests.'

/** Paced like a fast model so the text visibly streams: first chunk after `ttft` ms, then `tps` chunks per second. */
export const OFFLINE_STREAMING = { ttft: 150, tps: 400 } as const

/** A running offline model. */
export interface OfflineModel {
  /** Base URL for `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  /** The port, for a URL with the name a sandbox uses for this host (`http://host.docker.internal:<port>`). */
  readonly port: number
  /** Load the script with `{{workspace}}` replaced by the sandbox's workspace root (replaces any earlier script). */
  useWorkspace: (workspaceRoot: string) => Promise<void>
  /** How many model requests were answered so far. */
  requestCount: () => number
  /** Stop the server (safe to call twice). */
  stop: () => Promise<void>
}

/**
 * Start aimock on a free port. Unmatched requests get a 503 (strict
 * mode), which Claude Code reports as `api_error_503`.
 *
 * @param fixturePath - The fixture template. Default {@link DEMO_FIXTURE_PATH}.
 * @param options - `host`: the address to listen on. Default `127.0.0.1`.
 * @returns The running {@link OfflineModel}; call `useWorkspace` before the agent's first request.
 * @example
 * ```ts
 * const model = await startOfflineModel()
 * await model.useWorkspace('/tmp/sandbox/workspace')
 * // … run Claude Code with ANTHROPIC_BASE_URL=model.url …
 * await model.stop()
 * ```
 */
export async function startOfflineModel(fixturePath: string = DEMO_FIXTURE_PATH, options: { host?: string } = {}): Promise<OfflineModel> {
  const template = await readFile(fixturePath, 'utf8')
  const mock = new LLMock({ port: 0, host: options.host ?? '127.0.0.1', strict: true })
  const url = await mock.start()
  let stopped: Promise<void> | undefined
  return {
    url,
    port: Number(new URL(url).port),
    async useWorkspace(workspaceRoot) {
      mock.clearFixtures()
      mock.resetMatchCounts()
      mock.addFixturesFromJSON(scriptFor(template, workspaceRoot))
    },
    requestCount: () => mock.getRequests().length,
    stop: () => (stopped ??= mock.stop()),
  }
}

/**
 * Fill the template's `{{workspace}}` placeholders with `workspaceRoot` and add the streaming pace.
 * @returns The fixture entries, ready for `addFixturesFromJSON`.
 */
export function scriptFor(template: string, workspaceRoot: string): FixtureFileEntry[] {
  const escaped = JSON.stringify(workspaceRoot).slice(1, -1) // safe inside a JSON string literal
  const file = JSON.parse(template.replaceAll('{{workspace}}', escaped)) as { fixtures: FixtureFileEntry[] }
  return file.fixtures.map((entry) => ({ streamingProfile: { ...OFFLINE_STREAMING }, ...entry }))
}
