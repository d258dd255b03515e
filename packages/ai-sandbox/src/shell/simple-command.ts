/**
 * What one simple command (words from `splitCommandLine`) runs, for the policy
 * judge: the command as written, the forms deny and ask rules should also see,
 * and the command lines it hands on. Best effort over common spellings, not a
 * parser. Design notes: docs/design/shell.md
 */
import { plainWord } from './glob-word.js'
import { COMMAND_STRING_RUNNERS, FIND_EXEC_ACTIONS, SHELLS, STDIN_SHELLS_WITHOUT_COMMAND, WATCH_OPTIONS, WRAPPERS, commandOption, readOptions, shellScript, withoutGitGlobalOptions } from './known-commands.js'
import { packageRun } from './package-runners.js'
import { shellJoin } from './quote.js'

/** One simple command, read for the policy. */
export interface SimpleCommand {
  /** The words joined by single spaces: what an allow rule must match. */
  exact: string
  /** `exact` and what it runs underneath (wrappers, assignments and keywords stripped): what deny and ask rules look at. Glob words keep their marks (`glob-word.ts`). */
  forms: string[]
  /** Its effect is not in its words: a compound-command keyword, a program named by a variable, `eval`, a shell given a script inline or on stdin, a command string (`env -S`, `trap`, `script -c`). */
  opaque: boolean
  /** Command lines it hands on (`sh -c '…'`, `eval …`, `find -exec …`), to judge as lines of their own. */
  nested: string[]
}

/** Keywords of compound commands (`if`, loops, groups): the words after them are not one plain command. */
const COMPOUND_WORDS = new Set(['{', '}', 'if', 'then', 'elif', 'else', 'fi', 'do', 'done', 'while', 'until', 'for', 'case', 'esac', 'select', '[[', ']]'])
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
  const exact = words.map(plainWord).join(' ')
  const forms = new Set([words.join(' ')])
  const nested: string[] = []
  let opaque = false
  let rest = [...words]
  for (let layer = 0; layer < 16 && rest.length > 0; layer++) {
    const first = rest[0]!
    const base = basename(first)
    const wrapper = Object.hasOwn(WRAPPERS, base) ? WRAPPERS[base] : undefined
    const script = COMMAND_STRING_RUNNERS.has(base) ? commandOption(rest.slice(1)) : undefined
    const runner = packageRun(base, rest.slice(1))
    if (ASSIGNMENT.test(first) || first === '!') rest = rest.slice(1)
    else if (first === 'function' || first === 'coproc' || COMPOUND_WORDS.has(first)) {
      opaque = true
      // `function name { body`, `coproc name { body`: the body follows the name.
      const named = first === 'function' || (first === 'coproc' && rest.length > 2 && COMPOUND_WORDS.has(rest[2]!))
      rest = rest.slice(named ? 2 : 1)
    } else if (script !== undefined) {
      opaque = true
      nested.push(script)
      rest = []
    } else if (runner) {
      // `npx …`, `pnpm exec …`, `yarn dlx …`: the command it runs; a shell mode hands on a line and hides its effect.
      if (runner.script !== undefined) {
        opaque = true
        nested.push(runner.script)
      }
      rest = runner.command
    } else if (wrapper) {
      const { rest: after, values } = readOptions(rest.slice(1), wrapper)
      const split = base === 'env' ? values.find(([name]) => name === 'S' || name === 'split-string') : undefined
      if (split) {
        // `env -S 'git push' x` splits its value into the command, followed by the other words.
        opaque = true
        nested.push(`${split[1]} ${shellJoin(after)}`.trim())
        rest = []
      } else rest = after.slice(wrapper.operands ?? 0)
    } else break
    if (rest.length > 0) forms.add(rest.join(' '))
  }
  const program = rest[0]
  if (program !== undefined) {
    const base = basename(program)
    const args = rest.slice(1)
    if (base !== program) forms.add([base, ...args].join(' '))
    if (program.includes('$')) opaque = true // the program is a variable's value
    if (STDIN_SHELLS_WITHOUT_COMMAND.has(base)) opaque = true
    if (base === 'eval') {
      opaque = true
      nested.push(args.join(' '))
    }
    if (SHELLS.has(base)) {
      const script = shellScript(base, args)
      if (script !== 'file') opaque = true
      if (typeof script === 'object') nested.push(...script.inline)
    }
    if (base === 'trap') {
      const action = trapAction(args)
      if (action !== undefined) {
        opaque = true
        nested.push(action)
      }
    }
    if (base === 'watch') {
      opaque = true
      nested.push(readOptions(args, WATCH_OPTIONS).rest.join(' '))
    }
    if (base === 'find') nested.push(...findExecs(args))
    if (base === 'git') {
      const plain = withoutGitGlobalOptions([base, ...args])
      if (plain) forms.add(plain.join(' '))
    }
  }
  return { exact, forms: [...forms], opaque, nested }
}

/** The last path segment of a program (`/usr/bin/git` → `git`). */
function basename(word: string): string {
  return word.slice(word.lastIndexOf('/') + 1)
}

/** The action of `trap [-p|-l] [--] action signal…`, unless it resets (`-`) or there is none. */
function trapAction(args: readonly string[]): string | undefined {
  let i = 0
  while (i < args.length && /^-[lpP]$/.test(args[i]!)) i++
  if (args[i] === '--') i++
  const action = args[i]
  return action === undefined || action === '-' || action === '' ? undefined : action
}

/** The commands find runs for `-exec`/`-execdir`/`-ok`/`-okdir`, each up to `;` or `{} +`. */
function findExecs(args: readonly string[]): string[] {
  const commands: string[] = []
  for (let i = 0; i < args.length; i++) {
    if (!FIND_EXEC_ACTIONS.has(args[i]!)) continue
    const words: string[] = []
    for (i++; i < args.length && args[i] !== ';' && !(args[i] === '+' && words.at(-1) === '{}'); i++) words.push(args[i]!)
    if (words.length > 0) commands.push(shellJoin(words))
  }
  return commands
}
