/**
 * A chat() abort while the agent's Bash tool runs `( setsid sleep 300.N & ) ;
 * sleep 301.N` (issue 16): the tool's setsid child is in a new session and its
 * parent has already exited, so no walk of the CLI's process tree finds it.
 * The claude-code adapter drives a fake CLI (written by this file into a temp
 * folder) that announces the Bash tool call and then runs the command in a
 * child shell, as Claude Code's Bash tool does; the request is aborted once
 * the setsid child runs. When the chat() stream has ended, no process with
 * the unique `300.N` / `301.N` argument, nor any process of the run (its
 * LIFECYCLE_TAG), may be left (the provider's kill of the CLI's job reaches
 * the child by its inherited TANSTACK_SANDBOX_JOB marker): on local-process (the host) and in Docker containers (Debian, BusyBox;
 * the host sees their processes).
 */
import { randomInt, randomUUID } from 'node:crypto'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { defineSandbox, type SandboxDefinition, type SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { CLAUDE, killLeftovers, newTag, processesOf, runBounded, typesOf, waitFor } from './helpers/harnesses.js'

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `lifecycle-abort-tool-${randomUUID().slice(0, 8)}` }
/** Runs per provider: a few, not a benchmark (testing/bench counts 100). */
const RUNS = 3
/** Where the fake CLI's folder appears inside containers. */
const BIN = '/opt/abort-tool-bin'

/**
 * A stand-in `claude -p --output-format stream-json`: the init event, a Bash
 * tool_use of `$FAKE_TOOL_COMMAND`, then the tool run in a child shell (as
 * Claude Code's Bash tool runs it), then the tool result and the result line.
 * POSIX sh: runs on dash and BusyBox sh.
 */
const FAKE_CLAUDE_TOOL = `#!/bin/sh
sid=0b72c278-b7a8-4dc9-b813-0ef996c0b8a5
printf '{"type":"system","subtype":"init","cwd":"%s","session_id":"%s","tools":["Bash"],"mcp_servers":[],"model":"claude-sonnet-5-5","permissionMode":"default","claude_code_version":"2.1.332"}\\n' "$PWD" "$sid"
printf '{"type":"assistant","message":{"id":"msg_fake_tool","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[{"type":"tool_use","id":"toolu_fake_abort_1","name":"Bash","input":{"command":"%s","description":"Start it"}}],"stop_reason":null},"parent_tool_use_id":null,"session_id":"%s"}\\n' "$FAKE_TOOL_COMMAND" "$sid"
sh -c "$FAKE_TOOL_COMMAND" </dev/null >/dev/null 2>&1
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":12,"num_turns":1,"result":"done","stop_reason":"end_turn","session_id":"%s","total_cost_usd":0.0001,"usage":{"input_tokens":21,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":17}}\\n' "$sid"
`

const bin = mkdtempSync(join(tmpdir(), 'lifecycle-abort-tool-bin-'))
writeFileSync(join(bin, 'fake-claude-tool'), FAKE_CLAUDE_TOOL)
chmodSync(join(bin, 'fake-claude-tool'), 0o755)
// mkdtemp makes the folder owner-only; the container's user must enter it.
chmodSync(bin, 0o755)
const root = mkdtempSync(join(tmpdir(), 'lifecycle-abort-tool-'))
const dockerReason = await dockerMissing([DEBIAN, BUSYBOX])
const user = (content: string): ModelMessage => ({ role: 'user', content })

/** Live processes on this machine (containers included) with `arg` as one of their arguments. */
function processesWithArg(arg: string): number[] {
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').split('\0').includes(arg)) pids.push(Number(name))
    } catch {
      // exited meanwhile
    }
  }
  return pids
}

/** SIGKILL `pids` (what a failed case left), returning them for the report. */
function killAll(pids: number[]): number[] {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  return pids
}

const sandboxes: { sandbox: SandboxDefinition; threadId: string }[] = []
afterEach(async () => {
  for (const { sandbox, threadId } of sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
})
afterAll(() => {
  const leftDirs = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  rmSync(bin, { recursive: true, force: true })
  expect(leftDirs, 'every local sandbox directory is removed').toEqual([])
  expect(killLeftovers(), 'no CLI process, nor any child of one, is left').toEqual([])
})

/**
 * Abort `RUNS` chat() runs while the tool's setsid child runs; returns the survivors of each run
 * (killed after counting, so a failure leaks nothing).
 */
async function abortDuringTool(provider: SandboxProvider, executable: string, id: string): Promise<number[][]> {
  // One sandbox kept for the thread: only the run loop's abort, never a destroy, stops the tool.
  const entry = { sandbox: defineSandbox({ id, provider, lifecycle: { snapshot: 'none' } }), threadId: `t-${id}` }
  sandboxes.push(entry)
  const survivors: number[][] = []
  for (let i = 0; i < RUNS; i++) {
    const n = randomInt(1e9)
    const { tag, env } = newTag()
    const adapter = CLAUDE.adapter({ executable, env: { ...env, FAKE_TOOL_COMMAND: `( setsid sleep 300.${n} </dev/null >/dev/null 2>&1 & ) ; sleep 301.${n}` } })
    const abortController = new AbortController()
    let seenBeforeAbort = false
    let watching = false
    const out = await runBounded(CLAUDE, {
      adapter,
      sandbox: entry.sandbox,
      threadId: entry.threadId,
      messages: [user('Start it')],
      abortController,
      onChunk: (chunk) => {
        if (chunk.type !== 'TOOL_CALL_START' || watching) return
        watching = true
        // Abort once the tool's setsid child runs (its parent subshell has exited by then).
        void waitFor(() => processesWithArg(`300.${n}`).length > 0 && processesWithArg(`301.${n}`).length > 0, 10_000).then((seen) => {
          seenBeforeAbort = seen
          abortController.abort()
        })
      },
    })
    expect(seenBeforeAbort, `the Bash tool's setsid child ran when the request was aborted (${typesOf(out.chunks).join(' ')}: ${out.error?.message})`).toBe(true)
    expect(typesOf(out.chunks)).not.toContain('RUN_FINISHED')
    survivors.push(killAll([...processesWithArg(`300.${n}`), ...processesWithArg(`301.${n}`), ...processesOf(tag)]))
  }
  return survivors
}

describe('a chat() abort during a Bash tool call on local-process', () => {
  it(`leaves no process of ( setsid sleep & ) ; sleep, ${RUNS} runs`, async () => {
    const survivors = await abortDuringTool(localProcessSandbox({ root }), join(bin, 'fake-claude-tool'), 'lat-abort-tool')
    expect(survivors, 'survivors of each aborted run').toEqual(Array.from({ length: RUNS }, () => []))
  })
})

describeWithDocker('a chat() abort during a Bash tool call in Docker', dockerReason, () => {
  const mounts = [{ source: bin, target: BIN, readOnly: true }]

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  it.each([
    ['Debian', DEBIAN],
    ['BusyBox', BUSYBOX],
  ] as const)(`%s: leaves no process of ( setsid sleep & ) ; sleep, ${RUNS} runs`, async (name, image) => {
    const provider = dockerSandbox({ image, labels: RUN, killGraceMs: 500, mounts })
    const survivors = await abortDuringTool(provider, `${BIN}/fake-claude-tool`, `lat-abort-tool-${name.toLowerCase()}`)
    expect(survivors, 'survivors of each aborted run').toEqual(Array.from({ length: RUNS }, () => []))
  })
})
