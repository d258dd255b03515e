/**
 * The command builder: argv for a headless JSONL run, the prompt never in
 * argv (always `-`: stdin), resume as `exec resume <id>`, TOML values for
 * `-c`, and a prompt-file redirect that a real POSIX shell runs as intended
 * (quoting checked by executing the built command with `/bin/sh`).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { buildCodexArgs, buildCodexCommand, codexConfigFlag, tomlString, tomlValue } from '../src/index.js'

const BASE = ['codex', 'exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5']
const dir = mkdtempSync(join(tmpdir(), 'codex-command-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Run a built command in /bin/sh with `fake_codex` defined as a shell function that prints each argument NUL-terminated, then its stdin. */
function runInShell(command: string): { args: string[]; stdin: string } {
  const script = `fake_codex() { printf '%s\\0' "$@"; printf '\\1'; cat; }\n${command}`
  const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', input: '', cwd: dir })
  const [args, stdin] = out.split('\u0001') as [string, string]
  return { args: args.split('\0').slice(0, -1), stdin }
}

describe('buildCodexArgs', () => {
  it('builds a headless JSONL run that reads the prompt from stdin', () => {
    expect(buildCodexArgs({ model: 'gpt-5.5' })).toEqual([...BASE, '-'])
  })

  it('resumes with `exec resume`, the thread id as the last positional before `-`', () => {
    expect(buildCodexArgs({ model: 'gpt-5.5', sessionId: '01a226a8-f40c-7361-a35a-54f96508f303' })).toEqual(['codex', 'exec', 'resume', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', '01a226a8-f40c-7361-a35a-54f96508f303', '-'])
  })

  it('adds every option in a fixed order', () => {
    expect(
      buildCodexArgs({
        executable: '/opt/codex/codex',
        model: 'gpt-5.5',
        bypassSandbox: true,
        config: ['sandbox_mode="read-only"', 'web_search="disabled"'],
        trust: true,
        extraArgs: ['--ephemeral'],
      }),
    ).toEqual(['/opt/codex/codex', 'exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', '--dangerously-bypass-approvals-and-sandbox', '-c', 'sandbox_mode="read-only"', '-c', 'web_search="disabled"', '--trust', '--ephemeral', '-'])
  })

  it('never puts a prompt in argv: there is no prompt input and the last argument is `-`', () => {
    // @ts-expect-error the prompt is not an input of the command builder
    const args = buildCodexArgs({ model: 'gpt-5.5', prompt: 'SECRET PROMPT' })
    expect(args.join(' ')).not.toContain('SECRET PROMPT')
    expect(args.at(-1)).toBe('-')
  })
})

describe('TOML values for -c', () => {
  it('quotes strings as TOML basic strings and writes scalars and arrays inline', () => {
    expect(codexConfigFlag('sandbox_mode', 'read-only')).toBe('sandbox_mode="read-only"')
    expect(codexConfigFlag('model_providers.fake.request_max_retries', 0)).toBe('model_providers.fake.request_max_retries=0')
    expect(codexConfigFlag('analytics.enabled', false)).toBe('analytics.enabled=false')
    expect(tomlValue(['a', 1, [true]])).toBe('["a", 1, [true]]')
  })

  it('escapes quotes, backslashes and control characters, and replaces lone surrogates', () => {
    expect(tomlString('say "hi" \\ there\nnext\ttab\u0001\u007f')).toBe('"say \\"hi\\" \\\\ there\\nnext\\ttab\\u0001\\u007f"')
    expect(tomlString('ünïcødé 🚀')).toBe('"ünïcødé 🚀"')
    expect(tomlString('bad \ud800 end')).toBe('"bad \ufffd end"')
  })
})

describe('buildCodexCommand', () => {
  it('quotes every argument so a POSIX shell passes it through unchanged', () => {
    const nasty = ['it\'s "quoted"', '$(touch pwned)', '`touch pwned`', 'a;b|c&d', 'new\nline', 'ünïcødé 🚀', '*', '']
    const command = buildCodexCommand({ executable: 'fake_codex', model: 'gpt-5.5', config: [codexConfigFlag('developer_instructions', nasty.join(' '))], extraArgs: nasty })
    expect(runInShell(command).args).toEqual([...BASE.slice(1), '-c', `developer_instructions=${tomlString(nasty.join(' '))}`, ...nasty, '-'])
    expect(existsSync(join(dir, 'pwned'))).toBe(false)
  })

  it('without a prompt file, is the quoted argv alone (the prompt goes to stdin)', () => {
    expect(buildCodexCommand({ model: 'gpt-5.5' })).toBe([...BASE, '-'].join(' '))
  })

  it('with a prompt file, redirects stdin from it and removes it before the CLI starts', () => {
    const promptFile = join(dir, `it's a "prompt" $(x).txt`)
    const prompt = 'line one\n$(touch pwned) `touch pwned`; "quotes" \'too\' ünïcødé\n'
    writeFileSync(promptFile, prompt)
    const command = buildCodexCommand({ executable: 'fake_codex', model: 'gpt-5.5', promptFile })
    const { args, stdin } = runInShell(command)
    expect(args).toEqual([...BASE.slice(1), '-'])
    expect(stdin).toBe(prompt)
    expect(existsSync(promptFile), 'the prompt file is gone once the CLI started').toBe(false)
    expect(existsSync(join(dir, 'pwned'))).toBe(false)
  })
})
