/**
 * An app's runner module for `colocated` mode, as the `/runner` entry's
 * README has it: one `runInContainerHarness` call with the Claude Code
 * harness, the CLI running as a local process inside the container. The
 * CLI's options come from `CLAUDE_OPTIONS` (JSON), which the Coordinator
 * passes in the runner's environment. Bundled into one file and mounted
 * into the stand-in container.
 */
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { runInContainerHarness } from '@tanstack/ai-sandbox-cloudflare/runner'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'

const options = JSON.parse(process.env.CLAUDE_OPTIONS ?? '{}') as ClaudeCodeOptions
// The CLI runs as root in the container, which is the isolation here: tell it so (it refuses bypassPermissions as root otherwise).
const env = { ...options.env, IS_SANDBOX: '1' }
const result = await runInContainerHarness({ adapter: () => claudeCodeText('sonnet', { ...options, env }), provider: localProcessSandbox() })
process.exitCode = result.status === 'completed' ? 0 : 1
