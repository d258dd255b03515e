/**
 * What the policy judge knows about particular programs, as tables: wrappers,
 * shells' option forms, programs that run a command string, git's global
 * options and rm's flags. Knowledge only, no verdicts. Invariant: these tables
 * only add forms for deny and ask rules; nothing makes an allow rule match more.
 * Design notes: docs/design/shell.md
 */

/** How a program's options are read: getopt style, stopping at the first operand. */
export interface OptionSpec {
  /** Short option letters that take a value (`-u root`, `-uroot`). */
  short?: string
  /** Long options, without `--`, that take a value (`--user root`, `--user=root`); a unique prefix also counts. */
  long?: readonly string[]
}

/** A program that runs the command after its options. */
export interface WrapperSpec extends OptionSpec {
  /** Plain operands between the options and the command (`timeout 5s`, `taskset 0x3`, `flock /tmp/l`). */
  operands?: number
}

/** Wrappers; the command follows their options and operands. */
export const WRAPPERS: Readonly<Record<string, WrapperSpec>> = {
  sudo: { short: 'ugChpDrtUTR', long: ['user', 'group', 'host', 'prompt', 'chdir', 'role', 'type', 'other-user', 'close-from', 'command-timeout', 'chroot'] },
  doas: { short: 'uC' },
  env: { short: 'uCS', long: ['unset', 'chdir', 'split-string'] },
  nice: { short: 'n', long: ['adjustment'] },
  nohup: {},
  timeout: { short: 'sk', long: ['signal', 'kill-after'], operands: 1 },
  stdbuf: { short: 'ioe', long: ['input', 'output', 'error'] },
  command: {},
  builtin: {},
  exec: { short: 'a' },
  time: { short: 'fo', long: ['format', 'output'] },
  xargs: { short: 'InPLdEsa', long: ['max-args', 'max-procs', 'max-lines', 'delimiter', 'arg-file', 'max-chars', 'process-slot-var'] },
  setsid: {},
  flock: { short: 'wE', long: ['timeout', 'wait', 'conflict-exit-code'], operands: 1 },
  ionice: { short: 'cnpPu', long: ['class', 'classdata', 'pid', 'pgid', 'uid'] },
  taskset: { operands: 1 },
  chrt: { short: 'TPD', long: ['sched-runtime', 'sched-period', 'sched-deadline'], operands: 1 },
  unshare: { short: 'SGRw', long: ['setuid', 'setgid', 'root', 'wd', 'map-user', 'map-group', 'map-users', 'map-groups', 'propagation', 'setgroups'] },
  chroot: { long: ['userspec', 'groups'], operands: 1 },
  busybox: {},
}

/** Programs that run a command string given with `-c`/`--command` (anywhere among their words). */
export const COMMAND_STRING_RUNNERS = new Set(['script', 'su', 'runuser', 'flock'])
/** Of those, the ones that start a shell reading stdin when given no `-c`. */
export const STDIN_SHELLS_WITHOUT_COMMAND = new Set(['script', 'su', 'runuser'])
/** `watch [options] command…`: the words after the options are joined and run by `sh -c`. */
export const WATCH_OPTIONS: OptionSpec = { short: 'nq', long: ['interval', 'equexit'] }
/** find's actions that run the command after them, up to `;` (or `{} +`). */
export const FIND_EXEC_ACTIONS = new Set(['-exec', '-execdir', '-ok', '-okdir'])

/** Shells: `-c` takes a script inline, no operand (or `-s`) reads one from stdin. */
export const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'yash', 'fish'])
/** Long shell options that take the next word as their value (bash; fish). Letters `o`/`O` do too (`-o pipefail`, `+O extglob`). */
const SHELL_VALUED_LONG = new Set(['--rcfile', '--init-file', '--init-command'])

/** git's global options that take a value (`git -C dir`, `git --git-dir x`, `--git-dir=x`). */
const GIT_VALUED = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--attr-source', '--list-cmds'])
/** rm's flags, each spelling mapped to one name; other flags keep their own spelling. */
const RM_FLAGS: Readonly<Record<string, string>> = { R: 'r', recursive: 'r', force: 'f', dir: 'd', verbose: 'v', interactive: 'i' }
/** Programs whose flags a deny or ask rule names as a set (order, spelling and grouping ignored). */
const FLAG_SETS: Readonly<Record<string, Readonly<Record<string, string>>>> = { rm: RM_FLAGS }

/**
 * Read a wrapper's options: the words after them, every option's value, and
 * the options that took none (short letters, long names without `--`).
 * @example
 * ```ts
 * readOptions(['-E', '-u', 'root', 'git', 'push'], WRAPPERS.sudo!) // { rest: ['git', 'push'], values: [['u', 'root']], flags: ['E'] }
 * ```
 */
export function readOptions(words: readonly string[], spec: OptionSpec): { rest: string[]; values: [string, string][]; flags: string[] } {
  const values: [string, string][] = []
  const flags: string[] = []
  let i = 0
  for (; i < words.length; i++) {
    const word = words[i]!
    if (word === '--') {
      i++
      break
    }
    if (word === '-') continue // env's old spelling of -i; a no-op elsewhere
    if (!word.startsWith('-')) break
    if (word.startsWith('--')) {
      const [name, inline] = splitLong(word.slice(2))
      const valued = (spec.long ?? []).find((long) => long === name || (name.length >= 2 && long.startsWith(name)))
      if (valued !== undefined) values.push([valued, inline ?? words[++i] ?? ''])
      else flags.push(name)
      continue
    }
    for (let k = 1; k < word.length; k++) {
      if (!(spec.short ?? '').includes(word[k]!)) {
        flags.push(word[k]!)
        continue
      }
      values.push([word[k]!, k + 1 < word.length ? word.slice(k + 1) : (words[++i] ?? '')])
      break
    }
  }
  return { rest: words.slice(i), values, flags }
}

