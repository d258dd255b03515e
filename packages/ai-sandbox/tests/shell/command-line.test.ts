/**
 * The command-line reader behind `evaluateCommand`: simple commands split at
 * control operators as bash splits them (quotes, escapes, comments, newlines,
 * line continuations), substitution bodies surfaced, and every construct it
 * cannot see into marked opaque.
 */
import { describe, expect, it } from 'vitest'
import { splitCommandLine } from '../../src/shell/command-line.js'

const commands = (line: string) => splitCommandLine(line).commands

describe('splitCommandLine', () => {
  it('splits at ; && || | |& & and unquoted newlines', () => {
    expect(commands('a 1; b && c || d | e |& f & g\nh')).toEqual([['a', '1'], ['b'], ['c'], ['d'], ['e'], ['f'], ['g'], ['h']])
    expect(commands('a;b&&c')).toEqual([['a'], ['b'], ['c']])
    expect(splitCommandLine('a; b').opaque).toBe(false)
  })

  it('keeps quoted and escaped operators, newlines and # inside words', () => {
    expect(commands(`echo "a; b" 'c && d' e\\;f "x\ny"`)).toEqual([['echo', 'a; b', 'c && d', 'e;f', 'x\ny']])
    expect(commands("echo $'a\\'; b'")).toEqual([['echo', "a'; b"]])
    expect(commands('git log --format=#%h; rm x')).toEqual([['git', 'log', '--format=#%h'], ['rm', 'x']])
  })

  it('drops comments up to the end of their line only', () => {
    expect(commands('ls # a; b\nrm x')).toEqual([['ls'], ['rm', 'x']])
    expect(commands('# only a comment')).toEqual([])
  })

  it('joins line continuations', () => {
    expect(commands('rm -rf \\\n ~')).toEqual([['rm', '-rf', '~']])
    expect(commands('echo "a\\\nb"')).toEqual([['echo', 'ab']])
  })

  it('leaves variables as written', () => {
    expect(commands('rm -rf "$HOME" ${TMP}')).toEqual([['rm', '-rf', '$HOME', '$TMP']])
  })

  it('leaves redirections out of the words and marks writes to files opaque', () => {
    expect(splitCommandLine('ls -l 2>&1 >/dev/null < in.txt | wc')).toEqual({ commands: [['ls', '-l'], ['wc']], hidden: [], opaque: false })
    for (const line of ['ls > out', 'ls >> out', 'ls >| out', 'ls &> out', 'ls &>> out', 'ls <> f', 'ls >&out', 'ls 3>out']) {
      expect(splitCommandLine(line), line).toEqual({ commands: [['ls']], hidden: [], opaque: true })
    }
  })

  it('surfaces substitution bodies, nested and quoted, and marks the line opaque', () => {
    expect(splitCommandLine('echo $(a 1) "$(b ")")" `c` <(d) >(e)')).toEqual({
      commands: [['echo', '__substitution__', '__substitution__', '__substitution__', '__substitution__', '__substitution__']],
      hidden: ['a 1', 'b ")"', 'c', 'd', 'e'],
      opaque: true,
    })
    expect(splitCommandLine('echo $(x $(y))').hidden).toEqual(['x $(y)'])
    expect(splitCommandLine("echo '$(x)' '`y`'")).toEqual({ commands: [['echo', '$(x)', '`y`']], hidden: [], opaque: false })
  })

  it('skips here-document bodies, surfacing their substitutions unless the delimiter is quoted', () => {
    expect(splitCommandLine('cat <<EOF > f && ls\nrm -rf ~ $(id)\nEOF\nwc')).toEqual({ commands: [['cat'], ['ls'], ['wc']], hidden: ['id'], opaque: true })
    expect(splitCommandLine("cat <<-'END'\n$(id)\n\tEND\nwc")).toEqual({ commands: [['cat'], ['wc']], hidden: [], opaque: true })
    expect(splitCommandLine('grep x <<< "a b"')).toEqual({ commands: [['grep', 'x']], hidden: [], opaque: false })
  })

  it('marks subshells, unterminated quotes and unreadable lines opaque', () => {
    expect(splitCommandLine('(cd x && rm y)')).toEqual({ commands: [['cd', 'x'], ['rm', 'y']], hidden: [], opaque: true })
    expect(splitCommandLine('ls "; rm y').opaque).toBe(true)
    expect(splitCommandLine("ls '; rm y").opaque).toBe(true)
    expect(splitCommandLine('echo $(unclosed').opaque).toBe(true)
    expect(splitCommandLine('echo ${}')).toEqual({ commands: [['echo', '${}']], hidden: [], opaque: true })
  })
})
