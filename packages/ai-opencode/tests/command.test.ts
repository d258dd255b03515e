/**
 * The command builder: argv for a headless JSON run, the prompt never in
 * argv, and a prompt-file redirect that a real POSIX shell runs as intended
 * (quoting checked by executing the built command with `/bin/sh`).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { buildOpencodeArgs, buildOpencodeCommand } from '../src/index.js'

const MODEL = 'anthropic/claude-sonnet-4-5'
const BASE = ['opencode', 'run', '--format', 'json', '--model', MODEL]
const dir = mkdtempSync(join(tmpdir(), 'opencode-command-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * Run a built command in /bin/sh with `fake_opencode` defined as a shell
 * function that prints each argument NUL-terminated, then its stdin.
 */
function runInShell(command: string): { args: string[]; stdin: string } {
  const script = `fake_opencode() { printf '%s\\0' "$@"; printf '\\1'; cat; }\n${command}`
  const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', input: '', cwd: dir })
  const [args, stdin] = out.split('\u0001') as [string, string]
  return { args: args.split('\0').slice(0, -1), stdin }
}

describe('buildOpencodeArgs', () => {
  it('builds a headless run that prints JSON events', () => {
    expect(buildOpencodeArgs({ model: MODEL })).toEqual(BASE)
  })

  it('adds every option in a fixed order', () => {
    expect(buildOpencodeArgs({ executable: '/opt/opencode/opencode', model: MODEL, title: 'tanstack t-1', agent: 'plan', variant: 'high', thinking: true, extraArgs: ['--print-logs'] })).toEqual([
      '/opt/opencode/opencode', 'run', '--format', 'json', '--model', MODEL, '--title=tanstack t-1', '--agent', 'plan', '--variant', 'high', '--thinking', '--print-logs',
    ])
  })

  it('resumes with --session and then gives no title (a title only names a new session)', () => {
    expect(buildOpencodeArgs({ model: MODEL, sessionId: 'ses_abc', title: 'ignored' })).toEqual([...BASE, '--session', 'ses_abc'])
  })

  it('passes a title as one --title=<text> argument, so a leading dash is not read as a flag', () => {
    expect(buildOpencodeArgs({ model: MODEL, title: '--dangerous' })).toEqual([...BASE, '--title=--dangerous'])
  })

  it('never puts a prompt in argv: there is no prompt input', () => {
    // @ts-expect-error the prompt is not an input of the command builder
    const args = buildOpencodeArgs({ model: MODEL, prompt: 'SECRET PROMPT' })
    expect(args.join(' ')).not.toContain('SECRET PROMPT')
  })
})

describe('buildOpencodeCommand', () => {
  it('quotes every argument so a POSIX shell passes it through unchanged', () => {
    const nasty = ['it\'s "quoted"', '$(touch pwned)', '`touch pwned`', 'a;b|c&d', 'new\nline', 'ünïcødé 🚀', '*', '']
    const command = buildOpencodeCommand({ executable: 'fake_opencode', model: MODEL, title: nasty.join(' '), extraArgs: nasty })
    expect(runInShell(command).args).toEqual([...BASE.slice(1), `--title=${nasty.join(' ')}`, ...nasty])
    expect(existsSync(join(dir, 'pwned'))).toBe(false)
  })

  it('without a prompt file, is the quoted argv alone (the prompt goes to stdin)', () => {
    expect(buildOpencodeCommand({ model: MODEL })).toBe(BASE.join(' '))
  })

  it('with a prompt file, redirects stdin from it and removes it before the CLI starts', () => {
    const promptFile = join(dir, `it's a "prompt" $(x).txt`)
    const prompt = 'line one\n$(touch pwned) `touch pwned`; "quotes" \'too\' ünïcødé\n'
    writeFileSync(promptFile, prompt)
    const command = buildOpencodeCommand({ executable: 'fake_opencode', model: MODEL, promptFile })
    const quoted = `'${promptFile.replace(/'/g, `'\\''`)}'`
    expect(command).toBe(`{ rm -f ${quoted}; fake_opencode ${BASE.slice(1).join(' ')}; } < ${quoted}`)
    const { args, stdin } = runInShell(command)
    expect(args).toEqual(BASE.slice(1))
    expect(stdin).toBe(prompt)
    expect(existsSync(promptFile), 'the prompt file is gone once the CLI started').toBe(false)
    expect(existsSync(join(dir, 'pwned'))).toBe(false)
  })
})
