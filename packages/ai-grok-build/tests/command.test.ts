/** The `grok agent … stdio` command line and the prompt. */
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildGrokArgs, buildGrokCommand } from '../src/index.js'

describe('buildGrokArgs / buildGrokCommand', () => {
  it('puts the model, the approve flag and extra args before the stdio transport word', () => {
    expect(buildGrokArgs({ model: 'grok-4.5' })).toEqual(['agent', '--model', 'grok-4.5', 'stdio'])
    expect(buildGrokArgs({ model: 'grok-4.5', autoApprove: true, extraArgs: ['--verbose'] })).toEqual(['agent', '--model', 'grok-4.5', '--auto-approve', '--verbose', 'stdio'])
    expect(buildGrokArgs({ model: 'm', autoApprove: true, approveFlag: '--yolo' })).toContain('--yolo')
  })

  it('quotes an explicit executable and otherwise prefers $HOME/.grok/bin/grok over PATH', () => {
    expect(buildGrokCommand({ model: 'grok-4.5', executable: "/opt/my grok/grok" })).toBe("exec '/opt/my grok/grok' agent --model grok-4.5 stdio")
    const dir = mkdtempSync(join(tmpdir(), 'grok-command-'))
    try {
      const home = join(dir, 'home')
      const bin = join(dir, 'bin')
      mkdirSync(join(home, '.grok', 'bin'), { recursive: true })
      mkdirSync(bin)
      writeFileSync(join(bin, 'grok'), '#!/bin/sh\necho "path $*"\n')
      chmodSync(join(bin, 'grok'), 0o755)
      const run = () => execFileSync('sh', ['-c', buildGrokCommand({ model: "it's" })], { env: { HOME: home, PATH: `${bin}:/usr/bin:/bin` }, encoding: 'utf8' })
      expect(run()).toBe("path agent --model it's stdio\n")
      writeFileSync(join(home, '.grok', 'bin', 'grok'), '#!/bin/sh\necho "home $*"\n')
      chmodSync(join(home, '.grok', 'bin', 'grok'), 0o755)
      expect(run()).toBe("home agent --model it's stdio\n")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
