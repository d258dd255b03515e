/**
 * The command builder: argv for a headless streaming run, the prompt never in
 * argv, and a prompt-file redirect that a real POSIX shell runs as intended
 * (quoting checked by executing the built command with `/bin/sh`).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { buildClaudeArgs, buildClaudeCommand } from '../src/index.js'

const BASE = ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--model', 'sonnet']
const dir = mkdtempSync(join(tmpdir(), 'claude-command-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * Run a built command in /bin/sh with `fake_claude` defined as a shell
 * function that prints each argument NUL-terminated, then its stdin.
 */
function runInShell(command: string): { args: string[]; stdin: string } {
  const script = `fake_claude() { printf '%s\\0' "$@"; printf '\\1'; cat; }\n${command}`
  const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', input: '', cwd: dir })
  const [args, stdin] = out.split('\u0001') as [string, string]
  return { args: args.split('\0').slice(0, -1), stdin }
}

describe('buildClaudeArgs', () => {
  it('builds a headless stream-json run with partial messages', () => {
    expect(buildClaudeArgs({ model: 'sonnet' })).toEqual(BASE)
  })

  it('adds every option in a fixed order, tools as separate arguments', () => {
    expect(
      buildClaudeArgs({
        executable: '/opt/claude/bin/claude',
        model: 'claude-sonnet-4-5',
        sessionId: 'a1b2',
        maxTurns: 7,
        allowedTools: ['Bash(git status)', 'Edit'],
        disallowedTools: ['Bash(rm *)'],
        systemPrompt: 'You are terse.',
        appendSystemPrompt: 'Answer in French.',
        permissionMode: 'dontAsk',
        extraArgs: ['--effort', 'high'],
      }),
    ).toEqual([
      '/opt/claude/bin/claude', '-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--model', 'claude-sonnet-4-5',
      '--resume=a1b2', '--max-turns', '7', '--allowedTools', 'Bash(git status)', 'Edit', '--disallowedTools', 'Bash(rm *)',
      '--system-prompt', 'You are terse.', '--append-system-prompt', 'Answer in French.', '--permission-mode', 'dontAsk', '--effort', 'high',
    ])
  })

  it('leaves out empty tool lists and passes maxTurns through as given', () => {
    expect(buildClaudeArgs({ model: 'sonnet', allowedTools: [], disallowedTools: [] })).toEqual(BASE)
    expect(buildClaudeArgs({ model: 'sonnet', maxTurns: 0 })).toEqual([...BASE, '--max-turns', '0'])
  })

  it('never puts a prompt in argv: -p takes no value and there is no prompt input', () => {
    // @ts-expect-error the prompt is not an input of the command builder
    const args = buildClaudeArgs({ model: 'sonnet', prompt: 'SECRET PROMPT' })
    expect(args.join(' ')).not.toContain('SECRET PROMPT')
    expect(args[args.indexOf('-p') + 1]).toBe('--output-format')
  })
})

describe('buildClaudeCommand', () => {
  it('quotes every argument so a POSIX shell passes it through unchanged', () => {
    const nasty = ['it\'s "quoted"', '$(touch pwned)', '`touch pwned`', 'a;b|c&d', 'new\nline', 'ünïcødé 🚀', '*', '']
    const command = buildClaudeCommand({ executable: 'fake_claude', model: 'sonnet', appendSystemPrompt: nasty.join(' '), extraArgs: nasty })
    expect(runInShell(command).args).toEqual([...BASE.slice(1), '--append-system-prompt', nasty.join(' '), ...nasty])
    expect(existsSync(join(dir, 'pwned'))).toBe(false)
  })

  it('without a prompt file, is the quoted argv alone (the prompt goes to stdin)', () => {
    expect(buildClaudeCommand({ model: 'sonnet' })).toBe(BASE.join(' '))
  })

  it('with a prompt file, redirects stdin from it and removes it before the CLI starts', () => {
    const promptFile = join(dir, `it's a "prompt" $(x).txt`)
    const prompt = 'line one\n$(touch pwned) `touch pwned`; "quotes" \'too\' ünïcødé\n'
    writeFileSync(promptFile, prompt)
    const command = buildClaudeCommand({ executable: 'fake_claude', model: 'sonnet', promptFile })
    expect(command).toBe(`{ rm -f '${promptFile.replace(/'/g, `'\\''`)}'; fake_claude ${BASE.slice(1).join(' ')}; } < '${promptFile.replace(/'/g, `'\\''`)}'`)
    const { args, stdin } = runInShell(command)
    expect(args).toEqual(BASE.slice(1))
    expect(stdin).toBe(prompt)
    expect(existsSync(promptFile), 'the prompt file is gone once the CLI started').toBe(false)
    expect(existsSync(join(dir, 'pwned'))).toBe(false)
  })
})
