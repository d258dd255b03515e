/**
 * One simple command read for the policy: the exact form allow rules match,
 * the forms deny rules also see, and what makes it opaque.
 */
import { describe, expect, it } from 'vitest'
import { readSimpleCommand } from '../../src/shell/simple-command.js'

const read = (line: string) => readSimpleCommand(line.split(' '))

describe('readSimpleCommand', () => {
  it('keeps a plain command as it is', () => {
    expect(read('git push origin')).toEqual({ exact: 'git push origin', forms: ['git push origin'], opaque: false, nested: [] })
  })

  it('sees past assignments, wrappers with their options, ! and a directory', () => {
    expect(read('A=1 B+=2 git push').forms).toEqual(['A=1 B+=2 git push', 'B+=2 git push', 'git push'])
    expect(read('sudo -u root -E git push').forms).toContain('git push')
    expect(read('env -i A=1 git push').forms).toContain('git push')
    expect(read('timeout -s KILL 5s git push').forms).toContain('git push')
    expect(read('nice -n 5 nohup git push').forms).toContain('git push')
    expect(read('xargs -n 1 git push').forms).toContain('git push')
    expect(read('! git push').forms).toContain('git push')
    expect(read('/usr/bin/git push').forms).toEqual(['/usr/bin/git push', 'git push'])
    for (const line of ['sudo git push', 'A=1 git push', '/usr/bin/git push']) expect(read(line).opaque, line).toBe(false)
  })

  it('marks compound keywords, variable programs, eval and inline or stdin shells opaque', () => {
    expect(read('if git push')).toMatchObject({ opaque: true, forms: ['if git push', 'git push'] })
    expect(read('$CMD -x').opaque).toBe(true)
    expect(read('eval git push')).toMatchObject({ opaque: true, nested: ['git push'] })
    expect(readSimpleCommand(['bash', '-lc', 'ls && git push'])).toMatchObject({ opaque: true, nested: ['ls && git push'] })
    expect(readSimpleCommand(['sh', '-e', '-c', 'rm x', 'arg0']), 'every operand of an inline shell is judged').toMatchObject({ opaque: true, nested: ['rm x', 'arg0'] })
    expect(readSimpleCommand(['sudo', 'sh', '-c', 'rm x'])).toMatchObject({ opaque: true, nested: ['rm x'] })
    expect(read('bash').opaque).toBe(true)
    expect(read('bash -s arg').opaque).toBe(true)
    expect(readSimpleCommand(['env', '-S', 'rm -rf x']).opaque).toBe(true)
  })

  it('leaves a shell running a named script file to the rules', () => {
    expect(read('bash -o pipefail ./build.sh')).toEqual({ exact: 'bash -o pipefail ./build.sh', forms: ['bash -o pipefail ./build.sh'], opaque: false, nested: [] })
  })
})