function splitLong(body: string): [string, string | undefined] {
  const eq = body.indexOf('=')
  return eq === -1 ? [body, undefined] : [body.slice(0, eq), body.slice(eq + 1)]
}

/** The value of a `-c`/`--command` option anywhere among the words (`script -qc '…'`, `su -c '…' user`), if any. */
export function commandOption(words: readonly string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    if (word === '--command') return words[i + 1] ?? ''
    if (word.startsWith('--command=')) return word.slice('--command='.length)
    const short = /^-[A-Za-z]*?c(.*)$/.exec(word)
    if (short) return short[1] !== '' ? short[1] : (words[i + 1] ?? '')
  }
  return undefined
}

/**
 * Where a shell invocation reads its script from: inline (`-c`, after any
 * option forms: `-O extglob`, `+o posix`, `-lc`, `--norc`), a named file, or
 * stdin. For an inline script every operand is returned: the one the shell
 * runs is among them, whatever an option's arity, and judging the others
 * (arguments, `$0`) as command lines can only add deny or ask verdicts.
 * @example
 * ```ts
 * shellScript('bash', ['-O', 'extglob', '-c', 'git push']) // { inline: ['extglob', 'git push'] }
 * ```
 */
export function shellScript(shell: string, args: readonly string[]): { inline: string[] } | 'file' | 'stdin' {
  const operands: string[] = []
  let inline = false
  let stdin = false
  let firstOperand: number | undefined
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (firstOperand !== undefined || arg === '-' || !/^[-+]./.test(arg)) {
      firstOperand ??= arg === '-' || arg === '--' ? i + 1 : i
      if (arg !== '-' && arg !== '--') operands.push(arg)
    } else if (arg === '--') firstOperand = i + 1
    else if (arg.startsWith('--')) {
      const [name, value] = splitLong(arg)
      if (name === '--command' || (shell === 'fish' && name === '--init-command')) inline = true
      if (value !== undefined) operands.push(value)
      else if (SHELL_VALUED_LONG.has(name)) operands.push(args[++i] ?? '')
    } else {
      const letters = arg.slice(1)
      if (arg.startsWith('-') && (letters.includes('c') || (shell === 'fish' && letters.includes('C')))) inline = true
      if (arg.startsWith('-') && letters.includes('s')) stdin = true
      const valued = shell === 'fish' ? 0 : (letters.match(/[oO]/g)?.length ?? 0)
      for (let k = 0; k < valued; k++) operands.push(args[++i] ?? '')
    }
  }
  if (inline) return { inline: operands }
  return stdin || firstOperand === undefined || firstOperand >= args.length ? 'stdin' : 'file'
}

/**
 * A git command with its global options removed (`git -C . --no-pager push`
 * → `git push`), or undefined when it has none. Every option before the
 * subcommand is global; those in `GIT_VALUED` take the next word.
 * @example
 * ```ts
 * withoutGitGlobalOptions(['git', '-c', 'x.y=1', 'push']) // ['git', 'push']
 * ```
 */
export function withoutGitGlobalOptions(words: readonly string[]): string[] | undefined {
  let i = 1
  while (i < words.length && words[i]!.startsWith('-')) {
    if (words[i] === '--') {
      i++
      break
    }
    i += GIT_VALUED.has(words[i]!) ? 2 : 1
  }
  return i === 1 ? undefined : [words[0]!, ...words.slice(i)]
}

/**
 * Whether a rule names a flag set the command has, for programs with a
 * table in `FLAG_SETS` (rm): the rule's flags, in any spelling or grouping,
 * are all among the command's (`rm -rf *` covers `rm -r -f x`,
 * `rm --recursive --force x`, `rm -Rfv x`, `rm x -fr`), and the rule's other
 * words match the command's operands (via `operandsMatch`).
 * @example
 * ```ts
 * flagsCover('rm -rf *', 'rm -f -R /tmp/x', (a, b) => a === '*' || a === b) // true
 * ```
 */
export function flagsCover(rule: string, form: string, operandsMatch: (rule: string, operands: string) => boolean): boolean {
  const ruleWords = rule.trim().split(/\s+/)
  const formWords = form.split(' ')
  const table = FLAG_SETS[ruleWords[0]!]
  if (table === undefined || formWords[0] !== ruleWords[0]) return false
  const wanted = flagsOf(ruleWords.slice(1), table, true)
  const have = flagsOf(formWords.slice(1), table, false)
  if (![...wanted.flags].every((flag) => have.flags.has(flag))) return false
  return operandsMatch(wanted.operands.join(' '), have.operands.join(' '))
}

/** A command's flags (GNU order: anywhere before `--`) and operands. */
function flagsOf(words: readonly string[], table: Readonly<Record<string, string>>, isRule: boolean): { flags: Set<string>; operands: string[] } {
  const flags = new Set<string>()
  const operands: string[] = []
  let ended = false
  for (const word of words) {
    const flag = !ended && /^-./.test(word) && !(isRule && /[*?]/.test(word))
    if (!ended && word === '--') ended = true
    else if (!flag) operands.push(word)
    else if (word.startsWith('--')) flags.add(table[splitLong(word.slice(2))[0]] ?? word)
    else for (const letter of word.slice(1)) flags.add(table[letter] ?? letter)
  }
  return { flags, operands }
}
