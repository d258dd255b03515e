/**
 * What one simple command (its words, from `splitCommandLine`) runs, for the
 * policy judge: the command as written, the forms a deny rule should also
 * see (past `VAR=value`, `sudo`/`env`/`timeout`-style wrappers, `!`, compound
 * keywords and a program's directory), and the scripts it hands to another
 * shell (`sh -c`, `eval`). Best effort over common spellings, not a parser.
 */

/** One simple command, read for the policy. */
export interface SimpleCommand {
  /** The words joined by single spaces: what an allow rule must match. */
  exact: string
  /** `exact` and what it runs underneath (wrappers, assignments and keywords stripped): what deny and ask rules look at. */
  forms: string[]
  /** Its effect is not in its words: a compound-command keyword, a program named by a variable, `eval`, a shell given a script inline or on stdin. */
  opaque: boolean
  /** Scripts it gives to a shell (`sh -c '…'`, `eval …`), to judge as command lines of their own. */
  nested: string[]
}

/** Keywords of compound commands (`if`, loops, groups): the words after them are not one plain command. */
const COMPOUND_WORDS = new Set(['{', '}', 'if', 'then', 'elif', 'else', 'fi', 'do', 'done', 'while', 'until', 'for', 'case', 'esac', 'select', 'function', 'coproc', '[[', ']]'])
/** Programs that run the command after their own options, with the options that take a value (and how many plain values precede the command). */
const WRAPPERS: Readonly<Record<string, { valued: readonly string[]; values?: number }>> = {
  sudo: { valued: ['-u', '-g', '-h', '-p', '-C', '-D', '-r', '-t', '-U', '-T', '--user', '--group', '--host', '--prompt', '--chdir', '--role', '--type', '--other-user'] },
  doas: { valued: ['-u', '-C'] },
  env: { valued: ['-u', '-C', '-S', '--unset', '--chdir', '--split-string'] },
  nice: { valued: ['-n', '--adjustment'] },
  nohup: { valued: [] },
  timeout: { valued: ['-s', '-k', '--signal', '--kill-after'], values: 1 },
  stdbuf: { valued: ['-i', '-o', '-e'] },
  command: { valued: [] },
  builtin: { valued: [] },
  exec: { valued: ['-a'] },
  time: { valued: ['-f', '-o', '--format', '--output'] },
  xargs: { valued: ['-I', '-n', '-P', '-L', '-d', '-E', '-s', '-a', '--max-args', '--max-procs', '--max-lines', '--delimiter', '--arg-file', '--replace'] },
}
/** Shells: `-c` takes a script inline, no operand (or `-s`) reads one from stdin. */
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'yash', 'fish'])
/** `NAME=value` before a command. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/

/**
 * Read one simple command's words.
 * @example
 * ```ts
 * readSimpleCommand(['sudo', '-u', 'root', 'git', 'push']) // { exact: 'sudo -u root git push', forms: ['sudo -u root git push', 'git push'], opaque: false, nested: [] }
 * ```
 */
export function readSimpleCommand(words: readonly string[]): SimpleCommand {
  const exact = words.join(' ')
  const forms = new Set([exact])
  const nested: string[] = []
  let opaque = false
  let rest = [...words]
  for (let layer = 0; layer < 16 && rest.length > 0; layer++) {
    const first = rest[0]!
    const wrapper = WRAPPERS[basename(first)]
    if (ASSIGNMENT.test(first)) rest = rest.slice(1)
    else if (COMPOUND_WORDS.has(first)) {
      opaque = true
      rest = rest.slice(1)
    } else if (first === '!') rest = rest.slice(1)
    else if (wrapper) {
      // `env -S '…'` splits a string into the command: not in the words.
      if (basename(first) === 'env' && rest.some((w) => /^(-S|--split-string)/.test(w))) opaque = true
      rest = afterOptions(rest.slice(1), wrapper.valued, wrapper.values ?? 0)
    }
    else break
    if (rest.length > 0) forms.add(rest.join(' '))
  }
  const program = rest[0]
  if (program !== undefined) {
    const base = basename(program)
    if (base !== program) forms.add([base, ...rest.slice(1)].join(' '))
    if (program.includes('$')) opaque = true // the program is a variable's value
    if (base === 'eval') {
      opaque = true
      nested.push(rest.slice(1).join(' '))
    }
    if (SHELLS.has(base)) {
      const script = shellScript(rest.slice(1))
      if (script !== 'file') opaque = true
      if (script !== 'file' && script !== 'stdin') nested.push(script.inline)
    }
  }
  return { exact, forms: [...forms], opaque, nested }
}

/** The last path segment of a program (`/usr/bin/git` → `git`). */
function basename(word: string): string {
  return word.slice(word.lastIndexOf('/') + 1)
}

/** The words after a wrapper's options and leading values (`timeout 5s`). */
function afterOptions(words: string[], valued: readonly string[], values: number): string[] {
  let i = 0
  while (i < words.length && words[i]!.startsWith('-') && words[i] !== '-') {
    if (words[i] === '--') {
      i++
      break
    }
    i += valued.includes(words[i]!) ? 2 : 1
  }
  return words.slice(Math.min(i + values, words.length))
}

/** Where a shell invocation reads its script from. */
function shellScript(args: readonly string[]): { inline: string } | 'file' | 'stdin' {
  let inline = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--') return inline ? { inline: args[i + 1] ?? '' } : args[i + 1] === undefined ? 'stdin' : 'file'
    if (/^[-+]o$/.test(arg) || arg === '--rcfile' || arg === '--init-file') i++
    else if (/^-[A-Za-z]*s[A-Za-z]*$/.test(arg)) return 'stdin'
    else if (/^-[A-Za-z]*c[A-Za-z]*$/.test(arg)) inline = true
    else if (/^[-+]/.test(arg)) continue
    else return inline ? { inline: arg } : 'file'
  }
  return inline ? { inline: '' } : 'stdin'
}
